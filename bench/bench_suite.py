"""The end-to-end tests' cost with the entrypoints started cold vs warm, side by side in one run.

The end-to-end tests start the real entrypoints (``python -m audit ...``). Cold, each start is a
fresh interpreter that imports litellm (~3.5 CPU-s) before it does anything; warm, it is a child
forked from a server that imported everything once (``tests/entrypoints.py``). This runs the same
fixed subset of those tests twice with pytest (``-n 0``), once with ``AUDIT_TEST_COLD=1`` (every
start cold, as before the warm path) and once warm, alternating when ``--rounds`` > 1, and prints
each run's wall time, CPU time (user + sys of pytest and everything it started, from
``wait4``) and how many entrypoints it started cold and warm, with the ratio cold / warm. The load average is printed beside each run: the wall
times are only comparable at a similar load; the CPU times much less depend on it.

Run: ``python bench/bench_suite.py [--rounds 1] [tests ...]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBSET = ("tests/rescore/test_rescore.py", "tests/judge_check/test_judge_check.py")
"""End-to-end files that start ``audit.rescore``, ``audit.judge_check`` and ``audit`` several times per
test (each keeps one start cold on purpose, in both columns)."""


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f}/{five:.1f}"


def timed(tests: list[str], *, cold: bool) -> tuple[float, float, int, str, str]:
    """(wall s, CPU s, pytest's exit code, load before/after, starts cold/warm) of one pytest run of ``tests``."""
    log = Path(tempfile.mkdtemp()) / "launches.txt"
    env = {k: v for k, v in os.environ.items() if k != "AUDIT_TEST_COLD"} | {"AUDIT_TEST_LAUNCH_LOG": str(log)}
    if cold:
        env["AUDIT_TEST_COLD"] = "1"
    before = load()
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", *tests], cwd=ROOT,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    kinds = [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []
    return (wall, usage.ru_utime + usage.ru_stime, process.returncode, f"{before} -> {load()}",
            f"{kinds.count('cold')}/{kinds.count('warm')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="*", default=list(SUBSET))
    parser.add_argument("--rounds", type=int, default=1, help="cold/warm pairs, alternating which goes first")
    args = parser.parse_args()
    print(f"subset: {' '.join(args.tests)}   ({os.cpu_count()} cores; load = 1/5-min load average)")
    print(f"{'round':>5} {'mode':>5} {'wall s':>8} {'CPU s':>8} {'exit':>4} {'starts cold/warm':>16}  load before -> after")
    totals = {True: [0.0, 0.0], False: [0.0, 0.0]}
    for n in range(args.rounds):
        for cold in ((True, False) if n % 2 == 0 else (False, True)):
            wall, cpu, code, loads, starts = timed(args.tests, cold=cold)
            totals[cold][0] += wall
            totals[cold][1] += cpu
            print(f"{n + 1:>5} {'cold' if cold else 'warm':>5} {wall:>8.1f} {cpu:>8.1f} {code:>4} {starts:>16}  {loads}")
    (cold_wall, cold_cpu), (warm_wall, warm_cpu) = totals[True], totals[False]
    print(f"cold / warm: wall {cold_wall / warm_wall:.2f}x, CPU {cold_cpu / warm_cpu:.2f}x "
          f"(exit 0 = the subset passed; a failing run's time means little)")


if __name__ == "__main__":
    main()
