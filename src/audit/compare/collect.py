"""Find run directories under the paths the user gives and read what they recorded.

A run directory is any directory holding a ``summary.json``: both experiments write one,
and a failed sweep job leaves one with ``status: error`` in its job directory (Hydra skips
``on_multirun_end`` when a job fails, so this file is the only trace the aggregate step
can count on). The walk is recursive, so a single run, an ``outputs/`` tree and a
``multirun/<date>/`` sweep with numbered job dirs are all handled the same way.

Nothing is dropped silently: a file that cannot be read becomes a :class:`Failure` that
names the file and the problem, and the comparison lists it. So does a run that did not
finish: ``interrupted`` (Ctrl-C or SIGTERM), ``killed`` (its summary still says running, or
it has none, and no process holds its lock) or still ``running`` (a process holds the lock),
each with what is on disk and the command that continues it; never as a result with 0
iterations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.errors import UserError
from audit.io.atomic import read_json
from audit.io.journal import read_records
from audit.io.lock import lock_holder

SUMMARY = "summary.json"
METRICS = "metrics.json"
CONFIG = "config.yaml"
CENSORSHIP, EPISTEMIC, UNKNOWN = "censorship", "epistemic", "unknown"
# Files only one experiment writes: how a run says which kind it is.
_CENSORSHIP_DIRS = ("auditor_turns", "audited_responses")
_EPISTEMIC_FILES = (METRICS, "cards.jsonl", "results.jsonl")


@dataclass(frozen=True)
class Run:
    """A run directory whose ``summary.json`` (and ``metrics.json``, if any) parsed."""

    path: Path
    label: str  # short, readable name: the path from the given dir's parent
    kind: str
    summary: Mapping[str, Any]
    metrics: Mapping[str, Any] | None = None

    @property
    def status(self) -> str:
        return str(self.summary.get("status") or "unknown")


@dataclass(frozen=True)
class Failure:
    """A run that failed, or a file the comparison could not use, with the reason."""

    path: Path
    label: str
    kind: str
    status: str
    problem: str


@dataclass
class Collected:
    runs: list[Run] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)


def natural_key(path: Path) -> tuple[tuple[int, int | str], ...]:
    """Sort key that puts sweep job 2 before job 10 (numbers compare as numbers)."""
    return tuple((0, int(piece)) if piece.isdigit() else (1, piece)
                 for part in path.parts for piece in re.split(r"(\d+)", part) if piece)


def find_run_dirs(root: Path) -> list[Path]:
    """Every directory under ``root`` (``root`` included) that holds a ``summary.json``, or a
    saved config beside an experiment's files (a run killed before its first summary), in
    natural order. Hidden directories (``.hydra``, a run dir killed while it was built) are
    no runs."""
    found = {p.parent for p in root.rglob(SUMMARY) if p.is_file()}
    found |= {p.parent for p in root.rglob(CONFIG)
              if any((p.parent / name).exists() for name in (*_CENSORSHIP_DIRS, *_EPISTEMIC_FILES))}
    return sorted((d for d in found if not any(part.startswith(".") for part in d.relative_to(root).parts)),
                  key=natural_key)


def run_kind(directory: Path, summary: Mapping[str, Any]) -> str:
    """Which experiment wrote ``directory``: by the files present, else by the summary's keys
    (a failed epistemic sweep job leaves only ``status``, ``stage`` and ``error``)."""
    if any((directory / d).is_dir() for d in _CENSORSHIP_DIRS):
        return CENSORSHIP
    if any((directory / f).is_file() for f in _EPISTEMIC_FILES):
        return EPISTEMIC
    if "stage" in summary:
        return EPISTEMIC
    config = summary.get("config")
    if "totals" in summary or (isinstance(config, Mapping) and "topic" in config):
        return CENSORSHIP
    return UNKNOWN


def _read_object(path: Path) -> Mapping[str, Any]:
    """A JSON object from ``path``; ValueError with a short reason otherwise."""
    try:
        data = read_json(path)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name}: unreadable ({exc})") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"{path.name}: expected a JSON object, found {type(data).__name__}")
    return data


def on_disk(directory: Path, kind: str, summary: Mapping[str, Any]) -> str:
    """What an unfinished run holds, counted from its files (its summary may predate them)."""
    if kind == CENSORSHIP:
        responses = directory / _CENSORSHIP_DIRS[1]
        done = sum(1 for p in responses.glob("*.json")) if responses.is_dir() else 0
        return f"{done} iteration(s) on disk"
    if kind == EPISTEMIC:
        answers = len(read_records(directory / "answers.jsonl"))
        expected = summary.get("expected_answers")
        return f"{answers}{'' if expected is None else f'/{expected}'} answers on disk"
    return "partial files on disk"


def unfinished(directory: Path, label: str, kind: str, summary: Mapping[str, Any] | None) -> Failure | None:
    """The row for a run that did not finish (see the module doc), or None for one that did."""
    status = None if summary is None else summary.get("status")
    interrupted = status == "interrupted" or (status == "error" and summary.get("error") == "interrupted")
    if summary is not None and status != "running" and not interrupted:
        return None
    holder = lock_holder(directory)
    if holder is not None:
        return Failure(directory, label, kind, "running", f"still running ({holder}); compare again when it ends")
    entrypoint = "audit" if kind == CENSORSHIP else "audit.epistemic"
    how = ("interrupted" if interrupted else
           "killed: its summary still says running" if summary is not None else "killed before its first summary")
    return Failure(directory, label, kind, "interrupted" if interrupted else "killed",
                   f"{how}; {on_disk(directory, kind, summary or {})}; "
                   f"continue with: python -m {entrypoint} resume={directory}")


def read_run(directory: Path, label: str) -> Run | Failure:
    """Read one run directory; a run with ``status: error``, an unfinished run or an unreadable
    file is a Failure."""
    if not (directory / SUMMARY).is_file():
        kind = run_kind(directory, {})
        return unfinished(directory, label, kind, None) or Failure(directory, label, kind, "killed", "no summary.json")
    try:
        summary = _read_object(directory / SUMMARY)
    except ValueError as exc:
        return Failure(directory, label, run_kind(directory, {}), "unreadable", str(exc))
    kind = run_kind(directory, summary)
    status = str(summary.get("status") or "unknown")
    stopped = unfinished(directory, label, kind, summary)
    if stopped is not None:
        return stopped
    if status == "error":
        return Failure(directory, label, kind, status, str(summary.get("error") or "no error message recorded"))
    metrics = None
    if kind == EPISTEMIC and (directory / METRICS).is_file():
        try:
            metrics = _read_object(directory / METRICS)
        except ValueError as exc:
            return Failure(directory, label, kind, "unreadable", str(exc))
    return Run(directory, label, kind, summary, metrics)


def collect(roots: Sequence[Path]) -> Collected:
    """Read every run under each of ``roots`` (each run once, even if two roots overlap).

    Raises UserError when a root does not exist or holds no run: a typo'd path should not
    produce an empty report.
    """
    seen: set[Path] = set()
    out = Collected()
    for root in roots:
        if not root.is_dir():
            raise UserError(f"{root} is not a directory; pass a run dir, outputs/ or a multirun/ sweep dir")
        found = find_run_dirs(root)
        if not found:
            raise UserError(f"no runs found under {root}; pass a run dir, outputs/ or a multirun/ sweep dir")
        base = root.resolve().parent
        for directory in found:
            resolved = directory.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            item = read_run(resolved, str(resolved.relative_to(base)))
            (out.failures if isinstance(item, Failure) else out.runs).append(item)
    return out

