"""The run directory: its layout, atomic writes into it, and the scan that resumes it.

Layout (spec + contract)::

    <output_dir>/<audited>_<topic>_<YYYY-MM-DDTHH-MM-SS>/
        config.yaml  summary.json  usage.json  report.html
        auditor_turns/NNN.json  audited_responses/NNN.json

Auditor turn k designs probe k; response k answers it; turn k+1 analyses response k.
Every file is written atomically, so a killed run leaves only whole files and the scan
can trust what it finds: iteration k is complete when turn k and response k both exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from omegaconf import DictConfig, OmegaConf

from audit.errors import UserError
from audit.io.atomic import new_directory, read_json, remove_partial_writes, write_json, write_text
from audit.io.lock import hold_lock
from audit.io.names import path_component
from audit.resume import load_saved_config

TURNS = "auditor_turns"
RESPONSES = "audited_responses"
CONFIG = "config.yaml"
SUMMARY = "summary.json"
USAGE = "usage.json"
_NUMBERED = re.compile(r"^(\d{3,})\.json$")


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    """Spec timestamp format: ``2024-01-15T10:30:05Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_dir_name(audited: str, topic: str, moment: datetime) -> str:
    """``<audited>_<topic>_<YYYY-MM-DDTHH-MM-SS>`` (UTC; no colons, so it is a valid path everywhere).

    Both names are checked to be single safe path components, so the run dir stays inside
    ``output_dir`` whatever the config says.
    """
    audited, topic = path_component(audited, "audited.name"), path_component(topic, "topic.name")
    return f"{audited}_{topic}_{moment.astimezone(timezone.utc).strftime('%Y-%m-%dT%H-%M-%S')}"


def fresh_run_path(parent: Path, audited: str, topic: str, moment: datetime) -> Path:
    """A run dir path under ``parent`` that does not exist yet (``-2``, ``-3`` ... on a same-second clash)."""
    base = parent / run_dir_name(audited, topic, moment)
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def numbered(n: int) -> str:
    return f"{n:03d}.json"


@dataclass
class Saved:
    """What a run dir holds: consecutive turns and responses from 1, keyed by iteration."""

    turns: dict[int, dict[str, Any]] = field(default_factory=dict)
    responses: dict[int, dict[str, Any]] = field(default_factory=dict)


class RunDir:
    """Paths and atomic writers of one run directory."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock: IO[str] | None = None  # held open while this process runs the dir

    def lock(self) -> None:
        """Hold the run dir for this process (see :mod:`audit.io.lock`); a second runner gets one line."""
        self._lock = hold_lock(self.path, f"resume={self.path}")

    def release(self) -> None:
        """Let go of the run dir once this process is done with it, whatever the outcome. Waiting
        for the object to be collected is not enough: a failed run's traceback keeps it alive, so
        a resume in the same process (samples=k, a notebook, a test) would find it still locked."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY

    @property
    def usage_path(self) -> Path:
        return self.path / USAGE

    def turn_path(self, iteration: int) -> Path:
        return self.path / TURNS / numbered(iteration)

    def response_path(self, iteration: int) -> Path:
        return self.path / RESPONSES / numbered(iteration)

    def create(self, cfg: DictConfig) -> None:
        """Make the directory tree with the resolved config saved (the key is never in it), locked.

        The directory appears whole (:func:`~audit.io.atomic.new_directory`): a kill while it is
        made leaves no run dir rather than one without its config, which could not be resumed.
        The run dir must be new: another run started in the same second may have taken the name
        since :func:`fresh_run_path` chose it, and two runs must never write into one directory.
        """
        try:
            with new_directory(self.path) as building:
                self._lock = hold_lock(building, f"resume={self.path}")
                (building / TURNS).mkdir()
                (building / RESPONSES).mkdir()
                write_text(building / CONFIG, OmegaConf.to_yaml(cfg, resolve=True))
        except FileExistsError as exc:
            if exc.filename != str(self.path):  # a file where output_dir should be: reported as such
                raise
            raise UserError(f"{self.path} was just created by another run; start this one again") from None

    def write_turn(self, iteration: int, record: dict[str, Any]) -> None:
        write_json(self.turn_path(iteration), record)

    def write_response(self, iteration: int, record: dict[str, Any]) -> None:
        write_json(self.response_path(iteration), record)

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json(self.summary_path, summary)

    def read_summary(self) -> dict[str, Any] | None:
        if not self.summary_path.exists():
            return None
        return _read_saved(self.summary_path, "delete it and resume again: it is rebuilt from the saved turns")

    def scan(self) -> Saved:
        """Load the consecutive run of turns and of responses starting at 001.

        Anything after a gap cannot belong to a consistent history (files are written in
        iteration order), so it is ignored; leftover ``.tmp`` files are never read.
        """
        return Saved(turns=_consecutive(self.path / TURNS), responses=_consecutive(self.path / RESPONSES))


def _consecutive(folder: Path) -> dict[int, dict[str, Any]]:
    found = {}
    if folder.is_dir():
        for entry in folder.iterdir():
            match = _NUMBERED.match(entry.name)
            if match:
                found[int(match.group(1))] = entry
    records: dict[int, dict[str, Any]] = {}
    n = 1
    while n in found:
        records[n] = _read_saved(found[n], "restore it, or delete it and the files numbered after it "
                                           "so that resume does those steps again")
        n += 1
    return records


def _saved_files(path: Path) -> list[Path]:
    """Files a run has written, leaving out the lock and the temporary files of cut writes."""
    return [p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")]


def _read_saved(path: Path, fix: str) -> dict[str, Any]:
    """A JSON object the run saved; a file damaged outside the program (every write is atomic, so
    a kill cannot truncate one) is a one-line :class:`UserError` naming it and ``fix``."""
    try:
        record = read_json(path)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"resume: {path} is damaged ({exc}); {fix}") from None
    if not isinstance(record, dict):
        raise UserError(f"resume: {path} is damaged (not a JSON object); {fix}")
    return record


def open_existing(path: str | Path) -> tuple[RunDir, DictConfig]:
    """Open a run dir to resume it: its saved config, or a one-line :class:`UserError`."""
    run_dir = RunDir(Path(path).expanduser().absolute())
    if not run_dir.path.is_dir():
        raise UserError(f"resume: {str(path)!r} does not exist; pass a run directory written by `python -m audit`")
    if not run_dir.config_path.is_file() and (run_dir.path / ".lock").is_file() and not _saved_files(run_dir.path):
        # made by a version that created the dir before saving its config, and killed in between
        raise UserError(f"resume: {str(path)!r} was stopped before its {CONFIG} was saved, so nothing ran in it; "
                        "delete it and start the run again")
    if not run_dir.config_path.is_file() or not (run_dir.path / TURNS).is_dir():
        raise UserError(
            f"resume: {str(path)!r} is not a run directory (no {CONFIG} and {TURNS}/); "
            "pass a directory written by `python -m audit`"
        )
    saved = load_saved_config(run_dir.config_path)
    run_dir.lock()  # before touching anything: another process may be running this dir
    remove_partial_writes(run_dir.path)  # a write the kill interrupted; the files it targeted are intact
    return run_dir, saved
