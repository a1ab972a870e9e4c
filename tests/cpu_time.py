"""CPU seconds per test, for measuring the suite on a shared machine (``AUDIT_TEST_CPU_LOG=file``).

Why CPU and not wall: ``--durations`` reports wall time, which on a machine shared with other jobs
measures the load as much as the test. The suite runs on 2 cores in CI, so its wall time there is at
least its total CPU over 2; the CPU a test costs is what moves that floor, and it barely depends on
the load. Each test's line counts, from its setup to its teardown: this pytest process (every
thread: the loopback server), its children once waited for (cold starts, ``subprocess``), what its
children still running spent meanwhile (the session's llama.cpp server, read from ``/proc``), and its
warm children (``tests.entrypoints`` has their supervisor report them, since a grandchild's CPU reaches
this process only when the fork server ends). At the end of the session a line ``<warm server>``
gives the fork server's own CPU (its imports).

``python -m tests.cpu_time FILE [N]`` prints the total, the N most expensive tests and the load
averages seen. Registered by ``tests/conftest.py`` only when the variable is set.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import entrypoints

CPU_LOG_ENV = "AUDIT_TEST_CPU_LOG"


def _cpu() -> tuple[float, float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime, entrypoints.warm_cpu_s()


def _running_children() -> dict[int, float]:
    """CPU seconds so far of this process's running children, the fork server left out (its CPU is its
    own line). The session's llama.cpp server is one of them: it runs in a child process, which
    ``RUSAGE_CHILDREN`` counts only once it has ended and been waited for, so all of the real model's
    work landed on the session's last test (the complete audit logged 2.2 CPU-s)."""
    pids: set[int] = set()
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids.update(int(pid) for pid in children.read_text().split())
        except OSError:  # a thread that ended meanwhile
            continue
    pids.discard(entrypoints.server_pid() or -1)
    return {pid: cpu for pid in pids if (cpu := entrypoints.process_cpu_s(pid)) is not None}


def _running_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """What the running children spent during a test: their growth, less what the ones that ended
    had already been counted for (``RUSAGE_CHILDREN`` now adds their whole lifetime)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items()) - \
        sum(cpu for pid, cpu in before.items() if pid not in after)


class CpuLog:
    """Appends one JSON line per test to the log (one ``write`` each, so xdist workers can share it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")

    def _write(self, record: dict[str, object]) -> None:
        with open(self.path, "a", encoding="utf-8") as log:
            log.write(json.dumps({**record, "worker": self.worker, "load": os.getloadavg()[0]}) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        before, running, started = _cpu(), _running_children(), time.monotonic()
        yield
        after = _cpu()
        own, children, warm = (b - a for a, b in zip(before, after))
        own, children, warm = round(own, 3), round(children + _running_delta(running, _running_children()), 3), \
            round(warm, 3)
        self._write({"test": item.nodeid, "cpu": round(own + children + warm, 3), "own": own, "children": children,
                     "warm": warm, "wall": round(time.monotonic() - started, 3)})

    def pytest_sessionfinish(self) -> None:
        if server := entrypoints.server_cpu_s():
            self._write({"test": "<warm server>", "cpu": round(server, 3), "own": 0, "children": round(server, 3),
                         "warm": 0, "wall": 0})


def report(path: Path, top: int = 15) -> str:
    """The total CPU, the ``top`` most expensive tests and the load averages the log saw."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    total = sum(r["cpu"] for r in rows)
    loads = sorted(r["load"] for r in rows)
    lines = [f"{len(rows)} lines, {total:.0f} CPU-s in all; load average (1 min) seen {loads[0]:.1f}-{loads[-1]:.1f},"
             f" median {loads[len(loads) // 2]:.1f}", f"{'CPU-s':>8} {'wall s':>8}  test"]
    for row in sorted(rows, key=lambda r: -r["cpu"])[:top]:
        lines.append(f"{row['cpu']:8.1f} {row['wall']:8.1f}  {row['test']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 15))
