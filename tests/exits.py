"""Run an entrypoint and time its exit from its ``done:`` line (issue 38, item 7).

2 of 4 finished benchmark processes printed ``done:`` and then did not exit for 8 and 13 minutes: a
sweep waiting on them, or a script chaining runs, waits as long. The bound here is a behaviour bound
(a finished run leaves within seconds), not a speed benchmark: the wait after ``done:`` is the report
already written, the connections closed and the interpreter's own shutdown, about 2 s on busy cores.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests import entrypoints
from tests.timing import scaled

LEFT_PENDING = ("Task was destroyed", "was never awaited", "unclosed event loop", "Exception ignored")
"""What Python prints on stderr for a task, coroutine or async generator left pending, or a loop left open
(issue 38 item 7: "no un-awaited coroutine reaches stderr")."""
EXIT_S = scaled(10)
"""Seconds a process may take to exit after printing ``done:`` (10 on free cores, scaled with the load)."""


def left_pending(stderr: str) -> list[str]:
    """The lines of ``stderr`` that say something was left pending (:data:`LEFT_PENDING`)."""
    return [line for line in stderr.splitlines() if any(said in line for said in LEFT_PENDING)]


@dataclass(frozen=True)
class Ended:
    """What the run printed, its exit code, and seconds from its last line to its exit (None: no such line)."""

    stdout: str
    stderr: str
    returncode: int
    after_done_s: float | None


def run_to_exit(args: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float,
                last: str = "^done:", cold: bool = True) -> Ended:
    """Start ``args``, read its stdout line by line and note when its last line (``last``, a regular
    expression: ``done:`` by default) arrives; then wait at most :data:`EXIT_S` for the exit. A process
    still running then is killed and the assertion names it; the whole run is killed after ``timeout_s``.

    Cold by default, in a fresh interpreter as a user's ``python -m`` is. ``cold=False`` forks it from the
    tests' warm server (:func:`tests.entrypoints.start`, ``python -m`` args only) with the interpreter's whole
    end, teardown included (``teardown=True``: atexit handlers, non-daemon threads joined, every module torn
    down and what that prints on stderr), so a run held after ``done:`` is held
    there too, without the ~6 CPU-s a cold start pays importing litellm (a real-model test that times a run
    it makes anyway)."""
    errors = cwd / "stderr.txt"
    with errors.open("w", encoding="utf-8") as stderr:
        proc = entrypoints.start(list(args), cold=cold, cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=stderr,
                                 text=True, teardown=True)
    watchdog = threading.Timer(timeout_s, proc.kill)
    watchdog.start()
    lines: list[str] = []
    done_at: float | None = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if re.search(last, line):
                done_at = time.monotonic()
                break
        try:
            proc.wait(timeout=EXIT_S if done_at is not None else timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"still running {EXIT_S:.0f} s after its last line: {' '.join(args)}\n"
                                 + "".join(lines[-5:])) from None
        exited = time.monotonic()
        lines.append(proc.stdout.read())
    finally:
        watchdog.cancel()
        if proc.stdout is not None:
            proc.stdout.close()
    return Ended("".join(lines), errors.read_text(encoding="utf-8"), proc.returncode,
                 None if done_at is None else exited - done_at)
