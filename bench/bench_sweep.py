"""A 12-job audit sweep with joblib against a loopback server with 100 ms latency per call.

What is measured, side by side in one run (cache off, so every call waits its 100 ms):

- single: each of the 12 jobs alone, ``python -m audit <its overrides>`` in a fresh process
  (process start, Hydra, the litellm import, the audit, its report), one after another;
- sweep: the same 12 jobs as one ``python -m audit -m ... hydra/launcher=joblib
  hydra.launcher.n_jobs=12`` (one worker process per job: the jobs wait on the network, not on
  a core), up to the end-of-sweep comparison;
- import floor: ``python -c "import litellm"``, which every job process pays once in CPU.

The ratio sweep / slowest single job is the target (<= 1.5x). Each job also costs CPU (the
litellm import, litellm's work per call, Hydra, the report), measured as the CPU seconds of the
single runs; on a machine with fewer cores than jobs the sweep cannot beat that CPU divided by
the cores, which the bench prints as the floor the hardware sets.

Run: ``python bench/bench_sweep.py [--iterations 10] [--latency 0.1] [--jobs 12] [--singles 12] [--n-jobs 12]``
(``--singles 3`` times only the first 3 jobs alone: the jobs have the same shape).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from itertools import product
from pathlib import Path

from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import AUDITOR_MODEL, Script

MODELS = ("deepseek_chat", "kimi_k2", "qwen3_235b")
TOPICS = ("tiananmen", "tibet", "xinjiang", "taiwan")
TARGET = 1.5


def common(iterations: int) -> list[str]:
    return [f"max_iterations={iterations}", "judge=off", f"auditor.model={AUDITOR_MODEL}", "gateway.max_retries=0",
            "gateway.cache.enabled=false", "output_dir=out"]


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU seconds of one subprocess (and the processes it waited for); a failure
    stops the bench (a failed job measures nothing)."""
    cpu, started = cpu_of_children(), time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(args)}\n{done.stderr[-2000:]}")
    return wall, cpu_of_children() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=10, help="auditor turns per audit (max_iterations)")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server waits before each reply")
    parser.add_argument("--jobs", type=int, default=12, help="sweep jobs (models x topics, at most 12)")
    parser.add_argument("--singles", type=int, default=12, help="how many of the jobs to time alone")
    parser.add_argument("--n-jobs", type=int, default=None, help="joblib workers (default: one per job)")
    parser.add_argument("--launcher", default="joblib", choices=("joblib", "warm"),
                        help="warm: jobs forked from a server that imported litellm once (hydra/launcher=warm)")
    args = parser.parse_args()
    cells = list(product(MODELS, TOPICS))[: args.jobs]
    with FakeOpenRouter(latency_s=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        server.handler = Script().handler  # stateless: answers each request from its own messages
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")} | server.env()
        env["AUDIT_CACHE_DIR"] = str(Path(tmp) / "cache")
        python = [sys.executable, "-m", "audit"]
        importing, _ = timed([sys.executable, "-c", "import audit.llm.backend as b; b.litellm()"], Path(tmp), env)
        measured = [timed([*python, f"audited={m}", f"topic={t}", *common(args.iterations)], Path(tmp), env)
                    for m, t in cells[: args.singles]]
        singles, cpu = [w for w, _ in measured], sum(c for _, c in measured) * len(cells) / len(measured)
        calls_single = len(server.requests) // len(measured)
        workers = args.n_jobs or len(cells)
        sweep, sweep_cpu = timed([*python, "-m", f"audited={','.join(dict.fromkeys(m for m, _ in cells))}",
                       f"topic={','.join(dict.fromkeys(t for _, t in cells))}", f"hydra/launcher={args.launcher}",
                       f"hydra.launcher.n_jobs={workers}", *common(args.iterations)], Path(tmp), env)
    slowest = max(singles)
    ratio = sweep / slowest
    cores = os.cpu_count() or 1
    floor = max(slowest, cpu / cores)
    print(f"\n{len(cells)}-job audit sweep, {args.iterations} iterations per audit ({calls_single} calls of "
          f"{args.latency * 1000:.0f} ms each), cache off, {os.cpu_count()} cores\n")
    print("| measure | wall |")
    print("|---|---|")
    print(f"| one job alone: slowest of {len(singles)} (fastest, median) | {slowest:.1f} s "
          f"({min(singles):.1f} s, {sorted(singles)[len(singles) // 2]:.1f} s) |")
    # every launcher's jobs are now waited for by the sweep's process (the warm launcher forks them from it)
    print(f"| the {len(cells)} jobs as one {args.launcher} sweep (n_jobs={workers}), CPU {sweep_cpu:.0f} s | {sweep:.1f} s |")
    print(f"| the {len(cells)} jobs alone, CPU (from the {len(singles)} timed) | {cpu:.0f} s |")
    print(f"| floor on {cores} cores: max(slowest single, CPU of the singles / cores) | {floor:.1f} s |")
    print(f"| litellm import in a fresh process (paid by every job process) | {importing:.1f} s |")
    print(f"\nsweep / slowest single job: {ratio:.2f}x (target <= {TARGET}x): "
          + ("OK" if ratio <= TARGET else "OVER TARGET"))
    print(f"sweep / the floor this machine sets: {sweep / floor:.2f}x")


if __name__ == "__main__":
    main()
