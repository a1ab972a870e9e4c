"""Epistemic throughput: a 6,000-card ``raw_llm`` evaluation at 128 calls in flight against a 200 ms server,
with its calls in 1 process and in 2 (``workers=``), side by side.

The real entrypoint (``python -m audit.epistemic``) runs in a subprocess against the
loopback server in a process of its own, answering every card ``{"answer": "UNKNOWN"}``
after 200 ms, with a fresh response cache (so every card is a call, as in a first run).
The request phase is timed from outside by when lines arrive on the run's stdout: from the
"N cards ... ->" line (cards written, calls about to start) to the last "answered N/N" line;
that includes forking the workers (litellm is imported before it). The steady rate is timed from
the "answered" line at 10% to the last one. The run's CPU time over the request phase (its own and
its workers', read from ``/proc/<pid>/stat`` at the same two moments; Linux) says what a card
costs: with one process, CPU per card bounds the rate a core can sustain, whatever the
concurrency; with workers the work spreads over cores, plus what passing calls between processes adds.

The settings in ``--workers`` run in turn, ``--rounds`` times (1, 2, 1, 2, ...), each with the load
average (``/proc/loadavg``) before and after it; the ratios are paired within a round, since on a
shared machine the load moves between rounds more than between the two runs of one. Run:

    python bench/bench_epistemic_throughput.py [--num-per-type 667] [--concurrency 128] [--workers 1,2] [--rounds 3]

667 cards per label and suite give 6,003 cards on geography ``located_in_country``. The first
run on a machine also builds the geography graph (about a minute); that is outside the
request phase.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_gateway import LATENCY_S, loopback_server

TARGET_CALLS_PER_S = 400


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a live process has used so far (0 where /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds of a process and of its live children (the run's workers)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return cpu_seconds(pid), sum(cpu_seconds(int(child)) for child in children)


def load_average() -> float:
    """The 1-minute load average (``/proc/loadavg``'s first field)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def run(base_url: str, out: Path, num_per_type: int, concurrency: int,
        workers: str = "1") -> tuple[int, float, float, tuple[float, float], str]:
    """Cards answered, seconds of the request phase, steady calls/s (from 10% on), CPU seconds of the
    request phase (the run's own process, its workers), and the run's last progress line."""
    env = {**os.environ, "OPENROUTER_API_BASE": base_url, "OPENROUTER_API_KEY": "bench-key"}
    command = [sys.executable, "-m", "audit.epistemic", "domain=geography", "predicate=located_in_country",
               "system=raw_llm", "system.model=bench/model", f"cards.num_per_type={num_per_type}",
               f"gateway.max_concurrency={concurrency}", f"gateway.cache.path={out / 'cache.sqlite'}",
               f"workers={workers}", f"output_dir={out}", f"hydra.run.dir={out / 'hydra'}"]
    started = finished = tenth = None
    cards, tenth_done, last, cpu_start, cpu_end = 0, 0, "", (0.0, 0.0), (0.0, 0.0)
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        assert process.stdout is not None
        for line in process.stdout:
            now = time.perf_counter()
            if started is None and (match := re.match(r"(\d+) cards \(", line)):
                started, cards, cpu_start = now, int(match.group(1)), tree_cpu_seconds(process.pid)
            elif match := re.match(r"answered (\d+)/", line):
                finished, last = now, line.strip()
                if int(match.group(1)) == cards:
                    cpu_end = tree_cpu_seconds(process.pid)
                if tenth is None:
                    tenth, tenth_done = now, int(match.group(1))
    if process.returncode != 0 or started is None or finished is None:
        raise SystemExit(f"the run failed (exit {process.returncode}); run the command by hand: {' '.join(command)}")
    assert tenth is not None
    steady = (cards - tenth_done) / (finished - tenth) if finished > tenth else float("nan")
    return cards, finished - started, steady, (cpu_end[0] - cpu_start[0], cpu_end[1] - cpu_start[1]), last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-per-type", type=int, default=667)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--workers", default="1,2", help="the workers= settings to compare, in turn")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    settings = args.workers.split(",")
    print(f"cores: {len(os.sched_getaffinity(0))}; load average before: {load_average():.2f}", flush=True)
    results: dict[str, list[tuple[float, float]]] = {w: [] for w in settings}
    with tempfile.TemporaryDirectory() as tmp, loopback_server(LATENCY_S, "--reply", '{"answer": "UNKNOWN"}') as url:
        for round_ in range(1, args.rounds + 1):
            for workers in settings:
                before = load_average()
                cards, seconds, steady, (own, theirs), last = run(url, Path(tmp) / f"{round_}-{workers}",
                                                                  args.num_per_type, args.concurrency, workers)
                rate, cpu = cards / seconds, own + theirs
                results[workers].append((rate, cpu))
                print(f"round {round_} workers={workers}: {cards} cards in {seconds:.1f} s = {rate:.0f} calls/s "
                      f"({steady:.0f} steady), CPU {cpu:.1f} s = {cpu / cards * 1000:.2f} ms per card "
                      f"(the run's process {own:.1f} s, its workers {theirs:.1f} s), "
                      f"load {before:.1f} -> {load_average():.1f}; last line: {last}", flush=True)
    ideal = cards / args.concurrency * LATENCY_S
    print(f"{cards} cards, raw_llm, concurrency {args.concurrency}, {LATENCY_S * 1000:.0f} ms server "
          f"(ideal {ideal:.1f} s = {args.concurrency / LATENCY_S:.0f} calls/s); target >= {TARGET_CALLS_PER_S} calls/s")
    base = settings[0]
    for workers in settings:
        rates = [rate for rate, _ in results[workers]]
        line = (f"workers={workers}: calls/s {', '.join(f'{r:.0f}' for r in rates)}; CPU-s "
                f"{', '.join(f'{c:.1f}' for _, c in results[workers])}; best {max(rates):.0f} calls/s "
                f"({'met' if max(rates) >= TARGET_CALLS_PER_S else 'NOT met'})")
        if workers != base:
            paired = [mine[0] / theirs[0] for mine, theirs in zip(results[workers], results[base])]
            line += f"; calls/s over workers={base}'s, paired by round: {', '.join(f'{p:.2f}x' for p in paired)}"
        print(line)


if __name__ == "__main__":
    main()
