"""The end of a ``-m`` sweep: a Hydra callback run in the launching process (any launcher).

It reads every job's verdict from the files the jobs left (never from process memory: with
joblib or submitit the jobs ran elsewhere), writes the comparison of all runs into the sweep
dir (``python -m audit.compare`` is the same step, standalone; not when every job failed: there is
nothing to compare), prints a sweep summary (one line per failure cause, naming its jobs) and
hands the failed jobs to :func:`audit.jobs.sweep.exit_if_any_failed` for the exit status.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from audit.errors import UserError
from audit.io import walk
from audit.jobs.sweep import note_failed_jobs
from audit.jobs.unstarted_sweep import note_started
from audit.record.run_record import RunRecord, iter_runs
from audit.record.usage import Usage


@dataclass
class SweepOutcome:
    """What the job dirs of one sweep say, job by job."""

    jobs: int = 0
    completed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """job -> reason"""
    stopped_budget: list[str] = field(default_factory=list)
    cost_usd: float = 0.0

    def text(self, comparison: str, compared: bool = True) -> str:
        """The summary; ``compared=False``: its first line says the comparison was not written."""
        lines = [f"sweep: {self.jobs} job(s): {len(self.completed)} completed, {len(self.failed)} failed, "
                 f"{len(self.stopped_budget)} stopped by budget; total cost ${self.cost_usd:.4f}"
                 + ("" if compared else "; comparison not written")]
        causes: dict[str, list[str]] = {}
        for job, reason in self.failed.items():
            causes.setdefault(reason, []).append(job)
        # one line per cause: ten jobs that failed for want of a key are one line, not ten
        lines += [f"  failed job{'s' if len(jobs) > 1 else ''} {', '.join(jobs)}: {reason}" for reason, jobs in causes.items()]
        lines += [f"  stopped by budget: job {job}" for job in self.stopped_budget]
        lines.append(f"  comparison: {comparison}")
        return "\n".join(lines)


def _cost(usage_json: Path) -> float:
    """The cost ``usage.json`` records (0 when it cannot be read: the job's own row says why)."""
    try:
        data = json.loads(usage_json.read_text(encoding="utf-8"))
        return Usage.of(data.get("totals")).cost
    except (OSError, ValueError, AttributeError, TypeError):
        return 0.0


def stopped_by_budget(record: RunRecord) -> bool:
    return record.summary is not None and record.summary.stop_reason == "budget"


def job_failure(records: list[RunRecord]) -> str | None:
    """Why a job did not finish (None when every run of it did, or stopped at the budget)."""
    if not records:
        return "no summary.json (the job was killed, or never started)"
    bad = [r for r in records if not r.finished and not stopped_by_budget(r)]
    return "; ".join(r.problem or f"status {r.state}" for r in bad) or None


def job_dirs(sweep_dir: Path) -> list[Path]:
    """The numbered job dirs (``hydra.sweep.subdir`` is the job number), in job order."""
    return sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))


def read_outcome(sweep_dir: Path) -> SweepOutcome:
    """Each job's status from the ``summary.json`` files under its dir (a job with several repeats
    failed if any of them did); cost from the runs' ``usage.json``."""
    outcome = SweepOutcome()
    for job in job_dirs(sweep_dir):
        outcome.jobs += 1
        records = [r for r in iter_runs([job]) if (r.path / "summary.json").is_file()]
        outcome.cost_usd += sum(_cost(p) for p in walk.files(job, hidden=True) if p.name == "usage.json")
        failure = job_failure(records)
        if failure is not None:
            outcome.failed[job.name] = failure
        elif any(stopped_by_budget(r) for r in records):
            outcome.stopped_budget.append(job.name)
        else:
            outcome.completed.append(job.name)
    outcome.cost_usd = round(outcome.cost_usd, 10)
    return outcome


def finish_sweep(sweep_dir: Path) -> SweepOutcome:
    """Compare the sweep's runs, print the summary, and record the failures for the exit status."""
    from audit.compare.build import compare  # lazy: compare (pandas) loads only when a sweep ends

    outcome = read_outcome(sweep_dir)
    rerun = f"python -m audit.compare {sweep_dir}"
    try:
        if outcome.jobs and not (outcome.completed or outcome.stopped_budget):
            # a page of failed runs only compares nothing; the lines above already say why each failed
            where, compared = "not written (every job failed: nothing to compare)", False
        else:
            compare([sweep_dir])
            where, compared = str(sweep_dir / "comparison.html"), True
    except UserError as exc:  # e.g. no run at all: say so, the summary still follows
        where, compared = f"not written ({exc}); rerun it with: {rerun}", False
    except Exception as exc:  # noqa: BLE001 - a fault in the comparison must not hide the sweep's summary
        # (Hydra would only warn that the callback raised): one line with the cause, then the summary
        where, compared = f"not written ({type(exc).__name__}: {exc}); rerun it with: {rerun}", False
        print(f"error: the sweep's comparison failed ({type(exc).__name__}: {exc}); its runs are intact; "
              f"rerun it with: {rerun}", file=sys.stderr, flush=True)
    print(outcome.text(where, compared), file=sys.stderr if outcome.failed or not compared else sys.stdout, flush=True)
    note_failed_jobs([f"job {job} ({sweep_dir / job})" for job in outcome.failed])
    return outcome


class SweepEnd(Callback):
    """Registered in ``conf/hydra/default.yaml``; Hydra calls it once per sweep, in the launching process."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        note_started(Path(str(config.hydra.sweep.dir)))  # a sweep that fails before its first job: unstarted_sweep

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        finish_sweep(Path(str(config.hydra.sweep.dir)))
