"""Finishing a sweep: ``python -m audit resume=<sweep dir>`` (``audit.epistemic`` alike).

A sweep stopped part-way (Ctrl-C, a kill, failed jobs, a spent budget) is finished by running
its own command again into its own directory. Hydra saved that command in
``<sweep dir>/multirun.yaml``; :func:`finish_argv` turns ``resume=<sweep dir>`` into it
(``-m``, the saved overrides, ``hydra.sweep.dir=<sweep dir>``), so Hydra lays out the same jobs
under the same numbers, and the sweep-end callback rewrites the comparison as after any sweep.
Each job then decides from its own job dir (:func:`previous_run`): a repeat whose run finished
is left as it is, one that did not (cancelled, killed, error) is resumed in its run dir, and one
that never started (or failed before making a run dir) runs afresh.

Why ``resume=`` rather than a separate command: it is the word users already type for a run
dir, the entrypoint already knows its experiment and config, and only connection settings,
the budget and Hydra's launcher may change, exactly as for a run.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from audit.errors import UserError
from audit.io.safe_read import load_yaml
from audit.jobs.saved_config import check_replayed
from audit.jobs.resume import refuse_resume_overrides
from audit.record.run_record import RunRecord, iter_runs
from audit.record.summary import BENCHMARK, CENSORSHIP, ENTRYPOINTS, EPISTEMIC, SUMMARY

SWEEP_FILE = "multirun.yaml"
"""What Hydra writes into every sweep dir: the sweep's config, its command-line overrides included."""
EXPERIMENT_OF_CONFIG = {"config": CENSORSHIP, "epistemic": EPISTEMIC, "benchmark": BENCHMARK}
"""The experiment whose entrypoint composes each Hydra config, so a sweep is finished by the command that
started it (:data:`~audit.record.summary.ENTRYPOINTS`)."""
_NOT_REPLAYED = ("hydra.mode", "hydra.sweep.dir", "resume")


def sweep_dir(value: object) -> Path | None:
    """``value`` as a sweep dir (one holding ``multirun.yaml``), else None."""
    if not value:
        return None
    path = Path(str(value)).expanduser()
    return path.absolute() if (path / SWEEP_FILE).is_file() else None


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _quoted(path: Path) -> str:
    text = str(path)
    if "'" in text or "\\" in text:
        raise UserError(f"resume: {text!r} has a quote or backslash Hydra cannot pass on; move the sweep dir")
    return f"'{text}'"


def finish_argv(argv: list[str], config_name: str) -> list[str]:
    """The command line to run: ``argv`` itself, unless it resumes a sweep dir; then the sweep's
    saved command into that dir, with this command's connection, budget and launcher settings."""
    resume = [a for a in argv if a.startswith("resume=")]
    target = sweep_dir(resume[-1].split("=", 1)[1]) if resume else None
    if target is None:
        return argv
    saved = load_yaml(target / SWEEP_FILE, fix="it is the record of the sweep's command, restore it from a backup")
    try:
        task = [str(o) for o in saved.hydra.overrides.task]
        hydra = [str(o) for o in saved.hydra.overrides.hydra]
        name = str(saved.hydra.job.config_name)
    except Exception as exc:  # noqa: BLE001 - any damage is the user's file to restore
        raise UserError(f"resume: cannot read {target / SWEEP_FILE} ({type(exc).__name__}); it is the record of "
                        "the sweep's command, restore it from a backup") from None
    entry = ENTRYPOINTS[EXPERIMENT_OF_CONFIG[name]] if name in EXPERIMENT_OF_CONFIG else name
    if name != config_name:
        raise UserError(f"resume: {target} is a sweep of python -m {entry}; run python -m {entry} resume={target}")
    extras = [a for a in argv if not a.startswith("resume=") and a not in ("-m", "--multirun")]
    refuse_resume_overrides(extras)
    given = {_key(a) for a in extras}
    replayed = [o for o in (*hydra, *task) if _key(o) not in given and _key(o) not in _NOT_REPLAYED]
    check_replayed(replayed, given, target / SWEEP_FILE)
    # Hydra composes every job before the first says anything: a line now, not after 40 s of silence
    print(f"resume: finishing the sweep {target} (each job's finished run is kept, the rest resumed)", flush=True)
    return ["-m", *replayed, *extras, f"hydra.sweep.dir={_quoted(target)}", f"resume={_quoted(target)}"]


def previous_run(job_dir: Path, repeat: int) -> RunRecord | None:
    """The run of ``repeat`` a job dir already holds: a finished one if there is one, else the
    latest unfinished one (to resume), else None (the repeat never started)."""
    runs = [r for r in iter_runs([job_dir]) if not r.stub and _repeat_of(r) == repeat]
    finished = [r for r in runs if r.finished]
    return (finished or runs or [None])[-1]


def _repeat_of(record: RunRecord) -> int | None:
    """A run's repeat index: from its summary, else (killed before its first summary) its config."""
    if record.summary is not None:
        return record.summary.repeat
    try:
        config = load_yaml(record.path / "config.yaml")
    except UserError:  # unreadable or unsafe: not a run this finish can resume
        return None
    return int(config.get("repeat") or 0) if isinstance(config, DictConfig) else None


def clear_stub(job_dir: Path) -> None:
    """Remove the failure a job left before it made a run dir: the job runs again now, and a stale
    ``status: error`` beside its new run would count it failed."""
    (job_dir / SUMMARY).unlink(missing_ok=True)

