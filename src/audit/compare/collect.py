"""The runs a comparison reads, from :mod:`audit.record` (which finds and reads run dirs).

Nothing is dropped silently: a file that cannot be read becomes a :class:`Failure` that
names the file and the problem, and the comparison lists it. So does a run that did not
finish: ``cancelled`` (Ctrl-C or SIGTERM), ``killed`` (its summary still says started, or it
has none, and no process holds its lock) or still ``running`` (a process holds the lock),
each with what is on disk and the command that continues it; never as a result with 0
iterations. A run stopped by its budget and an epistemic run whose answers are mostly errors
are results (their tables say so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from audit.io.atomic import read_json_saved
from audit.io.frames import records_frame
from audit.epistemic.used_systems import RECORD
from audit.errors import UserError
from audit.record.answers import Metrics
from audit.runs.loading import RunFiles, load_runs
from audit.runs.tables import ANSWER_COLUMNS, answer_rows
from audit.record.run_record import UNKNOWN, RunRecord, load_run, natural_key
from audit.record.draws import ORIGINAL, Draw
from audit.record.judgings import RunJudging, judged_draws, original_judging, read_judgings
from audit.record.rundir import CONFIG, load_saved_config
from audit.record.summary import BENCHMARK, CENSORSHIP, EPISTEMIC, CensorshipSummary, EpistemicSummary

METRICS = "metrics.json"
__all__ = ["CENSORSHIP", "EPISTEMIC", "UNKNOWN", "Collected", "Failure", "Run", "collect", "epistemic_answers", "natural_key", "read_run"]


@dataclass(frozen=True)
class Run:
    """A run whose ``summary.json`` (and ``metrics.json``, if any) parsed."""

    path: Path
    label: str  # short, readable name: the path from the given dir's parent
    kind: str
    summary: CensorshipSummary | EpistemicSummary
    metrics: Metrics | None = None
    config: DictConfig | None = None  # an epistemic or benchmark run's saved config.yaml (None: it saved none)
    systems: Mapping[str, Any] | None = None  # its systems.json, each system as it ran (None: written before)
    draws: tuple[Draw, ...] = ()  # an audit's saved draws, each with its label under every judging
    judgings: Mapping[str, RunJudging] = field(default_factory=dict)  # an audit's judgings by name (original first)

    @property
    def status(self) -> str:
        return self.summary.status.value


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
    loaded: list[RunFiles] = field(default_factory=list)  # every run found, for the per-row tables


def _read_object(path: Path) -> Mapping[str, Any]:
    """A JSON object from ``path``; ValueError with a short reason otherwise."""
    data = read_json_saved(path)
    if not isinstance(data, Mapping):
        raise ValueError(f"{path.name}: expected a JSON object, found {type(data).__name__}")
    return data


def as_result(record: RunRecord, label: str) -> Run | Failure:
    """A run the tables use, or the failed-runs row that says why not."""
    if record.summary is None or (record.problem is not None and record.summary.stop_reason != "mostly_errors"):
        return Failure(record.path, label, record.experiment, record.state, record.problem or "no summary.json")
    metrics = config = systems = None
    if record.experiment == BENCHMARK:
        try:  # what its target and reference were sent (audit.compare.answer_settings): its cells' key
            config = load_saved_config(record.path / CONFIG) if (record.path / CONFIG).is_file() else None
        except (UserError, ValueError) as exc:
            return Failure(record.path, label, record.experiment, "unreadable", str(exc))
    if record.experiment == EPISTEMIC:
        try:
            if (record.path / METRICS).is_file():
                metrics = Metrics.read(_read_object(record.path / METRICS))
            # what each system was asked, and how (audit.compare.answer_settings): its cells' key
            if (record.path / CONFIG).is_file():
                config = load_saved_config(record.path / CONFIG)
            if (record.path / RECORD).is_file():
                systems = _read_object(record.path / RECORD)
        except (UserError, ValueError) as exc:
            return Failure(record.path, label, record.experiment, "unreadable", str(exc))
    own = {ORIGINAL: original_judging(record.summary)} if isinstance(record.summary, CensorshipSummary) else {}
    return Run(record.path, label, record.experiment, record.summary, metrics, config, systems=systems, judgings=own)


def read_run(directory: Path, label: str) -> Run | Failure:
    """Read one run directory; a failed or unfinished run, or an unreadable file, is a Failure."""
    return as_result(load_run(directory), label)


def judged(run: Run, files: RunFiles) -> Run:
    """An audit run with its judgings (its own, :data:`~audit.record.draws.ORIGINAL`, and each rescore's)
    and its draws, each labelled under every judging (:func:`audit.record.judgings.judged_draws`).
    Draws that cannot be read leave the run without draws: its own judging is then counted from its
    summary, and a rescore's not at all (the run joins the failed runs, saying why)."""
    judgings = {**run.judgings, **read_judgings(run.path)}
    try:
        draws = tuple(judged_draws(files.draws, judgings))
    except (UserError, ValueError):
        draws = ()
    return replace(run, draws=draws, judgings=judgings)


def collect(roots: Sequence[Path]) -> Collected:
    """Read every run under each of ``roots`` (each run once, even if two roots overlap).

    Raises UserError when a root does not exist or holds no run: a typo'd path should not
    produce an empty report.
    """
    out = Collected()
    for loaded in load_runs(roots):
        item = as_result(loaded.record, loaded.label)
        if isinstance(item, Run) and item.kind == CENSORSHIP:
            item = judged(item, loaded)
        (out.failures if isinstance(item, Failure) else out.runs).append(item)
        out.loaded.append(loaded)
    return out


def epistemic_answers(collected: Collected) -> pd.DataFrame:
    """Every answer of the epistemic runs found (the per-answer table), for the matrix's
    card-clustered intervals. A run whose answers cannot be read adds none: its cells then keep
    the per-run totals (the recount against metrics.json fails), never a partial set."""
    rows: list[dict[str, Any]] = []
    for run in collected.loaded:
        if run.experiment == EPISTEMIC:
            try:
                rows += answer_rows(run)
            except (UserError, ValueError):
                continue
    return records_frame(rows, ANSWER_COLUMNS)
