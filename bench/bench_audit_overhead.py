"""Censorship audit framework overhead: a 20-iteration audit against a zero-latency loopback server.

What is measured (cache off, so every step makes its HTTP call):

- wall: ``run(cfg)`` from start to ``report.html``, litellm already imported (a one-off ~3 s
  every process pays, not per-audit overhead);
- model calls: the sum of per-call latencies the gateway recorded in ``usage.json``;
- bare HTTP: the same number of sequential httpx POSTs of the same bodies to the same
  server, i.e. the floor any client pays for these calls on this machine;
- overhead = wall - model calls (everything that is not waiting for a model: prompts,
  templates, parsing, evidence, ledger, atomic writes, report); with concurrent calls
  (baseline, judge) the latencies overlap and this understates it, so the verdict uses the
  larger of it and wall - bare HTTP (which also charges the gateway's per-call cost).
  Target: under 2 s.

Run: ``python bench/bench_audit_overhead.py [--iterations 20] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from audit.censorship.loop import run
from audit.llm import backend
from audit.testing.replies import TEST_API_KEY
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import Script, audit_config

SCENARIOS = {
    "user_persona": [],
    "user_persona + baseline + judge": ["technique.with_baseline=true", "judge=default", "judge.model=test/judge"],
}
TARGET_S = 2.0


def one_audit(server: FakeOpenRouter, out: Path, iterations: int, overrides: list[str]) -> dict[str, float]:
    """Run one audit; return wall time, recorded call latencies and the call count."""
    server.reset()
    server.handler = Script().handler
    cfg = audit_config(out, f"max_iterations={iterations}", *overrides)
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the per-iteration progress lines
        run_dir = run(cfg)
    wall = time.perf_counter() - started
    usage = json.loads((run_dir / "usage.json").read_text())
    calls = usage["calls"]
    return {"wall": wall, "calls_s": sum(c["latency_s"] for c in calls), "n": len(calls),
            "requests": [(r.path, r.json) for r in server.requests]}


def bare_http(server: FakeOpenRouter, requests: list[tuple[str, dict]]) -> float:
    """Replay the audit's request bodies sequentially with plain httpx (keep-alive client)."""
    server.reset()
    server.handler = Script().handler
    headers = {"Authorization": f"Bearer {TEST_API_KEY}"}
    base = server.base_url.removesuffix("/api/v1")
    with httpx.Client(base_url=base, headers=headers) as client:
        started = time.perf_counter()
        for path, body in requests:
            client.post(path, json=body).raise_for_status()
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    backend.litellm()  # pay the import once, outside the timings
    rows = []
    with FakeOpenRouter() as server, tempfile.TemporaryDirectory() as tmp:
        os.environ.update(server.env())
        os.chdir(tmp)
        for name, overrides in SCENARIOS.items():
            one_audit(server, Path(tmp) / "warmup", 1, overrides)
            runs = [one_audit(server, Path(tmp) / name.replace(" ", "_"), args.iterations, overrides)
                    for _ in range(args.repeat)]
            bare = statistics.median(bare_http(server, runs[0]["requests"]) for _ in range(args.repeat))
            wall = statistics.median(r["wall"] for r in runs)
            calls = statistics.median(r["calls_s"] for r in runs)
            rows.append((name, runs[0]["n"], wall, calls, bare, wall - calls, wall - bare))
    print(f"\n{args.iterations}-iteration audit, zero-latency loopback server, cache off, median of {args.repeat}\n")
    header = ("scenario", "calls", "wall s", "model calls s", "bare httpx s", "overhead s", "wall - bare s")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for name, n, wall, calls, bare, over, over_bare in rows:
        print(f"| {name} | {n} | {wall:.2f} | {calls:.2f} | {bare:.2f} | {over:.2f} | {over_bare:.2f} |")
    worst = max(max(r[5], r[6]) for r in rows)
    print(f"\noverhead beyond model calls: max {worst:.2f} s (target < {TARGET_S:.0f} s): "
          + ("OK" if worst < TARGET_S else "OVER TARGET"))


if __name__ == "__main__":
    main()
