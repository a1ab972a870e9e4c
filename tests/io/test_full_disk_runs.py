"""Whole runs on a disk that fills mid-run: an audit and an epistemic run on a small tmpfs.

Each run must exit 1 with one line naming the file it could not write; its summary must end
``error`` with the count of what is on disk (iterations, answers) or be named by that line;
every file on disk must be whole (JSON parses, journals hold whole lines, no temporary files);
and after space is freed (the tmpfs remounted larger) a resume must finish the run, keeping every
saved auditor turn byte for byte. The sizes land the disk-full at different writes (a turn, a
response, the ledger's journal ``usage.jsonl``, the answers journal, the summary itself).

Before: a disk filling during a ledger append left the audit's summary ``started`` with 0
iterations while 2-6 were on disk, the line said "cannot write a file" (the buffered line failed
again at close, nameless), and the journal ended in a cut line; an epistemic run filling its
answers journal left ``started, answered 0`` and added aiohttp's "Unclosed client session" lines.

Needs root (or a user namespace) to mount; skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from audit.testing.server import FakeOpenRouter
from tests.conftest import mount_small
from tests import entrypoints


def run(args: list[str], server: FakeOpenRouter, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    return entrypoints.run([sys.executable, "-m", *args], cwd=cwd, env={**env, **server.env()},
                           capture_output=True, text=True, timeout=300)


def whole_files(run_dir: Path) -> list[str]:
    """What is wrong with the files on disk (empty when every one is whole)."""
    problems = []
    for path in (p for p in run_dir.rglob("*") if p.is_file()):
        if path.name.endswith(".tmp"):
            problems.append(f"temporary file left: {path.name}")
        elif path.suffix == ".json":
            try:
                json.loads(path.read_text())
            except ValueError:
                problems.append(f"{path.name} is not whole JSON")
        elif path.suffix == ".jsonl":
            for n, line in enumerate(path.read_text().splitlines(), 1):
                try:
                    json.loads(line)
                except ValueError:
                    problems.append(f"{path.name} line {n} is cut")
    return problems


def check_one_line_and_summary(proc: subprocess.CompletedProcess[str], run_dir: Path, on_disk: int,
                               count_field: str) -> None:
    (line,) = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and line.startswith("error: cannot write /") and "disk full" in line, proc.stderr
    assert whole_files(run_dir) == []
    summary_path = run_dir / "summary.json"
    if summary_path.exists():
        summary = json.loads(summary_path.read_text())
        assert summary["status"] == "error" and summary[count_field] == on_disk, (summary, on_disk)
        assert summary["error"].startswith("cannot write /")
    else:
        assert str(summary_path) in line


@pytest.mark.parametrize(("size", "resumed"), [("40k", True), ("120k", False)])
def test_an_audit_on_a_disk_that_fills_ends_in_error_with_its_iterations(tmp_path: Path, tmpfs: Path, size: str,
                                                                         resumed: bool):
    mount_small(tmpfs, size)
    with FakeOpenRouter(handler=Script().handler) as server:
        common = ["gateway.max_retries=0", "gateway.cache.enabled=false"]
        proc = run(["audit", f"auditor.model={AUDITOR_MODEL}", "max_iterations=20", f"output_dir={tmpfs / 'out'}",
                    *common], server, tmp_path)
        (run_dir,) = (tmpfs / "out").iterdir()
        responses = sorted((run_dir / "audited_responses").glob("*.json"))
        assert 0 < len(responses) < 20
        check_one_line_and_summary(proc, run_dir, len(responses), "total_iterations")
        if not resumed:
            return
        turns = {p.name: p.read_bytes() for p in (run_dir / "auditor_turns").glob("*.json")}
        subprocess.run(["mount", "-o", "remount,size=20m", str(tmpfs)], check=True)
        again = run(["audit", f"resume={run_dir}", *common], server, tmp_path)
    assert again.returncode == 0, again.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "success" and summary["total_iterations"] == 20
    assert {n: (run_dir / "auditor_turns" / n).read_bytes() for n in turns} == turns
    assert whole_files(run_dir) == []


@pytest.mark.parametrize(("size", "resumed"), [("300k", True), ("500k", False)])
def test_an_epistemic_run_on_a_disk_that_fills_ends_in_error_with_its_answers(tmp_path: Path, tmpfs: Path,
                                                                              size: str, resumed: bool):
    mount_small(tmpfs, size)
    with FakeOpenRouter(handler=Script().handler) as server:
        common = ["gateway.max_retries=0", "gateway.cache.enabled=false"]
        proc = run(["audit.epistemic", "system=raw_llm", "system.model=test/model", "cards.num_per_type=40",
                    f"output_dir={tmpfs / 'out'}", *common], server, tmp_path)
        (run_dir,) = (tmpfs / "out").iterdir()
        journal = run_dir / "answers.jsonl"
        answers = len(journal.read_text().splitlines()) if journal.exists() else 0
        assert "Unclosed" not in proc.stdout
        check_one_line_and_summary(proc, run_dir, answers, "answered")
        if not resumed:
            return
        subprocess.run(["mount", "-o", "remount,size=20m", str(tmpfs)], check=True)
        again = run(["audit.epistemic", f"resume={run_dir}", *common], server, tmp_path)
    assert again.returncode == 0, again.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "success" and len((run_dir / "results.jsonl").read_text().splitlines()) == 360
    assert whole_files(run_dir) == []
