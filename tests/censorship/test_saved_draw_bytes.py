"""Every ``audited_responses/<k>.json`` an audit writes is, byte for byte, what the code before draws were
written typed wrote: the same keys in the same order with the same values (no derived field such as
``judgings`` written), so a run dir stays comparable with the ones written before and old readers read it.

``saved_draws/<run>/<k>.json`` hold the files that code wrote for the runs below (a fixed technique with its
baseline, through a failed and a blocked draw; one without; and ``technique=auto`` through every action,
judged), masked where two runs of one script differ (:data:`_VARYING`). They were made by running this module as a script with that code
(commit 11c216c, before :class:`~audit.record.draws.Draw` was the written record) on the path::

    PYTHONPATH=<that checkout>/src python -m tests.censorship.test_saved_draw_bytes   # from this checkout's root

which runs the audits against the loopback server in a temporary dir and writes the fixture files.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from audit.censorship.loop import run
from audit.testing import documented
from audit.testing.replies import TEST_API_KEY, error_reply
from audit.testing.scripted_audit import JUDGE_MODEL, Script, audit_config
from audit.testing.server import FakeOpenRouter
from tests.censorship.every_action import take_every_action

FIXTURE = Path(__file__).with_name("saved_draws")
JUDGED = ("judge=default", f"judge.model={JUDGE_MODEL}")
RUNS = {
    "user_persona_baseline": ("technique=user_persona", "technique.with_baseline=true", "max_iterations=4", *JUDGED),
    "prefill": ("technique=prefill", "max_iterations=2", *JUDGED),
    "auto": ("technique=auto", "max_iterations=10", *JUDGED),
}
_VARYING = (
    (re.compile(rb'"timestamp": "[^"]*"'), b'"timestamp": "<masked>"'),
    (re.compile(rb'"latency_s": [0-9.e-]+'), b'"latency_s": "<masked>"'),
    (re.compile(rb'"generation_id": "gen-fake-[0-9]+"'), b'"generation_id": "gen-fake-<masked>"'),
    (re.compile(rb"127\.0\.0\.1:[0-9]+"), b"127.0.0.1:<port>"),
)
"""What two runs of one script cannot share: the time a file was written, a call's latency, the loopback
server's generation counter (a batch's parallel draws reach it in any order) and its port."""


def masked(data: bytes) -> bytes:
    """A saved file with what varies between runs masked (:data:`_VARYING`)."""
    for pattern, mask in _VARYING:
        data = pattern.sub(mask, data)
    return data


def script_for(name: str) -> Script:
    """The scripted audit of run ``name``: the fixed run with a baseline meets a failed draw (503, recorded)
    at iteration 2 and a blocked one (a typed 400 content_policy_violation) at 3."""
    script = Script()
    if name == "user_persona_baseline":
        script.target_error = lambda k: error_reply(503, "overloaded") if k == 2 else \
            documented.content_policy() if k == 3 else None
    if name == "auto":
        take_every_action(script)
    return script


def audited_files(server: FakeOpenRouter, out: Path, name: str) -> dict[str, bytes]:
    """Run ``name`` against ``server`` into ``out``: its ``audited_responses`` file name -> masked bytes."""
    server.handler = script_for(name).handler
    run_dir = run(audit_config(out / name, *RUNS[name]))
    return {p.name: masked(p.read_bytes()) for p in sorted((run_dir / "audited_responses").glob("*.json"))}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_saved_draw_file_has_the_bytes_the_earlier_code_wrote(name, audit_env, fake_openrouter):
    written = audited_files(fake_openrouter, audit_env, name)
    expected = {p.name: p.read_bytes() for p in sorted((FIXTURE / name).glob("*.json"))}
    assert expected, f"no fixture files for {name}"
    assert sorted(written) == sorted(expected)
    for file, data in expected.items():
        assert written[file] == data, f"{name}/{file} differs from the earlier code's bytes"


def _write_fixture() -> None:
    """Run every audit above with the code on the path and write its files as the fixture."""
    import os

    with FakeOpenRouter() as server, tempfile.TemporaryDirectory() as tmp:
        os.environ["OPENROUTER_API_KEY"] = TEST_API_KEY
        os.environ["OPENROUTER_API_BASE"] = server.base_url
        os.chdir(tmp)
        shutil.rmtree(FIXTURE, ignore_errors=True)
        for name in RUNS:
            (FIXTURE / name).mkdir(parents=True)
            for file, data in audited_files(server, Path(tmp), name).items():
                (FIXTURE / name / file).write_bytes(data)
            print(f"{name}: {len(list((FIXTURE / name).iterdir()))} files", file=sys.stderr)


if __name__ == "__main__":
    _write_fixture()
