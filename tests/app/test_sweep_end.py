"""The end of a sweep: a comparison that fails says so in one line with the command to rerun it, and
the sweep's summary still follows, its first line saying the comparison was not written."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.app.sweep_end import finish_sweep
from tests.compare.fake_runs import censorship_run


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
