"""Every read of a run directory's files that the tables and the Inspect export make, in one place.

The tables (:mod:`audit.runs.tables`) and the export (:mod:`audit.export`) never open a run's
files themselves: they get :class:`RunFiles` from :func:`load_runs` and ask it for what they
need. Which directories are runs, their experiment, typed summary and state come from the run
record (:func:`audit.record.run_record.load_run`); this module adds the records beside the summary
(an audit's responses and turns, an epistemic run's answers and cards, ``usage.json``), each
read on first use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any

from audit.censorship.run_dir import RESPONSES, TURNS, consecutive
from audit.errors import UserError
from audit.io.atomic import read_json
from audit.io.journal import read_records
from audit.record.answers import Answer, Card, cards_by_id
from audit.record.draws import Draw, run_draws
from audit.record.run_record import UNREADABLE, RunRecord, find_run_dirs, load_run
from audit.record.rundir import CONFIG, USAGE
from audit.record.summary import CENSORSHIP, EPISTEMIC, CensorshipSummary, EpistemicSummary

RESULTS, ANSWERS, CARDS = "results.jsonl", "answers.jsonl", "cards.jsonl"


@dataclass(frozen=True)
class RunFiles:
    """One run as recorded (:class:`~audit.record.run_record.RunRecord`), and its records read on first use."""

    record: RunRecord
    label: str  # the path from the given directory's parent, as audit.compare names runs

    @property
    def path(self) -> Path:
        return self.record.path

    @property
    def experiment(self) -> str:
        return self.record.experiment

    @property
    def state(self) -> str:
        """started / success / cancelled / error, or running / killed / unreadable (see RunRecord)."""
        return self.record.state

    @property
    def problem(self) -> str | None:
        return self.record.problem

    @property
    def audit(self) -> CensorshipSummary | None:
        summary = self.record.summary
        return summary if isinstance(summary, CensorshipSummary) else None

    @property
    def epistemic(self) -> EpistemicSummary | None:
        summary = self.record.summary
        return summary if isinstance(summary, EpistemicSummary) else None

    @property
    def config(self) -> Mapping[str, Any]:
        """The resolved config an audit or a benchmark run saved in its summary ({} for an epistemic run)."""
        config = getattr(self.record.summary, "config", None)
        return config if isinstance(config, Mapping) else {}

    @cached_property
    def started_at(self) -> str | None:
        """When the run started: its summary's ``started_at`` or, for a run whose summary has none
        (older epistemic runs, runs killed before their summary), when its config was saved (UTC)."""
        summary = self.record.summary
        if summary is not None and summary.started_at:
            return summary.started_at
        try:
            saved = (self.path / CONFIG).stat().st_mtime
        except OSError:  # no config, or the run dir was removed as it was read
            return None
        return datetime.fromtimestamp(saved, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    @cached_property
    def damage(self) -> str | None:
        """Why this run's saved records cannot be read, in one line naming the file (None: they can).

        Commands that go through many runs (export, rescore) skip such a run, name it, and carry
        on with the others: one damaged run dir must not stop the good ones beside it.
        """
        if self.state == UNREADABLE:
            return self.problem
        try:
            for records in ("responses", "turns", "usage", "answers", "cards"):
                getattr(self, records)
        except (UserError, ValueError) as exc:
            return str(exc)
        return None

    @cached_property
    def responses(self) -> list[dict[str, Any]]:
        """An audit's saved target responses, iteration 1, 2, ... (none for an epistemic run)."""
        return _numbered(self.path / RESPONSES) if self.experiment == CENSORSHIP else []

    @cached_property
    def draws(self) -> list[Draw]:
        """An audit's target draws, typed, in order: a fixed technique's responses and baselines and an
        auto run's draws in one shape (:func:`audit.record.draws.iteration_draws`)."""
        technique = (self.audit.technique if self.audit else None) or \
            (self.config.get("technique") or {}).get("name")
        return run_draws(self.responses, technique)

    @cached_property
    def turns(self) -> dict[int, dict[str, Any]]:
        """An audit's saved auditor turns by iteration (turn k designed probe k). Read only when
        asked: each holds the conversation so far, so they are most of a run's bytes."""
        return dict(enumerate(_numbered(self.path / TURNS), 1)) if self.experiment == CENSORSHIP else {}

    @cached_property
    def answers(self) -> list[Answer]:
        """An epistemic run's answers, typed (:class:`~audit.record.answers.Answer`, each completed from
        its card): ``results.jsonl`` once it finished, else the answers an interrupted run journalled so far."""
        if self.experiment != EPISTEMIC:
            return []
        results = self.path / RESULTS
        rows = read_records(results if results.is_file() else self.path / ANSWERS)
        return [Answer.of(row, self.cards.get(str(row.get("id")))) for row in rows]

    @cached_property
    def cards(self) -> dict[str, Card]:
        """An epistemic run's cards by id (question, facts, label, suite), typed."""
        return cards_by_id(read_records(self.path / CARDS))

    @cached_property
    def usage(self) -> Mapping[str, Any]:
        """``usage.json`` (totals, by_model, calls), or {} when the run was stopped before writing it;
        ValueError naming the file when it is damaged."""
        path = self.path / USAGE
        if not path.is_file():
            return {}
        try:
            data = read_json(path)
        except (ValueError, UnicodeDecodeError, OSError) as exc:
            raise ValueError(f"{path}: unreadable ({getattr(exc, 'problem', exc)})") from None
        return data if isinstance(data, Mapping) else {}


def _numbered(folder: Path) -> list[dict[str, Any]]:
    """The records ``001.json``, ``002.json`` ... of one folder, up to the first gap, read as resume
    reads them (a damaged file is a one-line UserError naming it)."""
    records = consecutive(folder)
    return [records[k] for k in sorted(records)]


def load_runs(dirs: Sequence[Path]) -> list[RunFiles]:
    """Every run under each of ``dirs`` (a run dir, an ``outputs/`` tree or a sweep dir), each
    once, in natural order, whatever its state (a failed, unfinished or unreadable run is there,
    saying so); a directory that does not exist or holds no run is a one-line :class:`UserError`."""
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
                record = load_run(resolved)
                if resolved.is_dir():  # not removed while it was read
                    runs.append(RunFiles(record, str(resolved.relative_to(base))))
    return runs
