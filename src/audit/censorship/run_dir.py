"""The files of a censorship audit inside its run dir (:class:`audit.record.RunDir`), and the scan
that resumes it.

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
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.io import walk
from audit.io.atomic import write_json, write_text
from audit.jobs.resume import read_saved
from audit.record.rundir import CONFIG, RunDir, fresh_run_path
from audit.record.summary import CENSORSHIP

TURNS = "auditor_turns"
RESPONSES = "audited_responses"
SUPERSEDED = ".superseded"
"""Suffix of a final turn set aside when a finished audit is extended (never read by the scan)."""
_NUMBERED = re.compile(r"^(\d{3,})\.json$")


def numbered(n: int) -> str:
    return f"{n:03d}.json"


@dataclass
class Saved:
    """What a run dir holds: consecutive turns and responses from 1, keyed by iteration."""

    turns: dict[int, dict[str, Any]] = field(default_factory=dict)
    responses: dict[int, dict[str, Any]] = field(default_factory=dict)


class AuditDir(RunDir):
    """A censorship audit's run dir: its turns and responses besides the shared files."""

    def __init__(self, path: Path):
        super().__init__(path, CENSORSHIP)

    @classmethod
    def new(cls, parent: Path, audited: object, topic: object) -> AuditDir:
        """A fresh (not yet created) run dir under ``parent``."""
        return cls(fresh_run_path(parent, {"audited.name": audited, "topic.name": topic}))

    def turn_path(self, iteration: int) -> Path:
        return self.path / TURNS / numbered(iteration)

    def response_path(self, iteration: int) -> Path:
        return self.path / RESPONSES / numbered(iteration)

    def create_with(self, cfg: DictConfig) -> None:
        """Make the run dir with the resolved config saved (the key is never in it), locked."""
        def fill(building: Path) -> None:
            (building / TURNS).mkdir()
            (building / RESPONSES).mkdir()
            write_text(building / CONFIG, OmegaConf.to_yaml(cfg, resolve=True))

        self.create(fill)

    def write_turn(self, iteration: int, record: dict[str, Any]) -> None:
        write_json(self.turn_path(iteration), record)

    def write_response(self, iteration: int, record: dict[str, Any]) -> None:
        write_json(self.response_path(iteration), record)

    def set_aside_turn(self, iteration: int) -> Path:
        """Rename turn ``iteration`` out of the scan's sight (kept for the record) and return where."""
        path = self.turn_path(iteration)
        target = path.with_name(f"{path.stem}{SUPERSEDED}.json")
        n = 1
        while target.exists():
            n += 1
            target = path.with_name(f"{path.stem}{SUPERSEDED}-{n}.json")
        path.rename(target)
        return target

    def scan(self) -> Saved:
        """Load the consecutive run of turns and of responses starting at 001.

        Anything after a gap cannot belong to a consistent history (files are written in
        iteration order), so it is ignored; leftover ``.tmp`` files are never read.
        """
        return Saved(turns=consecutive(self.path / TURNS), responses=consecutive(self.path / RESPONSES))


def consecutive(folder: Path) -> dict[int, dict[str, Any]]:
    """The records ``001.json``, ``002.json`` ... of ``folder`` by number, up to the first gap (what
    a resume continues from, and what the readers of run dirs read); a damaged file is one line."""
    found = {}
    for name in walk.names(folder):  # none when the folder is missing, or was removed as it was read
        match = _NUMBERED.match(name)
        if match:
            found[int(match.group(1))] = folder / name
    records: dict[int, dict[str, Any]] = {}
    n = 1
    while n in found:
        records[n] = read_saved(found[n], "restore it, or delete it and the files numbered after it "
                                           "so that resume does those steps again")
        n += 1
    return records


def open_existing(path: str | Path) -> tuple[AuditDir, DictConfig]:
    """Open a run dir to resume it: locked, with its saved config, or a one-line :class:`UserError`."""
    run_dir = AuditDir(Path(path).expanduser().absolute())
    return run_dir, run_dir.open_existing((TURNS,))
