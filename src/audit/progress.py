"""A progress line for long runs of model calls: rate and time left, at a cost of nothing per call.

A 6,000-card evaluation answers hundreds of cards a second, so a tick is one counter
increment and one clock read; a line is printed only at every tenth of the work or after
``every_s`` seconds of silence, whichever comes first. The formatting is pure (tested
apart from any clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable


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


def progress_line(done: int, total: int, elapsed_s: float, calls: int) -> str:
    """``answered 3000/6000 (50%), 412 calls/s, ETA 7 s``.

    ``calls`` are the model calls made in ``elapsed_s`` (a card may take none, one or
    several, so the rate is counted apart from ``done``); the ETA extrapolates the answers'
    own rate to what is left.
    """
    line = f"answered {done}/{total} ({100 * done // total if total else 100}%)"
    if elapsed_s <= 0 or done <= 0:
        return line
    line += f", {calls / elapsed_s:.1f} calls/s"  # a decimal: a slow model makes 0.3 calls/s, not 0
    if done < total:
        line += f", ETA {format_duration((total - done) * elapsed_s / done)}"
    else:
        line += f", took {format_duration(elapsed_s)}"
    return line


class Progress:
    """Counts answers and prints :func:`progress_line` now and then.

    ``calls`` returns the model calls made so far (the gateway ledger's length); it is read
    only when a line is printed.
    """

    def __init__(self, total: int, calls: Callable[[], int], *, every_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic, out: Callable[[str], None] | None = None):
        self.total = total
        self.done = 0
        self._calls = calls
        self._calls_at_start = calls()
        self._clock = clock
        self._started = self._last = clock()
        self._every_s = every_s
        self._step = max(1, total // 10)
        self._out = out or (lambda line: print(line, flush=True))

    def tick(self) -> None:
        """One more answer; print when a tenth of the work is done or ``every_s`` passed."""
        self.done += 1
        now = self._clock()
        if self.done % self._step == 0 or self.done == self.total or now - self._last >= self._every_s:
            self._last = now
            self._out(progress_line(self.done, self.total, now - self._started, self._calls() - self._calls_at_start))


def cache_note(calls: int, cached: int) -> str:
    """``; all 41 calls served from the cache (nothing sent)`` when a session's every call was a
    replay (a re-run of a finished command), so a $0 line is not read as a run that did nothing."""
    every = "the only call" if calls == 1 else f"all {calls} calls"
    return f"; {every} served from the cache (nothing sent)" if calls and calls == cached else ""
