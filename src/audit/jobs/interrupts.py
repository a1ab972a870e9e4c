"""SIGTERM and SIGHUP handled like Ctrl-C, so every way a run is stopped on purpose ends the same way.

SIGHUP is what a closed terminal or a dropped SSH session sends: Python's default dies on the
spot and left ``started`` with no line. Under ``nohup`` (SIGHUP ignored) it stays ignored.

``kill``, a scheduler's preemption (Slurm sends SIGTERM before SIGKILL) and Ctrl-C must all
leave a ``summary.json`` that says the run was interrupted and how to resume it. Python's
default for SIGTERM is to die on the spot; re-raising it as SIGINT gives one code path:
``KeyboardInterrupt`` in plain code, and under ``asyncio.run`` a cancellation of the main
task, whose handlers write the summary before the interrupt reaches the entrypoint.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


_HANGUP = [signal.SIGHUP] if hasattr(signal, "SIGHUP") else []  # POSIX only


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
