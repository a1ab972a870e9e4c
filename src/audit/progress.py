"""Progress lines for long runs of model calls: rate and time left, at a cost of nothing per call,
and a heartbeat for a step that waits on one long call (no run is silent for more than 10 s).

A 6,000-card evaluation answers hundreds of cards a second, so a tick is one counter
increment and one clock read; a line is printed only at every tenth of the work or after
``every_s`` seconds of silence, whichever comes first. The formatting is pure (tested
apart from any clock).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from types import TracebackType

from audit.counted import counted

EVERY_S = 10.0
"""Longest a run stays silent: a user who sees nothing for longer takes it for hung."""
BEAT_SHARE = 0.8
"""A heartbeat's interval as a share of :data:`EVERY_S` (8 s): under it by the time a line takes to reach
the terminal on a busy machine."""
EVERY_ENV = "AUDIT_PROGRESS_EVERY_S"
"""Replaces :data:`EVERY_S` when set (seconds). tests/test_progress.py lowers it so that its loopback server
need wait a few seconds per reply, not the 22 s that proving a 10 s interval takes (every call of a run
waits that long, 2-3 minutes of a test worker for three runs)."""


def silence_s() -> float:
    """The longest silence allowed: :data:`EVERY_S`, or ``$AUDIT_PROGRESS_EVERY_S``, read when a
    progress or heartbeat starts (so a forked process sees its own environment)."""
    raw = os.environ.get(EVERY_ENV, "").strip()
    if not raw:
        return EVERY_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ValueError(f"{EVERY_ENV}={raw!r} is not a positive number of seconds: unset it (10 s) or give one")
    return seconds


_last_line = [time.monotonic()]
"""When this process last printed a progress line (:func:`mark_line`): a heartbeat counts its silence
from there, not from its own start, so the work between two steps (saving a turn, building the next
request: 4-6 s on 2 cores at load 25) does not add to the gap."""


def mark_line() -> None:
    """Note that a progress line was printed now (``say`` and every heartbeat call it)."""
    _last_line[0] = time.monotonic()


def format_duration(seconds: float) -> str:
    """``7 s``, ``2 min 05 s``, ``1 h 02 min``: whole units, as a person reads an ETA."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def progress_line(done: int, total: int, elapsed_s: float, calls: int, first_s: float | None = None) -> str:
    """``answered 3000/6000 (50%), 412 calls/s, ETA 7 s``.

    ``calls`` are the model calls made in ``elapsed_s`` (a card may take none, one or
    several, so the rate is counted apart from ``done``). ``first_s`` is when the first answer
    came: the ETA then extrapolates the answers' rate since it, as calls run concurrently and the
    first answer's wait is paid once (counting it per answer said 27 minutes for 7 s of work);
    with it and fewer than two answers there is no ETA yet. Without it, the rate since the start.
    """
    line = f"answered {done}/{total} ({100 * done // total if total else 100}%)"
    if elapsed_s <= 0 or done <= 0:
        return line
    line += f", {calls / elapsed_s:.1f} calls/s"  # a decimal: a slow model makes 0.3 calls/s, not 0
    if done >= total:
        return line + f", took {format_duration(elapsed_s)}"
    if first_s is None:
        return line + f", ETA {format_duration((total - done) * elapsed_s / done)}"
    if done >= 2 and elapsed_s > first_s:
        line += f", ETA {format_duration((total - done) * (elapsed_s - first_s) / (done - 1))}"
    return line


