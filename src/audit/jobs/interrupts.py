"""SIGTERM and SIGHUP handled like Ctrl-C, so every way a run is stopped on purpose ends the same way.

SIGHUP is what a closed terminal or a dropped SSH session sends: Python's default dies on the
spot and left ``started`` with no line. Under ``nohup`` (SIGHUP ignored) it stays ignored.

``kill``, a scheduler's preemption (Slurm sends SIGTERM before SIGKILL) and Ctrl-C must all
leave a ``summary.json`` that says the run was interrupted and how to resume it. Python's
default for SIGTERM is to die on the spot; re-raising it as SIGINT gives one code path:
``KeyboardInterrupt`` in plain code, and under ``asyncio.run`` a cancellation of the main
task, whose handlers write the summary before the interrupt reaches the entrypoint.

A run is one phase of its process: an entrypoint calls :func:`from_the_start` before its own imports, so a
signal at any moment ends in one line. While it starts (imports, reading the command line: nothing
written yet) a signal prints that line and exits at once; while Hydra and the run go (:func:`running`)
it is Ctrl-C, caught by the run (which saves its summary) or by the entrypoint; once the entrypoint is
ending (:func:`ending`: its one line is printed, or the run is done) a signal is ignored, so no
traceback of an interrupt landing in the clean-up follows the line. Before, a SIGINT during the
imports printed ~105 lines of traceback and a SIGTERM outside the run's own block killed the
process silently, leaving no line at all.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from audit.stop_signals import STOPS

_HANGUP = [s for s in STOPS if s not in (signal.SIGINT, signal.SIGTERM)]  # SIGHUP, on POSIX
STARTING, RUNNING, ENDING = "starting", "running", "ending"
_phase: list[str] = []
"""The entrypoint process's phase (empty in a process no entrypoint started: a test, a notebook)."""
NOT_STARTED = "error: interrupted before the run started; nothing to resume, run the command again"


def _as_interrupt(signum: int, frame: Any) -> None:
    """Do what Ctrl-C would: call SIGINT's handler (``asyncio.run``'s cancels the main task).

    Not by re-raising SIGINT: a process started with SIGINT ignored (``cmd &`` in a script,
    some batch schedulers) would then ignore SIGTERM too and run on to ``completed``. With
    SIGINT ignored or left to the C default, SIGTERM interrupts as Python's own Ctrl-C does.
    """
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        signal.default_int_handler(signal.SIGINT, frame)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP act as Ctrl-C (outside the main thread, as some Hydra
    launchers run jobs, signals cannot be handled and the defaults apply)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = [signal.SIGTERM] + [s for s in _HANGUP if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, _as_interrupt) for s in stops}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def from_the_start() -> None:
    """Called first by an entrypoint (before its imports): from now to the process's exit a stop signal
    (SIGINT unless it was ignored at start, SIGTERM, SIGHUP unless ignored) ends the process in one line."""
    if threading.current_thread() is not threading.main_thread():
        return
    _phase[:] = [STARTING]
    for stop in STOPS:
        if signal.getsignal(stop) is not signal.SIG_IGN:
            signal.signal(stop, _on_stop)


def running() -> None:
    """The entrypoint starts Hydra and the run: a signal is Ctrl-C from now on. SIGINT gets Python's own
    handler back, so that ``asyncio.run`` installs its own over it (a signal then cancels the main task
    instead of raising inside whatever the event loop runs, such as aiohttp's request writer)."""
    if _phase:
        _phase[:] = [RUNNING]
        if signal.getsignal(signal.SIGINT) is _on_stop:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def ending() -> None:
    """The entrypoint's last line is printed (or its run is over): signals change nothing any more. Ignored
    by the kernel, not by a handler: Python puts its handlers back to the default while the interpreter
    shuts down (a SIGTERM there killed the finished process silently), but leaves an ignored signal so."""
    if _phase:
        _phase[:] = [ENDING]
        for stop in STOPS:
            signal.signal(stop, signal.SIG_IGN)


def _on_stop(signum: int, frame: Any) -> None:
    phase = _phase[0] if _phase else RUNNING
    if phase == STARTING:  # nothing is written before the run starts: the line, and out at once
        sys.stdout.flush()
        print(NOT_STARTED, file=sys.stderr, flush=True)
        os._exit(1)
    if phase == RUNNING:
        _as_interrupt(signum, frame)
    # ending: the last line is out (a signal that arrived as ending() ran)
