"""End to end: a resume (or a rescore) of a run dir holding a link out of it writes nothing through the link.

Each experiment runs once against the loopback server; each case copies its run dir, replaces one journal
or file by a link to a file outside, and resumes it: one line naming the file, a non-zero exit, the file
outside byte-identical (a run dir received from someone else with ``draws.jsonl -> ~/.bashrc``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from audit.testing.scripted_audit import Script
from audit.testing.scripted_benchmark import BenchmarkScript
from audit.testing.server import FakeOpenRouter
from tests import entrypoints
from tests.censorship.test_main import BASE

OUTSIDE = "export PATH=/usr/bin  # the user's own file\n"
MODULES = {"benchmark": "audit.benchmark", "censorship": "audit", "epistemic": "audit.epistemic"}
NO_CACHE = "gateway.cache.enabled=false"


def launch(cwd: Path, module: str, *args: str, server: FakeOpenRouter | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    env.update(server.env() if server is not None else {"OPENROUTER_API_KEY": "sk-or-v1-" + "0" * 64})
    return entrypoints.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One finished run of each experiment (the censorship audit and benchmark with a judge, so a usage journal)."""
    made = {}
    cwd = tmp_path_factory.mktemp("runs")
    for part in "bce":
        (cwd / part).mkdir()
    with FakeOpenRouter(handler=BenchmarkScript().handler) as server:
        proc = launch(cwd / "b", "audit.benchmark", "questions.limit=1", "rollouts=1", NO_CACHE, "gateway.max_retries=0",
                      server=server)
        assert proc.returncode == 0, proc.stderr
        made["benchmark"] = next((cwd / "b").rglob("draws.jsonl")).parent
        script = Script(stop_at_turn=2)
        server.handler = script.handler
        proc = launch(cwd / "c", "audit", *BASE, "topic=chernobyl", "audited=kimi_k2", server=server)
        assert proc.returncode == 0, proc.stderr
        (made["censorship"],) = (cwd / "c" / "out").iterdir()
    proc = launch(cwd / "e", "audit.epistemic", "cards.num_per_type=2", "cards.suites=[standard]")
    assert proc.returncode == 0, proc.stderr
    made["epistemic"] = next((cwd / "e").rglob("cards.jsonl")).parent
    return made


CASES = [("benchmark", "draws.jsonl"), ("benchmark", "usage.jsonl"), ("benchmark", "summary.json"),
         ("benchmark", ".lock"), ("censorship", "usage.jsonl"), ("censorship", "auditor_turns/002.json"),
         ("censorship", "audited_responses"), ("censorship", "summary.json"), ("epistemic", "answers.jsonl"),
         ("epistemic", "results.jsonl"), ("epistemic", "summary.json")]


HANDLERS = {"benchmark": BenchmarkScript().handler, "censorship": Script(stop_at_turn=2).handler,
            "epistemic": Script().handler}


@pytest.mark.parametrize("experiment, name", CASES, ids=[f"{e}-{n}" for e, n in CASES])
def test_a_resume_through_a_link_out_writes_nothing_there(tmp_path, runs, fake_openrouter, experiment, name):
    """The run is made unfinished (its summary says ``started``, as a killed run's does), so a resume has work to do:
    a journal linked to the user's file holds no record of it, so every record would be appended there."""
    run_dir = tmp_path / "run"
    shutil.copytree(runs[experiment], run_dir, symlinks=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps({**summary, "status": "started"}))
    fake_openrouter.handler = HANDLERS[experiment]
    outside = tmp_path / "home"
    outside.mkdir()
    link = run_dir / name
    if link.is_dir():
        shutil.copytree(link, outside / link.name)
        shutil.rmtree(link)
        link.symlink_to(outside / link.name, target_is_directory=True)
    else:
        (outside / "bashrc").write_text(OUTSIDE)
        link.unlink(missing_ok=True)
        link.symlink_to(outside / "bashrc")
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    proc = launch(tmp_path, MODULES[experiment], f"resume={run_dir}", server=fake_openrouter)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(link) in lines[0] and "link" in lines[0], proc.stderr
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before


def test_a_rescore_into_a_linked_judgments_journal_writes_nothing_there(tmp_path, runs):
    run_dir = tmp_path / "run"
    shutil.copytree(runs["censorship"], run_dir, symlinks=True)
    folder = run_dir / "judgings" / "test_other"
    folder.mkdir(parents=True)
    outside = tmp_path / "bashrc"
    outside.write_text("")  # empty: every item is still to judge, so the first judgment is appended
    (folder / "judgments.jsonl").symlink_to(outside)
    with FakeOpenRouter(handler=Script(stop_at_turn=2).handler) as server:
        proc = launch(tmp_path, "audit.rescore", str(run_dir), "judge.model=test/other", NO_CACHE, server=server)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "judgments.jsonl" in lines[0] and "link" in lines[0], proc.stderr
    assert outside.read_text() == ""
