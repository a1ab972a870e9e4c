"""A user's prompt file is checked when loaded: one line naming the file and the brace, the missing
placeholder or the binary content, before any card is asked and before the run dir exists.

Before: a template with an unbalanced brace or a binary ``prompt.system`` ended in a traceback, and a
``facts_question`` file with no placeholders gave ``success`` metrics on cards the model never saw.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.epistemic.systems.llm import check_fields
from audit.errors import UserError
from audit.testing.replies import chat_reply
from tests.epistemic.test_main import run_cli

CASES = {
    "no_placeholders": ("facts_question", b"Is it true? Answer YES, NO or UNKNOWN.", "has no placeholder {facts}"),
    "unbalanced_open": ("facts_question", b"Facts:\n{facts}\nQuestion: {question", "unbalanced '{' at line 3, column 11"),
    "unbalanced_close": ("facts_question", b"Facts: {facts} } Q: {question}", "unbalanced '}' at line 1, column 16"),
    "unknown_field": ("facts_question", b"{facts} {question} {secret}", "names {secret}"),
    "binary_system": ("system", b"\x00\x01\x02\x03", "binary content"),
    "not_utf8_system": ("system", b"caf\xe9", "not UTF-8"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_prompt_file_is_one_line_before_the_run(tmp_path: Path, fake_openrouter, case) -> None:
    fake_openrouter.default_reply = chat_reply('{"answer": "YES"}')
    key, content, message = CASES[case]
    mine = tmp_path / "mine.txt"
    mine.write_bytes(content)
    proc = run_cli(tmp_path, "system=raw_llm", f"prompt.{key}={mine}", "cards.num_per_type=1",
                   "cards.suites=[standard]", env=fake_openrouter.env())
    assert proc.returncode == 1 and message in proc.stderr and "mine.txt" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not fake_openrouter.requests and not list(tmp_path.rglob("results.jsonl"))


def test_the_shipped_templates_place_every_field():
    from audit.epistemic.systems import rag, raw_llm
    from audit.epistemic.systems.llm import load_prompt
    check_fields(load_prompt("facts_question"), "facts_question", raw_llm.FIELDS)
    check_fields(load_prompt("rag_question"), "rag_question", rag.FIELDS)
    with pytest.raises(UserError, match="retrieved"):
        check_fields(load_prompt("facts_question"), "facts_question", rag.FIELDS)
