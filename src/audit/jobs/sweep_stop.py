"""What a Ctrl-C (or SIGTERM) of a ``-m`` sweep says: where the sweep stands and how to finish it.

A run's own advice (``resume=<run dir>``) would finish one job and leave the jobs that never
started; "nothing to resume, run the command again" would redo the finished ones. The sweep is
finished by ``resume=<sweep dir>`` (:mod:`audit.jobs.finish`), so that is what the line names,
with the count of runs by state read from the sweep dir, in one line.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from audit.record.run_record import iter_runs
from audit.record.summary import ENTRYPOINTS


def sweep_stop_line(sweep_dir: Path, experiment: str, job_num: int) -> str:
    """``interrupted in sweep job N (runs so far: 2 success, 1 cancelled; later jobs not started);
    finish the sweep with: python -m audit resume=<sweep dir>``."""
    states = Counter(record.state for record in iter_runs([sweep_dir]) if not record.stub)
    so_far = ", ".join(f"{n} {state}" for state, n in sorted(states.items())) or "none"
    return (f"interrupted in sweep job {job_num} (runs so far: {so_far}; later jobs not started); "
            f"finish the sweep with: python -m {ENTRYPOINTS.get(experiment, 'audit')} resume={sweep_dir}")
