"""Finding runs on disk and reading each into a :class:`RunRecord`: the one reader of run dirs.

A run directory is any directory holding a ``summary.json`` (both experiments write one, and a
failed sweep job leaves a header-only *stub* in its job dir: Hydra skips ``on_multirun_end``
when a job raises, so this file is the only trace the aggregate step can count on), or a
saved config beside an experiment's files (a run killed before its first summary). The walk
is recursive, so a single run, an ``outputs/`` tree and a ``multirun/<date>/`` sweep with
numbered job dirs are found the same way.

Reading judges what the files alone cannot say: a summary still ``started`` is a run that is
``running`` when a process holds its lock, else one that was ``killed``. Nothing is dropped
silently: an unreadable summary is a record with state ``unreadable`` and the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from audit.io import walk
from audit.io.journal import read_records
from audit.io.lock import lock_holder
from audit.record.rundir import CONFIG
from audit.record.status import Status
from audit.record.summary import (BENCHMARK, CENSORSHIP, ENTRYPOINTS, EPISTEMIC, SUMMARY, CensorshipSummary, EpistemicSummary,
                                read_summary)

UNKNOWN = "unknown"
RUNNING, KILLED, UNREADABLE = "running", "killed", "unreadable"
"""States a reader adds to the on-disk statuses (:class:`~audit.record.status.Status`)."""
# Files only one experiment writes: how a run dir says which kind it is.
_CENSORSHIP_DIRS = ("auditor_turns", "audited_responses")
_EPISTEMIC_FILES = ("metrics.json", "cards.jsonl", "results.jsonl")
_BENCHMARK_FILES = ("questions.jsonl",)


@dataclass(frozen=True)
class RunRecord:
    """One run dir (or sweep stub) as read: its experiment, its typed summary, and its state.

    ``state`` is the summary's status, except ``running`` / ``killed`` for a ``started`` run
    (whether a process holds its lock) or one without a summary, and ``unreadable``.
    ``problem`` says in one line why the run is not a finished result (None when it is).
    """

    path: Path
    experiment: str
    summary: CensorshipSummary | EpistemicSummary | None
    state: str
    problem: str | None = None

    @property
    def stub(self) -> bool:
        """A failed sweep job's summary with no run beside it."""
        return not any((self.path / name).exists() for name in (*_CENSORSHIP_DIRS, *_EPISTEMIC_FILES, *_BENCHMARK_FILES, CONFIG))

    @property
    def finished(self) -> bool:
        return self.state == Status.SUCCESS.value

    @property
    def resume_command(self) -> str | None:
        if self.experiment not in ENTRYPOINTS or self.stub:
            return None
        return f"python -m {ENTRYPOINTS[self.experiment]} resume={self.path}"


def natural_key(path: Path) -> tuple[tuple[int, int | str], ...]:
    """Sort key that puts sweep job 2 before job 10 (numbers compare as numbers)."""
    return tuple((0, int(piece)) if piece.isdigit() else (1, piece)
                 for part in path.parts for piece in re.split(r"(\d+)", part) if piece)


def find_run_dirs(root: Path) -> list[Path]:
    """Every run directory under ``root`` (``root`` included), in natural order. Hidden directories
    (``.hydra``, a run dir being built or killed while it was built) hold no runs. A directory renamed
    or removed while the walk reads (a sweep writing beside the reader) is skipped, never raised."""
    marks = (*_CENSORSHIP_DIRS, *_EPISTEMIC_FILES, *_BENCHMARK_FILES)
    found = [folder for folder, names in walk.folders(root)
             if SUMMARY in names or (CONFIG in names and any((folder / name).exists() for name in marks))]
    return sorted(found, key=natural_key)


def experiment_of(directory: Path) -> str | None:
    """Which experiment wrote ``directory``, by the files only one of them writes."""
    if any((directory / d).is_dir() for d in _CENSORSHIP_DIRS):
        return CENSORSHIP
    if any((directory / f).is_file() for f in _EPISTEMIC_FILES):
        return EPISTEMIC
    if any((directory / f).is_file() for f in _BENCHMARK_FILES):
        return BENCHMARK
    return None


def on_disk(directory: Path, experiment: str, summary: CensorshipSummary | EpistemicSummary | None) -> str:
    """What an unfinished run holds, counted from its files (its summary may predate them)."""
    if experiment == CENSORSHIP:
        responses = directory / _CENSORSHIP_DIRS[1]
        done = sum(1 for name in walk.names(responses) if name.endswith(".json"))
        return f"{done} iteration(s) on disk"
    if experiment == EPISTEMIC:
        answers = len(read_records(directory / "answers.jsonl"))
        expected = summary.expected_answers if isinstance(summary, EpistemicSummary) else None
        return f"{answers}{'' if expected is None else f'/{expected}'} answers on disk"
    if experiment == BENCHMARK:
        return f"{len(read_records(directory / 'draws.jsonl'))} draws on disk"
    return "partial files on disk"


def load_run(directory: Path) -> RunRecord:
    """Read one run directory (see the module doc); never raises for what is in the files."""
    directory = Path(directory)
    guess = experiment_of(directory)
    summary = None
    if (directory / SUMMARY).is_file():
        try:
            summary = read_summary(directory / SUMMARY, guess)
        except ValueError as exc:
            return RunRecord(directory, guess or UNKNOWN, None, UNREADABLE, str(exc))
    experiment = summary.experiment if summary is not None else guess or UNKNOWN
    if summary is not None and summary.status is not Status.STARTED:
        state = summary.status.value
        problem = None
        if summary.status is Status.ERROR:
            problem = summary.error or "no error message recorded"
        elif summary.status is Status.CANCELLED and summary.stop_reason != "budget":
            problem = _unfinished("interrupted", directory, experiment, summary)
        return RunRecord(directory, experiment, summary, state, problem)
    holder = lock_holder(directory)
    if holder is not None:
        return RunRecord(directory, experiment, summary, RUNNING,
                         f"still running ({holder}); look again when it ends")
    how = "killed: its summary still says started" if summary is not None else "killed before its first summary"
    return RunRecord(directory, experiment, summary, KILLED, _unfinished(how, directory, experiment, summary))


def _unfinished(how: str, directory: Path, experiment: str,
                summary: CensorshipSummary | EpistemicSummary | None) -> str:
    entry = ENTRYPOINTS.get(experiment)
    resume = f"; continue with: python -m {entry} resume={directory}" if entry else ""
    return f"{how}; {on_disk(directory, experiment, summary)}{resume}"


def iter_runs(roots: Iterable[Path]) -> Iterator[RunRecord]:
    """Every run under each of ``roots``, once each even where roots overlap, in natural order
    per root. A root that does not exist is skipped: callers that need it say so, and so is a run dir
    removed while it was read (it is no run any more)."""
    seen: set[Path] = set()
    for root in roots:
        if not Path(root).is_dir():
            continue
        for directory in find_run_dirs(Path(root)):
            resolved = directory.resolve()
            if resolved not in seen:
                seen.add(resolved)
                record = load_run(resolved)
                if resolved.is_dir():
                    yield record
