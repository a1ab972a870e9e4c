"""CPU seconds per sweep job under each launcher, side by side in one run: the same ``-m`` audit sweep
(loopback server, scripted models) with ``hydra/launcher=basic`` (every job in the launching process,
one after another), ``joblib`` (a fresh loky interpreter per job) and ``warm`` (the default: each job
forked from a server that imported litellm and the audit once), and one job alone.

The CPU is the whole process tree's: this process makes itself the tree's subreaper (Linux
``PR_SET_CHILD_SUBREAPER``), so the warm launcher's fork server and joblib's loky workers, which
outlive the command, are reaped here and their CPU counted (``RUSAGE_CHILDREN``). The load average is
printed beside each row: CPU seconds vary less with load than wall time, which is only comparable at a
similar load. The response cache is on, as by default, each command starting from an empty one.

Then the same jobs made to share every request (the sweep's axis, ``max_failed_draws``, changes no
request): the requests the server received under ``basic`` (later jobs replay the first's from the
cache) and ``warm`` (jobs at once: one waits for another's request in flight and replays it). Equal
counts are what makes ``warm`` safe as the default.

Run: ``python bench/bench_launchers.py [--jobs 4] [--iterations 3]`` (Linux)
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from audit.testing.server import FakeOpenRouter

PR_SET_CHILD_SUBREAPER = 36
TOPICS = ("tiananmen", "tibet", "xinjiang", "taiwan", "hong_kong", "uyghurs", "falun_gong", "dalai_lama")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reap_orphans() -> None:
    """Wait for every descendant the command left behind (reparented here), so its CPU is counted."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def timed(args: list[str], cwd: Path, env: dict[str, str], server: FakeOpenRouter) -> tuple[float, float, int]:
    """Wall time, CPU seconds of one command and every process it started, and the requests the server
    received, from an empty response cache of its own; a failure stops the bench."""
    env = env | {"AUDIT_CACHE_DIR": tempfile.mkdtemp(prefix="cache-", dir=cwd)}
    cpu, started, requests = cpu_of_children(), time.perf_counter(), len(server.requests)
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    reap_orphans()
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(args)}\n{done.stderr[-2000:]}")
    return wall, cpu_of_children() - cpu, len(server.requests) - requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=4, help=f"sweep jobs (topics, at most {len(TOPICS)})")
    parser.add_argument("--iterations", type=int, default=3, help="auditor turns per audit")
    args = parser.parse_args()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("this bench needs Linux (prctl PR_SET_CHILD_SUBREAPER) to count the launchers' own processes")
    topics = ",".join(TOPICS[: args.jobs])
    common = [f"max_iterations={args.iterations}", "judge=off", f"auditor.model={AUDITOR_MODEL}",
              "gateway.max_retries=0", "output_dir=out"]
    rows = []
    with FakeOpenRouter() as server, tempfile.TemporaryDirectory() as tmp:
        server.handler = Script().handler
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | server.env()
        python = [sys.executable, "-m", "audit"]
        before = load()
        rows.append(("one job alone (python -m audit)", 1, *timed([*python, f"topic={TOPICS[0]}", *common],
                                                                  Path(tmp), env, server), before))
        for launcher in ("basic", "joblib", "warm"):
            before = load()
            extra = [] if launcher == "basic" else [f"hydra.launcher.n_jobs={args.jobs}"]
            rows.append((f"{args.jobs}-job sweep, hydra/launcher={launcher}", args.jobs,
                         *timed([*python, "-m", f"topic={topics}", f"hydra/launcher={launcher}", *extra, *common],
                                Path(tmp), env, server), before))
        # the same jobs asking the same things: what a shared request costs under each launcher
        server.latency_s = 0.2  # replies take time, so jobs at once meet each other's requests in flight
        same = ",".join(str(n) for n in range(1, args.jobs + 1))
        for launcher in ("basic", "warm"):
            before = load()
            extra = [] if launcher == "basic" else [f"hydra.launcher.n_jobs={args.jobs}"]
            rows.append((f"{args.jobs} jobs sharing every request, hydra/launcher={launcher}", args.jobs,
                         *timed([*python, "-m", f"topic={TOPICS[0]}", f"max_failed_draws={same}",
                                 f"hydra/launcher={launcher}", *extra, *common], Path(tmp), env, server), before))
    print(f"\n{args.iterations}-iteration audits against the loopback server, {os.cpu_count()} cores\n")
    print("| run | jobs | wall | CPU-s | CPU-s per job | requests sent | load before (1/5/15 min) |")
    print("|---|---|---|---|---|---|---|")
    for name, jobs, wall, cpu, sent, before in rows:
        print(f"| {name} | {jobs} | {wall:.1f} s | {cpu:.1f} | {cpu / jobs:.1f} | {sent} | {before} |")
    warm, basic = rows[3][3] / args.jobs, rows[1][3] / args.jobs
    print(f"\nCPU-s per job, basic / warm: {basic / warm:.2f}x; joblib / warm: {rows[2][3] / args.jobs / warm:.2f}x; "
          f"requests sent by jobs sharing every request, warm / basic: {rows[5][4]}/{rows[4][4]} "
          f"(one job alone: {rows[0][4]}) (after: load {load()})")

if __name__ == "__main__":
    main()
