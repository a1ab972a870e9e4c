"""One loader reads every prompt file: shipped names with or without the suffix, a user's own file
by path where a run allows it, and one line naming the choices otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.censorship.prompts import PROMPTS_DIR as AUDIT_PROMPTS
from audit.epistemic.systems.llm import PROMPTS_DIR as EPISTEMIC_PROMPTS
from audit.errors import UserError
from audit.prompt_files import read_prompt, shipped


def test_a_shipped_name_reads_the_same_with_or_without_its_suffix() -> None:
    for directory in (AUDIT_PROMPTS, EPISTEMIC_PROMPTS):
        name = shipped(directory)[0]
        assert read_prompt(directory, name) == read_prompt(directory, name.removesuffix(".txt"))
        assert read_prompt(directory, name) == (directory / name).read_text(encoding="utf-8")


def test_an_own_file_is_read_only_where_the_run_allows_it(tmp_path: Path) -> None:
    own = tmp_path / "mine.txt"
    own.write_text("Answer only from the facts.\n", encoding="utf-8")
    assert read_prompt(EPISTEMIC_PROMPTS, str(own), own_files=True) == "Answer only from the facts.\n"
    with pytest.raises(UserError, match="Unknown prompt"):
        read_prompt(AUDIT_PROMPTS, str(own))  # the audit's prompts are the tool's, not a path


def test_unknown_names_and_missing_files_are_one_line_with_the_choices(tmp_path: Path) -> None:
    with pytest.raises(UserError) as unknown:
        read_prompt(EPISTEMIC_PROMPTS, "sytem.txt")
    assert "\n" not in str(unknown.value) and shipped(EPISTEMIC_PROMPTS)[0] in str(unknown.value)
    with pytest.raises(UserError, match="does not exist"):
        read_prompt(EPISTEMIC_PROMPTS, str(tmp_path / "gone.txt"), own_files=True)
