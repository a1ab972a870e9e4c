"""Run a Hydra job the same way for every entrypoint, single run or sweep.

A single run that fails on bad input prints its one-line error and exits 1. In a ``-m``
sweep a failed job must not stop the others and must not raise at all: Hydra skips the
``on_multirun_end`` callback (:mod:`audit.app.sweep_end`, which writes the comparison and the
sweep summary) when a job raises, and with the joblib or submitit launchers the job runs in
another process, so nothing in the launching process's memory knows it failed. Each job
therefore leaves its verdict on disk: its run's ``summary.json``, or, when it failed before
it could make a run directory (a missing key, say), a ``summary.json`` with
``status: error`` in its Hydra job directory. The sweep's exit status is read back from
those files.

Also here, because every entrypoint shares them: repeats (``samples=k`` runs the job k
times with ``repeat=0..k-1``), the sweep budget (``budget.max_cost_usd``), and a sweep
job's output, copied to ``job.log`` in its job dir and prefixed with the job number on the
terminal.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import IO, Any

from omegaconf import DictConfig, open_dict

from audit.errors import (Interrupted, UserError, drop_abandoned_call_warnings, exit_on_user_error, print_error_line,
                          user_error_line)
from audit.io import walk
from audit.jobs.resume import overrides_checked
from audit.jobs.sweep_stop import sweep_stop_line
from audit.llm import budget as budgets
from audit.jobs.finish import clear_stub, previous_run, sweep_dir
from audit.record.rundir import iso, utc_now
from audit.record.status import Status
from audit.record.summary import SUMMARY, SUMMARY_TYPES, write_summary

JOB_LOG = "job.log"
_failed_sweep: list[str] = []
"""Set by :mod:`audit.app.sweep_end` in the launching process: the failed jobs, read from disk."""


def sweep_job_dir() -> Path | None:
    """The Hydra job directory when running as a ``-m`` sweep job, else None.

    Sweep jobs put their run directories there, so parallel jobs never collide.
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        return Path(HydraConfig.get().runtime.output_dir)
    return None


def repeats(cfg: DictConfig) -> list[int]:
    """The sample indices to run: ``[cfg.repeat]`` for ``samples=1``, else ``0..samples-1``."""
    samples = cfg.get("samples", 1)
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise UserError(f"samples={samples!r}: give a whole number of repeats per cell, at least 1 (e.g. samples=3)")
    return [int(cfg.get("repeat") or 0)] if samples == 1 else list(range(samples))


def with_repeat(cfg: DictConfig, repeat: int) -> DictConfig:
    """``cfg`` with ``repeat`` set: the run's config (and so its cache keys) name its sample index."""
    with open_dict(cfg):
        cfg.repeat = repeat
    return cfg


def job_budget(cfg: DictConfig, sweep_dir: Path | None) -> budgets.Budget | None:
    """The cap from ``budget.max_cost_usd``; in a sweep its total lives in ``<sweep dir>/budget.json``."""
    cap = (cfg.get("budget") or {}).get("max_cost_usd")
    if cap is None:
        return None
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap < 0:
        raise UserError(f"budget.max_cost_usd={cap!r}: give a cost in USD, e.g. budget.max_cost_usd=5")
    return budgets.Budget(float(cap), sweep_dir / budgets.BUDGET_FILE if sweep_dir is not None else None)


