"""Every read of a run directory's files that the tables and the Inspect export make, in one place.

The tables (:mod:`audit.runs.tables`) and the export (:mod:`audit.export`) never open a run's
files themselves: they get :class:`RunFiles` from :func:`load_runs` and ask it for the records
they need. So the way a run is read (which directories are runs, what their status is, where
responses, answers and usage live) is decided here and only here, by the helpers that
``audit.compare`` already uses to find and classify runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any

from audit.censorship.run_dir import RESPONSES, TURNS, _consecutive
from audit.compare.collect import CENSORSHIP, CONFIG, EPISTEMIC, SUMMARY, find_run_dirs, run_kind, unfinished
from audit.errors import UserError
from audit.io.atomic import read_json
from audit.io.journal import read_records

RESULTS, ANSWERS, CARDS, USAGE = "results.jsonl", "answers.jsonl", "cards.jsonl", "usage.json"


@dataclass(frozen=True)
class RunFiles:
    """One run directory: what its summary says, and its records read on first use."""

    path: Path
    label: str          # the path from the given directory's parent, as audit.compare names runs
    experiment: str     # censorship | epistemic | unknown
    status: str         # the summary's status, or interrupted / killed / running / unreadable
    summary: Mapping[str, Any] = field(default_factory=dict)
    problem: str | None = None  # why the summary could not be read, or what stopped the run

    @property
    def config(self) -> Mapping[str, Any]:
        """The resolved config an audit saved in its summary ({} for an epistemic run)."""
        config = self.summary.get("config")
        return config if isinstance(config, Mapping) else {}

    @cached_property
    def started_at(self) -> str | None:
        """When the run started: its summary's ``started_at`` or, for a run whose summary has none
        (epistemic runs, runs killed before their summary), when its config was saved (UTC, ISO)."""
        stamp = self.summary.get("started_at")
        if isinstance(stamp, str) and stamp:
            return stamp
        config = self.path / CONFIG
        if not config.is_file():
            return None
        return datetime.fromtimestamp(config.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    @cached_property
    def responses(self) -> list[dict[str, Any]]:
        """An audit's saved target responses, iteration 1, 2, ... (none for an epistemic run)."""
        return _numbered(self.path / RESPONSES) if self.experiment == CENSORSHIP else []

    @cached_property
    def turns(self) -> dict[int, dict[str, Any]]:
        """An audit's saved auditor turns by iteration (turn k designed probe k). Read only when
        asked: each holds the conversation so far, so they are most of a run's bytes."""
        return dict(enumerate(_numbered(self.path / TURNS), 1)) if self.experiment == CENSORSHIP else {}

    @cached_property
    def answers(self) -> list[dict[str, Any]]:
        """An epistemic run's answers: ``results.jsonl`` once it finished, else the answers an
        interrupted run journalled so far."""
        if self.experiment != EPISTEMIC:
            return []
        results = self.path / RESULTS
        return read_records(results if results.is_file() else self.path / ANSWERS)

    @cached_property
    def cards(self) -> dict[str, dict[str, Any]]:
        """An epistemic run's cards by id (question, facts, label, suite)."""
        return {str(c.get("id")): c for c in read_records(self.path / CARDS)}

    @cached_property
    def usage(self) -> Mapping[str, Any]:
        """``usage.json`` (totals, by_model, calls), or {} when the run was stopped before writing it."""
        path = self.path / USAGE
        if not path.is_file():
            return {}
        data = _read_object(path)
        return data if isinstance(data, Mapping) else {}


def _numbered(folder: Path) -> list[dict[str, Any]]:
    """The records ``001.json``, ``002.json`` ... of one folder, up to the first gap, read as resume
    reads them (a damaged file is a one-line UserError naming it)."""
    records = _consecutive(folder)
    return [records[k] for k in sorted(records)]


def _read_object(path: Path) -> Any:
    try:
        return read_json(path)
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        raise ValueError(f"{path.name}: unreadable ({exc})") from None


def read_run(directory: Path, label: str) -> RunFiles:
    """One run dir, whatever its state: an unreadable summary or an unfinished run is a
    :class:`RunFiles` whose status says so (a table shows it; it is never dropped)."""
    summary: Mapping[str, Any] | None = None
    problem = None
    if (directory / SUMMARY).is_file():
        try:
            data = _read_object(directory / SUMMARY)
        except ValueError as exc:
            return RunFiles(directory, label, run_kind(directory, {}), "unreadable", {}, str(exc))
        if not isinstance(data, Mapping):
            return RunFiles(directory, label, run_kind(directory, {}), "unreadable", {},
                            f"{SUMMARY}: expected a JSON object")
        summary = data
    experiment = run_kind(directory, summary or {})
    stopped = unfinished(directory, label, experiment, summary)
    if stopped is not None:
        status, problem = stopped.status, stopped.problem
    else:
        status = str((summary or {}).get("status") or "unknown")
        if status == "error":
            problem = str((summary or {}).get("error") or "no error message recorded")
    return RunFiles(directory, label, experiment, status, summary or {}, problem)


def load_runs(dirs: Sequence[Path]) -> list[RunFiles]:
    """Every run under each of ``dirs`` (a run dir, an ``outputs/`` tree or a sweep dir), each
    once, in natural order; a directory that does not exist or holds no run is a one-line
    :class:`UserError`."""
    seen: set[Path] = set()
    runs = []
    for root in map(Path, dirs):
        if not root.is_dir():
            raise UserError(f"{root} is not a directory; pass a run dir, outputs/ or a multirun/ sweep dir")
        found = find_run_dirs(root)
        if not found:
            raise UserError(f"no runs found under {root}; pass a run dir, outputs/ or a multirun/ sweep dir")
        base = root.resolve().parent
        for directory in found:
            resolved = directory.resolve()
            if resolved not in seen:
                seen.add(resolved)
                runs.append(read_run(resolved, str(resolved.relative_to(base))))
    return runs
