"""Readers of run dirs tolerate writers: ``runs list``, ``compare`` and a sweep's resume scan, run in a loop while
a thread builds run dirs under hidden temporary names, renames them into place and removes them (what a sweep and
a user do beside a reader), never raise; what they find is the finished run plus whatever was whole when listed."""

from __future__ import annotations

import shutil
import threading
import traceback
from pathlib import Path

import pytest

from audit.compare.build import compare
from audit.jobs.finish import previous_run
from audit.record.run_record import find_run_dirs, iter_runs
from audit.runs.__main__ import list_runs
from audit.testing.scripted_audit import Script
from tests.censorship.test_main import BASE, audit, finish

BUILDS = 150
"""Run dirs the writer builds, renames and removes (each a copy of a real run)."""
SCANS = 400
"""Most scans the readers make, whatever the writer's pace (the loop ends when the writer does)."""


def churn(job: Path, template: Path, stop: threading.Event) -> None:
    """Build ``.<name>.tmp`` as a sweep job does, rename it into place, then remove it."""
    for n in range(BUILDS):
        if stop.is_set():
            return
        building = job / f".kimi_k2_tiananmen_{n}.tmp"
        shutil.copytree(template, building)
        final = job / f"kimi_k2_tiananmen_{n}"
        building.rename(final)
        shutil.rmtree(final)


@pytest.fixture
def sweep(tmp_path: Path, fake_openrouter) -> tuple[Path, Path]:
    """A sweep dir with one finished audit in job 0 (the reader's fixed point)."""
    fake_openrouter.handler = Script(stop_at_turn=2).handler
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, "topic=chernobyl", "audited=kimi_k2"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    job = tmp_path / "multirun" / "sweep" / "0"
    job.mkdir(parents=True)
    shutil.move(str(run_dir), job / run_dir.name)
    return job.parent, job / run_dir.name


def test_runs_list_compare_and_a_resume_scan_never_raise_while_run_dirs_come_and_go(tmp_path, sweep):
    sweep_dir, finished = sweep
    stop = threading.Event()
    writer = threading.Thread(target=churn, args=(finished.parent, finished, stop), daemon=True)
    errors: list[str] = []
    scans = 0
    writer.start()
    try:
        while writer.is_alive() and scans < SCANS:
            scans += 1
            try:
                assert finished in find_run_dirs(sweep_dir)
                assert finished.name in list_runs([sweep_dir], None)
                assert previous_run(finished.parent, 0) is not None  # this run, or a copy finished as it is
                if scans % 25 == 1:  # the comparison is the slow reader: a few of them, spread over the churn
                    compare([sweep_dir], out=tmp_path / "comparison")
            except Exception:  # noqa: BLE001 - every failure is collected and shown
                errors.append(traceback.format_exc())
    finally:
        stop.set()
        writer.join(timeout=60)
    assert not errors, f"{len(errors)} of {scans} scans raised, first:\n{errors[0]}"
    assert scans > 1
    assert [r.path for r in iter_runs([sweep_dir])] == [finished.resolve()]  # the writer's dirs are gone again
