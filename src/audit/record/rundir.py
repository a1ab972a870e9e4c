"""The run directory of either experiment: its name, its clock, its creation, its lock.

A run dir is named ``<part>_<part>_<YYYY-MM-DDTHH-MM-SS>`` (UTC, no colons so the name is a path
everywhere; ``-2``, ``-3`` ... on a same-second clash): ``<audited>_<topic>_...`` for a censorship
audit, ``<domain>_<predicate>_...`` for an epistemic run. It is built under a hidden name and
renamed into place (:func:`~audit.io.atomic.new_directory`), so a kill leaves either no run dir or
one holding its config, which a resume needs; from the moment it exists a process holds its lock
(:mod:`audit.io.lock`), so two processes never write one run dir.

Every timestamp a run records comes from :func:`utc_now` and is written by :func:`iso`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from omegaconf import DictConfig

from audit.errors import UserError
from audit.io import confine, walk
from audit.io.atomic import new_directory, read_json, remove_partial_writes
from audit.io.lock import LOCK_NAME, hold_lock
from audit.io.names import path_component
from audit.io.safe_read import load_yaml
from audit.record.summary import (ENTRYPOINTS, SUMMARY, CensorshipSummary, EpistemicSummary, Header, parse_summary,
                                write_summary)

CONFIG = "config.yaml"
USAGE = "usage.json"


def load_saved_config(path: Path) -> DictConfig:
    """A run's saved ``config.yaml``; a hand-edited one that no longer parses is a one-line UserError."""
    saved = load_yaml(path, fix="restore it from the run (a saved config is data: no environment or code)")
    if not isinstance(saved, DictConfig):
        raise UserError(f"resume: {path} is not a mapping; restore it from the run")
    return saved


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    """The timestamp format of every record: ``2024-01-15T10:30:05Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_dir_name(parts: dict[str, object], moment: datetime) -> str:
    """``<part>_..._<YYYY-MM-DDTHH-MM-SS>`` (UTC). ``parts`` maps the config key each part comes
    from to its value; each must be one safe path component, so the run dir stays inside its
    parent whatever the config says (the key names the culprit)."""
    names = [path_component(value, key) for key, value in parts.items()]
    return "_".join([*names, moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H-%M-%S")])


def fresh_run_path(parent: Path, parts: dict[str, object], moment: datetime | None = None) -> Path:
    """A run dir path under ``parent`` that does not exist yet (not created)."""
    base = Path(parent) / run_dir_name(parts, moment or utc_now())
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


class RunDir:
    """One run directory of ``experiment``: paths, creation, lock and summary."""

    def __init__(self, path: Path, experiment: str):
        self.path = Path(path)
        self.experiment = experiment
        self._lock: IO[str] | None = None  # held open while this process runs the dir
        self._confined = False  # every write under the dir is checked for links out of it (audit.io.confine)

    @property
    def resume_command(self) -> str:
        return f"python -m {ENTRYPOINTS[self.experiment]} resume={self.path}"

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY

    @property
    def usage_path(self) -> Path:
        return self.path / USAGE

    def create(self, fill: Callable[[Path], object]) -> None:
        """Make the run dir, locked, holding what ``fill(building dir)`` writes (its config at least).

        The run dir must be new: another run started in the same second may have taken the name
        since :func:`fresh_run_path` chose it, and two runs must never write into one directory.
        """
        try:
            with new_directory(self.path) as building:
                self._lock = hold_lock(building, self.resume_command)
                fill(building)
            self._confine()
        except FileExistsError as exc:
            if exc.filename != str(self.path):  # a file where output_dir should be: reported as such
                raise
            raise UserError(f"{self.path} was just created by another run; start this one again") from None

    def lock(self) -> None:
        """Hold the run dir for this process; a second runner gets one line naming the holder."""
        self._lock = hold_lock(self.path, self.resume_command)
        self._confine()

    def _confine(self) -> None:
        if not self._confined:
            confine.hold(self.path)
            self._confined = True

    def release(self) -> None:
        """Let go of the run dir once this process is done with it, whatever the outcome. Waiting
        for the object to be collected is not enough: a failed run's traceback keeps it alive, so
        a resume in the same process (samples=k, a notebook, a test) would find it still locked."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        if self._confined:
            confine.let_go(self.path)
            self._confined = False

    def open_existing(self, required: tuple[str, ...]) -> DictConfig:
        """Check that this is a run dir of its experiment holding ``required`` (besides its config),
        read its saved config, then lock it and remove the leftovers of writes a kill cut short;
        one-line UserError otherwise; a link that leads out of the dir is refused before anything
        is read or written (:func:`~audit.io.confine.refuse_links_out`). Returns the saved config."""
        fix = f"pass a run directory written by `python -m {ENTRYPOINTS[self.experiment]}`"
        if not self.path.is_dir():
            raise UserError(f"resume: {str(self.path)!r} does not exist; {fix}")
        if not self.config_path.is_file() and (self.path / LOCK_NAME).is_file() and not _saved_files(self.path):
            # made by a version that created the dir before saving its config, and killed in between
            raise UserError(f"resume: {str(self.path)!r} was stopped before its {CONFIG} was saved, so nothing "
                            "ran in it; delete it and start the run again")
        if not self.config_path.is_file() or not all((self.path / name).exists() for name in required):
            raise UserError(f"resume: {str(self.path)!r} is not a run directory "
                            f"(no {' and '.join((CONFIG, *required))}); {fix}")
        confine.refuse_links_out(self.path)
        saved = load_saved_config(self.config_path)
        self.lock()  # before touching anything: another process may be running this dir
        remove_partial_writes(self.path)  # a write the kill interrupted; the files it targeted are intact
        return saved

    def read_summary(self) -> CensorshipSummary | EpistemicSummary | None:
        """The saved summary (None when there is none yet); a damaged one is a one-line UserError."""
        if not self.summary_path.exists():
            return None
        try:
            return parse_summary(read_json(self.summary_path), self.experiment)
        except (ValueError, UnicodeDecodeError) as exc:
            raise UserError(f"resume: {self.summary_path} is damaged ({getattr(exc, 'problem', exc)}); delete it and "
                            "resume again: "
                            "it is rebuilt from the saved files") from None

    def write_summary(self, summary: Header) -> None:
        write_summary(self.summary_path, summary)


def _saved_files(path: Path) -> list[Path]:
    """Files a run has written, leaving out the lock and the temporary files of cut writes."""
    return [p for p in walk.files(path, hidden=True) if not p.name.startswith(".")]
