"""Writing Inspect logs: find the runs, map each (:mod:`audit.export.inspect_log`), write each log
atomically. Used by ``python -m audit.export`` and, with ``export.inspect=true``, at the end of a run."""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from omegaconf import DictConfig

from audit.counted import counted
from audit.errors import UserError, exit_on_user_error
from audit.io.atomic import atomic_open
from audit.progress import Heartbeat

MISSING = ("the Inspect export needs inspect-ai; install it with: pip install 'audit[inspect]' "
           "(or pip install inspect-ai)")


def require_inspect() -> None:
    """A one-line :class:`UserError` saying how to install inspect-ai when it is missing (checked
    before a run starts when ``export.inspect=true``, so no run is done for an export that cannot be)."""
    if importlib.util.find_spec("inspect_ai") is None:
        raise UserError(MISSING)


def export_inspect(dirs: Sequence[Path], out: Path | None = None, skipped: list[str] | None = None) -> list[Path]:
    """Write one Inspect log per run found under ``dirs``; the paths written.

    Every log is made before the first is written, so a run that cannot be mapped leaves no
    partial export; each file is written atomically (a second export of a run replaces its log:
    the name is stable per run dir). A run whose files are damaged is left out and named in
    ``skipped`` (one line each), and the others are exported; if every run is damaged, that is the error.
    """
    require_inspect()
    # on stdout with the rest of the progress: stderr holds only the one line of an error
    with Heartbeat("export: loading inspect_ai and the runs") as beat:
        return _export(dirs, out, skipped, beat)


def _export(dirs: Sequence[Path], out: Path | None, skipped: list[str] | None, beat: Heartbeat) -> list[Path]:
    """:func:`export_inspect`'s work, naming what it is at in ``beat``'s lines."""
    from inspect_ai.log import write_eval_log

    # lazy: every entrypoint imports this module; the mapping and the readers load only for an export
    from audit.export.inspect_log import log_file_name
    from audit.export.run_log import inspect_log
    from audit.runs.loading import load_runs
    from audit.record.summary import EXPERIMENTS

    if out is not None and out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; pass a directory")
    runs = [run for run in load_runs(dirs) if run.experiment in EXPERIMENTS]
    if not runs:
        raise UserError(f"no run of any experiment under {', '.join(map(str, dirs))}; nothing to export")
    damaged = [f"skipped {run.label}: {run.damage}" for run in runs if run.damage]
    if len(damaged) == len(runs):
        raise UserError(damaged[0])
    if skipped is not None:
        skipped += damaged
    runs = [run for run in runs if not run.damage]
    beat.label = f"export: mapping {counted(len(runs), 'run')} to Inspect logs"
    logs = [(run, inspect_log(run)) for run in runs]
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="audit-export-") as scratch:
        for run, log in logs:
            beat.label = f"export: writing {counted(len(runs), 'Inspect log')}, {len(written)} written"
            target = (out if out is not None else run.path) / log_file_name(log)
            staged = Path(scratch) / target.name
            write_eval_log(log, str(staged), format="eval")  # inspect_ai's own writer, then one atomic move
            with atomic_open(target, "wb") as handle:
                handle.write(staged.read_bytes())
            written.append(target)
    return written


def with_export(cfg: DictConfig, job: Callable[[DictConfig], object]) -> Callable[[DictConfig], object]:
    """``job``, followed by the Inspect export of the run dir it returns when ``export.inspect=true``
    (inspect-ai checked before any run starts: no run is done for an export that cannot be). The
    entrypoints wrap their job with it, so the job runtime (:mod:`audit.jobs.sweep`) reads no run."""
    if not (cfg.get("export") and cfg.export.get("inspect")):
        return job
    exit_on_user_error(require_inspect)

    def run_and_export(job_cfg: DictConfig) -> object:
        run_dir = job(job_cfg)
        if isinstance(run_dir, Path):
            for log in export_inspect([run_dir]):
                print(f"inspect log: {log}")
        return run_dir

    return run_and_export
