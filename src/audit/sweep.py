"""Run a Hydra job the same way for every entrypoint, single run or sweep.

A single run that fails on bad input prints its one-line error and exits 1. In a ``-m``
sweep a failed job must not stop the others, and must still leave a ``summary.json``
with ``status: error``: Hydra skips ``on_multirun_end`` when a job fails, and the
aggregate step (``python -m audit.compare``) reads every job's status from that file. A
job that failed before it could create its own run directory (a missing key, say) gets
that summary in its Hydra job directory; the sweep then exits 1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from audit.errors import UserError, exit_on_user_error
from audit.io.atomic import write_json

_failed_jobs: list[Path] = []


def sweep_job_dir() -> Path | None:
    """The Hydra job directory when running as a ``-m`` sweep job, else None.

    Sweep jobs put their run directories there, so parallel jobs never collide.
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        return Path(HydraConfig.get().runtime.output_dir)
    return None


def run_job(job: Callable[[], object], experiment: str) -> None:
    """Run ``job`` (a thin ``lambda: run(cfg)``) under the right failure policy for the Hydra mode."""
    job_dir = sweep_job_dir()
    if job_dir is None:
        exit_on_user_error(job)
        return
    try:
        job()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        record_failure(job_dir, experiment, str(exc))
    except Exception as exc:  # a bug: keep the traceback for Hydra, but leave the summary first
        record_failure(job_dir, experiment, f"{type(exc).__name__}: {exc}")
        raise


def record_failure(job_dir: Path, experiment: str, error: str) -> None:
    """Note a failed job; write its summary unless its run directory already holds one."""
    _failed_jobs.append(job_dir)
    if not any(job_dir.rglob("summary.json")):
        write_json(job_dir / "summary.json", {"status": "error", "experiment": experiment, "error": error})


def exit_if_any_failed() -> None:
    """After the sweep: exit 1 naming the failed jobs, so scripts and CI see the failure."""
    if _failed_jobs:
        print(f"error: {len(_failed_jobs)} sweep job(s) failed; see summary.json under "
              f"{', '.join(str(p) for p in _failed_jobs)}", file=sys.stderr)
        raise SystemExit(1)