def run_job(cfg: DictConfig, job: Callable[[DictConfig], object], experiment: str) -> None:
    """Run ``job(cfg)`` once per repeat under the failure policy of the Hydra mode."""
    job_dir = sweep_job_dir()
    if job_dir is None:
        budgets.activate(exit_on_user_error(lambda: job_budget(cfg, None)))
        for repeat in exit_on_user_error(lambda: repeats(cfg)):
            exit_on_user_error(lambda repeat=repeat: job(with_repeat(cfg, repeat)))
        return
    from hydra.core.hydra_config import HydraConfig

    hydra = HydraConfig.get()
    finishing = sweep_dir(cfg.get("resume")) is not None  # resume=<sweep dir>: see audit.jobs.finish
    with job_output(job_dir / JOB_LOG, f"[job {hydra.job.num}] "):
        try:
            budgets.activate(job_budget(cfg, Path(hydra.sweep.dir)))
            for repeat in repeats(cfg):
                if finishing:
                    finish_repeat(cfg, job, job_dir, repeat)
                else:
                    job(with_repeat(cfg, repeat))
        except Interrupted as exc:  # the user meant the whole sweep: no further job starts
            drop_abandoned_call_warnings()  # the one line stays the only line, as in a single run
            print(f"error: {sweep_stop_line(Path(hydra.sweep.dir), experiment, hydra.job.num)}", file=sys.stderr)
            record_failure(job_dir, experiment, str(exc))
            raise SystemExit(1) from None
        except Exception as exc:  # noqa: BLE001 - never raise past the sweep (see module doc)
            line = user_error_line(exc)
            if line is None:  # a bug: print the traceback
                traceback.print_exc()
            else:
                print_error_line(line)
            record_failure(job_dir, experiment, line or f"{type(exc).__name__}: {exc}")


def finish_repeat(cfg: DictConfig, job: Callable[[DictConfig], object], job_dir: Path, repeat: int) -> None:
    """One repeat of a job of a sweep being finished: left alone when its run finished, resumed in
    its run dir when it did not, run afresh when it never started. The overrides are the sweep's
    saved ones (the extras were checked by :func:`audit.jobs.finish.finish_argv`), so the resumed
    run does not refuse them."""

    previous = previous_run(job_dir, repeat)
    if previous is not None and previous.finished:
        print(f"repeat {repeat}: finished in {previous.path}; left as it is", flush=True)
        return
    clear_stub(job_dir)
    cfg = with_repeat(cfg, repeat)
    with open_dict(cfg):
        cfg.resume = str(previous.path) if previous is not None else None
    with overrides_checked():
        job(cfg)


def record_failure(job_dir: Path, experiment: str, error: str) -> None:
    """Write the failed job's summary (a stub: the header of :mod:`audit.record.summary`) unless its
    run directory already holds one."""

    if not any(SUMMARY in names for _, names in walk.folders(job_dir, hidden=True)):
        kind = SUMMARY_TYPES[experiment]
        write_summary(job_dir / SUMMARY, kind(status=Status.ERROR, error=error, finished_at=iso(utc_now())))


def note_failed_jobs(jobs: list[str]) -> None:
    """Called by the sweep-end callback (launching process) with the failed jobs found on disk."""
    _failed_sweep[:] = jobs


def exit_if_any_failed() -> None:
    """After the sweep: exit 1 naming the failed jobs, so scripts and CI see the failure."""
    if _failed_sweep:
        print(f"error: {len(_failed_sweep)} sweep job(s) failed: {', '.join(_failed_sweep)}", file=sys.stderr)
        raise SystemExit(1)


class _Prefixed:
    """A text stream that copies everything to a log file and prefixes each terminal line."""

    def __init__(self, terminal: IO[str], log: IO[str], prefix: str):
        self._terminal, self._log, self._prefix = terminal, log, prefix
        self._at_line_start = True

    def write(self, text: str) -> int:
        self._log.write(text)
        out = []
        for piece in text.splitlines(keepends=True):
            out.append((self._prefix if self._at_line_start else "") + piece)
            self._at_line_start = piece.endswith("\n")
        self._terminal.write("".join(out))
        return len(text)

    def flush(self) -> None:
        self._log.flush()
        self._terminal.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno ... of the terminal
        return getattr(self._terminal, name)


@contextmanager
def job_output(log_path: Path, prefix: str) -> Iterator[None]:
    """Send this job's stdout and stderr to ``log_path`` too, and prefix its terminal lines."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8", buffering=1) as log, \
            redirect_stdout(_Prefixed(sys.stdout, log, prefix)), redirect_stderr(_Prefixed(sys.stderr, log, prefix)):
        yield
