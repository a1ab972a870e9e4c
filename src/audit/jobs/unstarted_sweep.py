"""A ``-m`` sweep that fails before its first job leaves no empty ``multirun/<date>/`` behind.

Hydra's sweeper makes the sweep dir and writes ``multirun.yaml`` into it, then composes every
job's config before launching any (so a typo in a swept value, ``topic=tiananmen,tiananmn``,
fails there). The one-line error is right, but the dir it leaves looks like a sweep that ran
nothing, and ``python -m audit.runs list`` or a later ``resume=`` would meet it. The sweep-end
callback notes the dir when the sweep starts (:func:`note_started`); the entrypoint, on a
composition error, removes it with :func:`drop_unstarted` only when it still holds nothing but
that ``multirun.yaml``: a dir with a job in it, or anything else, is left as it is.
"""

from __future__ import annotations

from pathlib import Path

SWEEP_RECORD = "multirun.yaml"
_started: list[Path] = []
"""The sweep dir of this process's sweep, once its callback saw it start (one sweep per process)."""


def note_started(sweep_dir: Path) -> None:
    """Remember ``sweep_dir`` as this process's sweep (called from ``on_multirun_start``)."""
    _started[:] = [sweep_dir]


def unstarted(sweep_dir: Path) -> bool:
    """Whether ``sweep_dir`` holds only the sweeper's ``multirun.yaml`` (or nothing): no job began."""
    return sweep_dir.is_dir() and {p.name for p in sweep_dir.iterdir()} <= {SWEEP_RECORD}


def drop_unstarted() -> Path | None:
    """Remove this process's sweep dir if no job began in it; return it when removed."""
    if not _started or not unstarted(_started[0]):
        return None
    sweep_dir = _started[0]
    (sweep_dir / SWEEP_RECORD).unlink(missing_ok=True)
    sweep_dir.rmdir()  # fails (and the error shows) if a job wrote into it since: never removes a job
    return sweep_dir
