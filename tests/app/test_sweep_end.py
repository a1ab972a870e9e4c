"""The end of a sweep: a comparison that fails says so in one line with the command to rerun it, and
the sweep's summary still follows, its first line saying the comparison was not written."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.app.sweep_end import finish_sweep
from tests.compare.fake_runs import censorship_run, failed_job


def test_a_comparison_that_cannot_be_written_is_one_line_and_the_summary_follows(tmp_path: Path,
                                                                                 capsys: pytest.CaptureFixture) -> None:
    sweep = tmp_path / "multirun" / "2026-11-29_00-00-00"
    censorship_run(sweep / "0", "run_a")
    (sweep / "comparison.html").mkdir()  # the page cannot replace a directory: an OSError, no UserError
    outcome = finish_sweep(sweep)
    err = capsys.readouterr().err
    assert outcome.completed == ["0"]
    rerun = f"rerun it with: python -m audit.compare {sweep}"
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "IsADirectoryError" in errors[0] and errors[0].endswith(rerun)
    assert "sweep: 1 job(s): 1 completed, 0 failed, 0 stopped by budget; total cost $0.0000; comparison not written" \
        in err
    assert "comparison: not written (IsADirectoryError" in err and err.rstrip().endswith(rerun)


def test_a_sweep_whose_jobs_all_failed_writes_no_comparison_and_says_each_cause_once(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Two jobs that failed for want of a key: no comparison page of two failed runs, and one summary line
    naming both jobs and the cause; a job that failed otherwise has its own line."""
    sweep = tmp_path / "multirun" / "2026-11-29_00-00-00"
    for job in ("0", "1"):
        failed_job(sweep, job, "OPENROUTER_API_KEY is not set", experiment="censorship")
    failed_job(sweep, "2", "no such model", experiment="censorship")
    outcome = finish_sweep(sweep)
    err = capsys.readouterr().err.splitlines()
    assert sorted(outcome.failed) == ["0", "1", "2"] and not (sweep / "comparison.html").exists()
    assert err == ["sweep: 3 job(s): 0 completed, 3 failed, 0 stopped by budget; total cost $0.0000; "
                   "comparison not written",
                   "  failed jobs 0, 1: OPENROUTER_API_KEY is not set",
                   "  failed job 2: no such model",
                   "  comparison: not written (every job failed: nothing to compare)"]


def test_a_sweep_with_one_completed_job_still_compares(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    sweep = tmp_path / "multirun" / "2026-11-29_00-00-00"
    censorship_run(sweep / "0", "run_a")
    failed_job(sweep, "1", "no such model", experiment="censorship")
    finish_sweep(sweep)
    assert (sweep / "comparison.html").is_file()
    assert "  failed job 1: no such model" in capsys.readouterr().err.splitlines()