class Progress:
    """Counts answers and prints :func:`progress_line` now and then.

    ``calls`` returns the model calls made so far (the gateway ledger's length); it is read
    only when a line is printed. Used as a context manager (``with progress:``) it also prints a
    line after ``every_s`` seconds without an answer, so a run waiting on slow first answers is
    never silent.
    """

    def __init__(self, total: int, calls: Callable[[], int], *, every_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic, out: Callable[[str], None] | None = None):
        self.total = total
        self.done = 0
        self._calls = calls
        self._calls_at_start = calls()
        self._clock = clock
        self._started = self._last = clock()
        self._first: float | None = None
        self._every_s = silence_s() if every_s is None else every_s
        self._step = max(1, total // 10)
        self._out = out or (lambda line: print(line, flush=True))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> None:
        """One more answer; print when a tenth of the work is done or ``every_s`` passed."""
        with self._lock:
            self.done += 1
            now = self._clock()
            if self._first is None:
                self._first = now - self._started
            if self.done % self._step == 0 or self.done == self.total or now - self._last >= self._every_s:
                self._print(now)

    def beat(self) -> None:
        """A line if nothing was printed for ``every_s`` (what the context manager's thread calls)."""
        with self._lock:
            now = self._clock()
            if now - self._last >= self._every_s and self.done < self.total:
                self._print(now)

    def _print(self, now: float) -> None:
        self._last = now
        line = progress_line(self.done, self.total, now - self._started, self._calls() - self._calls_at_start,
                             self._first)
        if not self.done:
            line += f", first answers in flight for {format_duration(now - self._started)}"
        self._out(line)

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._beat, name="progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self._every_s / 2):
            self.beat()


def cache_note(calls: int, cached: int) -> str:
    """``; all 41 calls served from the cache (nothing sent)`` when a session's every call was a
    replay (a re-run of a finished command), so a $0 line is not read as a run that did nothing."""
    every = "the only call" if calls == 1 else f"all {calls} calls"
    return f"; {every} served from the cache (nothing sent)" if calls and calls == cached else ""


def still_line(label: str, elapsed_s: float, budget_s: float | None = None, retries: int = 0) -> str:
    """``scoring key facts: 40 s so far, ≤ 1 min 10 s left, 1 retry``: one heartbeat of a long step.

    ``budget_s`` is the step's upper bound from the speed measured so far (left out when there is
    none; a step past it says so rather than show 0 s left); ``retries`` are the model calls retried
    so far in the run, so a stall on a flaky server shows as one.
    """
    line = f"{label}: {format_duration(elapsed_s)} so far"
    if budget_s is not None:
        left = budget_s - elapsed_s
        line += f", ≤ {format_duration(left)} left" if left >= 1 else \
            f", past the {format_duration(budget_s)} the measured speed gave"
    if retries:
        line += f", {retries} {'retry' if retries == 1 else 'retries'}"
    return line


def steps_line(label: str, step: str, noun: str, done: int, total: int, elapsed_s: float) -> str:
    """``fact scoring: blind check 3 of 6 credited facts, 9 s so far, ≤ 9 s left``: one step of a
    phase of a known number of steps done, the time left from the speed of the steps done so far."""
    line = f"{label}: {step} {done} of {counted(total, noun)}, {format_duration(elapsed_s)} so far"
    if 0 < done < total:
        line += f", ≤ {format_duration((total - done) * elapsed_s / done)} left"
    return line


class Steps:
    """``on_step(done, total)`` for a phase that reports each step it finishes: the call at 0 starts
    its clock (and prints nothing), each later one prints :func:`steps_line`. A phase of many short
    calls (a fact scoring's blind checks) then counts and times itself instead of being one silence
    under a heartbeat whose bound was for a different call."""

    def __init__(self, label: str, step: str, noun: str, *, clock: Callable[[], float] = time.monotonic,
                 out: Callable[[str], None] | None = None):
        self.label, self.step, self.noun, self._clock = label, step, noun, clock
        self._out = out or (lambda line: print(line, flush=True))
        self._started: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if self._started is None or done == 0:
            self._started = now
        if done:
            self._out(steps_line(self.label, self.step, self.noun, done, total, now - self._started))
            mark_line()


class Heartbeat:
    """``with Heartbeat("scoring key facts"):`` prints :func:`still_line` every ``every_s`` seconds
    (:data:`BEAT_SHARE` of :func:`silence_s`, 8 s) until the block ends; a block shorter than ``every_s`` prints nothing.

    A thread, not a task: the steps it covers are synchronous (loading a model, writing an export)
    as often as they are awaited calls, and a thread ticks while either holds the interpreter's
    attention. ``budget_s`` is the step's measured upper bound (None: no bound to give);
    ``retries`` reads the run's retry count when a line is printed.
    """

    def __init__(self, label: str, *, budget_s: float | None = None, retries: Callable[[], int] | None = None,
                 every_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 out: Callable[[str], None] | None = None):
        self.label, self.budget_s, self._retries = label, budget_s, retries
        self._every_s = BEAT_SHARE * silence_s() if every_s is None else every_s
        self._clock = clock
        self._out = out or (lambda line: print(line, flush=True))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat: {label}", daemon=True)
        self._started = clock()

    def line(self) -> str:
        """The line a beat prints now."""
        return still_line(self.label, self._clock() - self._started, self.budget_s,
                          self._retries() if self._retries else 0)

    def _beat(self) -> None:
        while not self._stop.wait(max(0.5, _last_line[0] + self._every_s - time.monotonic())):
            if time.monotonic() - _last_line[0] >= self._every_s:
                self._out(self.line())
                mark_line()

    def __enter__(self) -> Heartbeat:
        self._started = self._clock()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
