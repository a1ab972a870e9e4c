"""Damaged runs among good ones: every command that reads many runs names each damaged one and goes
on with the others, for each kind of saved file a hand, a disk or a hostile sender can damage.

Before: a response, turn or summary file nested 100,000 deep ended ``compare``, ``runs list``,
``export --format inspect`` and ``rescore`` in a traceback (42 to 2,987 lines), and the good run
beside it was never read.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from audit.testing.scripted_audit import JUDGE_MODEL, Script
from audit.testing.server import FakeOpenRouter
from tests.censorship.test_main import BASE, audit, finish
from tests import entrypoints

DEEP = "[" * 100_000 + "]" * 100_000
DAMAGE = {
    "summary_deep": ("summary.json", DEEP.encode()),
    "response_deep": ("audited_responses/001.json", DEEP.encode()),
    "turn_deep": ("auditor_turns/001.json", DEEP.encode()),
    "usage_deep": ("usage.json", DEEP.encode()),
    "response_binary": ("audited_responses/001.json", b"\x00\x01\x02binary"),
    "summary_not_utf8": ("summary.json", b'{"status": "\xff\xfe"}'),
}
COMMANDS = {
    "compare": ["audit.compare", "out", "--out", "report"],
    "runs_list": ["audit.runs", "list", "out"],
    "export": ["audit.export", "--format", "inspect", "out", "--out", "logs"],
    "rescore": ["audit.rescore", "out", f"judge.model={JUDGE_MODEL}", "gateway.max_retries=0"],
}


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> Path:
    """One finished audit (judged, so that rescore has something to compare), made once for the module."""
    cwd = tmp_path_factory.mktemp("made")
    with FakeOpenRouter() as server:
        server.handler = Script(stop_at_turn=2).handler
        args = [a for a in BASE if not a.startswith(("output_dir", "judge="))]
        code, _, err = finish(audit(cwd, server, *args, "judge=default", f"judge.model={JUDGE_MODEL}", "output_dir=made"))
    assert code == 0, err
    (run,) = (cwd / "made").iterdir()
    return run


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_damaged_run_is_named_and_the_good_one_is_still_read(tmp_path, one_run, fake_openrouter, command):
    """Every kind of damage at once, one damaged run each beside one good run, in one start of the command:
    each damaged run must be named (one run's damage must not hide another's) and the good
    run still read. Before, one start per damage and command (24 starts); a damage that stopped the command
    or hid the runs after it fails here as it failed there, and the assertion names the damage."""
    shutil.copytree(one_run, tmp_path / "out" / "a_good")
    for damage, (name, content) in DAMAGE.items():
        shutil.copytree(one_run, tmp_path / "out" / f"b_damaged_{damage}")
        (tmp_path / "out" / f"b_damaged_{damage}" / name).write_bytes(content)
    fake_openrouter.handler = Script(stop_at_turn=2).handler
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | fake_openrouter.env()
    proc = entrypoints.run([sys.executable, "-m", *COMMANDS[command]], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300)
    said = proc.stdout + proc.stderr
    assert "Traceback" not in said, said
    assert proc.returncode == 0, said
    listed = (tmp_path / "report" / "runs.csv").read_text(encoding="utf-8") if command == "compare" else ""
    for damage in DAMAGE:
        run = f"b_damaged_{damage}"
        named = [line for line in said.splitlines() if run in line]
        if command != "compare":  # compare names it in its table of unusable runs or in runs.csv
            assert named, (f"{damage}: the damaged run is named", said)
        else:
            assert named or run in listed, (f"{damage}: the damaged run is named", said)
    if command == "export":
        assert len(list((tmp_path / "logs").glob("*.eval"))) >= 1  # the good run's log
    elif command == "rescore":
        assert (tmp_path / "out" / "a_good" / "judgings").is_dir()
    else:
        assert "a_good" in said or "a_good" in listed, said
