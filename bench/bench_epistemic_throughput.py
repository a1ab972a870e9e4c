"""Epistemic throughput: a 6,000-card ``raw_llm`` evaluation at 128 calls in flight against a 200 ms server.

The real entrypoint (``python -m audit.epistemic``) runs in a subprocess against the
loopback server in a process of its own, answering every card ``{"answer": "UNKNOWN"}``
after 200 ms, with a fresh response cache (so every card is a call, as in a first run).
The request phase is timed from outside by when lines arrive on the run's stdout: from the
"N cards ... ->" line (cards written, calls about to start) to the last "answered N/N" line;
that includes litellm's import (~3 s, paid at the first call). The steady rate is timed from
the "answered" line at 10% to the last one. The run's CPU time over the request phase is read
from ``/proc/<pid>/stat`` at the same two moments (Linux): CPU per card bounds the rate a
core can sustain, whatever the concurrency.
Run:

    python bench/bench_epistemic_throughput.py [--num-per-type 667] [--concurrency 128]

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


def run(base_url: str, out: Path, num_per_type: int, concurrency: int) -> tuple[int, float, float, float, str]:
    """Cards answered, seconds of the request phase, steady calls/s (from 10% on), CPU seconds of the
    request phase, and the run's last progress line."""
    env = {**os.environ, "OPENROUTER_API_BASE": base_url, "OPENROUTER_API_KEY": "bench-key"}
    command = [sys.executable, "-m", "audit.epistemic", "domain=geography", "predicate=located_in_country",
               "system=raw_llm", "system.model=bench/model", f"cards.num_per_type={num_per_type}",
               f"gateway.max_concurrency={concurrency}", f"gateway.cache.path={out / 'cache.sqlite'}",
               f"output_dir={out}", f"hydra.run.dir={out / 'hydra'}"]
    started = finished = tenth = None
    cards, tenth_done, last, cpu_start, cpu_end = 0, 0, "", 0.0, 0.0
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        assert process.stdout is not None
        for line in process.stdout:
            now = time.perf_counter()
            if started is None and (match := re.match(r"(\d+) cards \(", line)):
                started, cards, cpu_start = now, int(match.group(1)), cpu_seconds(process.pid)
            elif match := re.match(r"answered (\d+)/", line):
                finished, last = now, line.strip()
                if int(match.group(1)) == cards:
                    cpu_end = cpu_seconds(process.pid)
                if tenth is None:
                    tenth, tenth_done = now, int(match.group(1))
    if process.returncode != 0 or started is None or finished is None:
        raise SystemExit(f"the run failed (exit {process.returncode}); run the command by hand: {' '.join(command)}")
    assert tenth is not None
    steady = (cards - tenth_done) / (finished - tenth) if finished > tenth else float("nan")
    return cards, finished - started, steady, cpu_end - cpu_start, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-per-type", type=int, default=667)
    parser.add_argument("--concurrency", type=int, default=128)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, loopback_server(LATENCY_S, "--reply", '{"answer": "UNKNOWN"}') as url:
        cards, seconds, steady, cpu, last = run(url, Path(tmp), args.num_per_type, args.concurrency)
    ideal = cards / args.concurrency * LATENCY_S
    rate = cards / seconds
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"{cards} cards, raw_llm, concurrency {args.concurrency}, {LATENCY_S * 1000:.0f} ms server: request phase "
          f"{seconds:.1f} s = {rate:.0f} calls/s ({seconds / ideal:.2f}x ideal {ideal:.1f} s, "
          f"ideal {args.concurrency / LATENCY_S:.0f} calls/s), {steady:.0f} calls/s steady (from 10% on); "
          f"target >= {TARGET_CALLS_PER_S} calls/s: {'met' if rate >= TARGET_CALLS_PER_S else 'NOT met'}")
    print(f"CPU of the run over the request phase: {cpu:.1f} s = {cpu / cards * 1000:.2f} ms per card "
          f"(one free core: at most {cards / cpu if cpu else float('nan'):.0f} calls/s)")
    print(f"the run's own last progress line: {last}")


if __name__ == "__main__":
    main()
