"""What an audit costs, one claim per table, side by side in one run (loopback server, scripted models).

1. Tokens per audit by iteration count for each auditor context (``auditor.context=full``: the
   request grows every turn, the audit quadratically; ``ledger``: bounded, the audit linearly), with
   the tokens per iteration (flat when linear), the auditor's share and its largest request.
2. Cached share: the same audits with a provider that caches at breakpoints (Anthropic, marked by
   the gateway) and one that caches by itself (OpenAI), played by the server's prompt-cache mode
   (:mod:`audit.testing.prompt_cache`, each provider's documented minimum of 1024 tokens). The
   "billed as" column weighs the prompt tokens by Anthropic's documented cache prices (OpenRouter's
   prompt-caching guide: reads 0.1x, writes 1.25x the input price); OpenAI's reads are 0.25-0.5x by
   model, so its column is the cached share alone. The last column is the saving the ledger itself
   records per call (``cache_saving``, an estimate priced from litellm's map, else from the model list
   the server serves as OpenRouter's ``GET /models``: the loopback's list keeps Anthropic's ratios,
   reads 0.1x and writes 1.25x the prompt price, so the share is Claude's; unpriced in neither).
3. With ``--sweep``: ``bench/bench_sweep.py``'s sweep time over its slowest job, run here for each
   launcher (joblib, and warm: workers that import the heavy libraries once).
4. With ``--junit FILE`` (a report of the suite's run, ``pytest --junitxml=FILE``), or ``--suite PATH ...``
   (run here, ``pytest -n 2``, e.g. ``--suite tests``: about 10 minutes on 2 quiet cores): the slowest tests.

The load average is printed beside every table: these are ratios and counts, the times (3) are only
comparable at a similar load. The scripted auditor's replies are the same size every turn, so the
token counts measure the context policy, not a model's verbosity.

Run: ``python bench/bench_audit_cost.py [--iterations 5,10,20] [--turns 2] [--sweep] [--junit report.xml | --suite tests]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from audit.censorship.loop import run
from audit.testing.prompt_cache import PromptCache
from audit.testing.replies import TEST_API_KEY
from audit.testing.scripted_audit import AUDITOR_MODEL, Script, audit_config
from audit.testing.server import FakeOpenRouter

READ, WRITE = 0.1, 1.25
"""Anthropic's cache prices as multiples of the input price (OpenRouter prompt-caching guide)."""
MIN_TOKENS = 1024
"""The smallest prefix Claude Sonnet 4 and OpenAI cache (same guide)."""


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} / {five:.1f} / {fifteen:.1f} (1/5/15 min) on {os.cpu_count()} cores"


def audit_usage(server: FakeOpenRouter, out: Path, model: str, context: str, turns: int, iterations: int,
                cache: PromptCache | None) -> dict[str, Any]:
    """One default-shaped audit (judge and assistant baseline on): its ledger's calls."""
    script = Script()
    server.handler = cache.wrap(script.handler) if cache else script.handler
    cfg = audit_config(out, f"auditor.model={model}", f"max_iterations={iterations}", f"auditor.context={context}",
                       f"auditor.context_turns={turns}", "judge=default", "technique.with_baseline=true")
    with contextlib.redirect_stdout(io.StringIO()):
        run_dir = run(cfg)
    return json.loads((run_dir / "usage.json").read_text())


def tokens(usage: dict[str, Any], tag: str | None = None) -> tuple[int, int, int, int]:
    """(prompt + completion tokens, prompt tokens, cached prompt tokens, cache-write tokens) of the calls of ``tag``."""
    calls = [c for c in usage["calls"] if tag is None or c["tag"] == tag]
    return (sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls), sum(c["prompt_tokens"] for c in calls),
            sum(c["cached_prompt_tokens"] for c in calls), sum(c["cache_write_tokens"] for c in calls))


def saving(usage: dict[str, Any], tag: str) -> str:
    """The prompt cache's saving the ledger records for the calls of ``tag`` (an estimate, priced from
    litellm's map or the model list), of what they would have cost uncached at the same prices;
    "unpriced" when neither lists a price (the billed cost is not the base here: the loopback server
    bills every prompt token at its prompt price)."""
    calls = [c for c in usage["calls"] if c["tag"] == tag]
    if not any(c.get("priced_calls") for c in calls):
        return "unpriced (in neither litellm's map nor the model list)"
    saved = sum(c["cache_saving"] for c in calls)
    priced = sum(c["input_cost"] + c["cache_read_cost"] + c["cache_write_cost"] + c["output_cost"] for c in calls)
    where = "the model list" if any(c.get("list_priced_calls") for c in calls) else "litellm's map"
    return f"${saved:.4f} of ${priced + saved:.4f} ({saved / (priced + saved):.0%}, {where})"


def growth_table(server: FakeOpenRouter, tmp: Path, iterations: list[int], turns: int) -> None:
    print(f"\n1. tokens per audit by iterations (judge and baseline on; {load()})\n")
    print("(per iteration: audit tokens / iterations; flat = the audit grows linearly, rising = quadratically)\n")
    print("| iterations | full: audit tokens | full: per iteration | full: auditor's | full: largest request | "
          f"ledger/{turns}: audit tokens | ledger/{turns}: per iteration | ledger/{turns}: auditor's | "
          f"ledger/{turns}: largest request | full / ledger |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in iterations:
        row = []
        for context in ("full", "ledger"):
            usage = audit_usage(server, tmp / f"{context}{n}", AUDITOR_MODEL, context, turns, n, None)
            largest = max(c["prompt_tokens"] for c in usage["calls"] if c["tag"] == "auditor")
            row.append((tokens(usage)[0], tokens(usage, "auditor")[0], largest))
        (f, fa, fl), (b, ba, bl) = row
        print(f"| {n} | {f:,} | {f / n:,.0f} | {fa:,} | {fl:,} | {b:,} | {b / n:,.0f} | {ba:,} | {bl:,} | {f / b:.2f}x |")


def cache_table(server: FakeOpenRouter, tmp: Path, n: int, turns: int) -> None:
    print(f"\n2. prompt caching, {n}-iteration audits, the auditor's calls ({load()})\n")
    print("| auditor | context | prompt tokens | cached (share) | written | billed as (input-price tokens) | "
          "ledger's saving (estimate) |")
    print("|---|---|---|---|---|---|---|")
    for model in ("anthropic/claude-sonnet-4", "openai/gpt-4.1"):
        for context in ("full", "ledger"):
            usage = audit_usage(server, tmp / f"{model.split('/')[0]}{context}", model, context, turns, n,
                                PromptCache(min_tokens=MIN_TOKENS))
            _, prompt, read, written = tokens(usage, "auditor")
            billed = f"{prompt - read - written + READ * read + WRITE * written:,.0f}" \
                if model.startswith("anthropic/") else "n/a (0.25-0.5x by model)"
            label = context if context == "full" else f"ledger/{turns}"
            print(f"| {model} | {label} | {prompt:,} | {read:,} ({read / prompt:.0%}) | {written:,} | {billed} | "
                  f"{saving(usage, 'auditor')} |")


def sweep_table() -> None:
    """``bench/bench_sweep.py``'s ratio for each launcher: joblib (a fresh worker per job) and warm
    (workers that imported the heavy libraries once)."""
    bench = Path(__file__).resolve().parent / "bench_sweep.py"
    for launcher in ("joblib", "warm"):
        print(f"\n3. sweep time over its slowest job, hydra/launcher={launcher} (bench/bench_sweep.py; before: {load()})")
        done = subprocess.run([sys.executable, str(bench), "--singles", "3", "--launcher", launcher],
                              capture_output=True, text=True)
        print(done.stdout.strip() or done.stderr[-2000:])
        print(f"(after: {load()})")


def suite_report(paths: list[str], report: Path) -> Path:
    """Run ``paths`` (relative to the repository) with pytest on 2 workers into the junit ``report``."""
    print(f"\n(running pytest -n 2 {' '.join(paths)} for its slowest tests; before: {load()})")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:randomly", f"--junitxml={report}",
                    *paths], capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    print(f"(after: {load()})")
    return report


def slowest_tests(report: Path, count: int = 15) -> None:
    cases = [(float(case.get("time") or 0), f"{case.get('classname')}::{case.get('name')}")
             for case in ET.parse(report).getroot().iter("testcase")]
    total = sum(t for t, _ in cases)
    print(f"\n4. the suite's slowest tests ({report}: {len(cases)} tests, {total:.0f} s in tests)\n")
    print("| seconds | test |")
    print("|---|---|")
    for seconds, name in sorted(cases, reverse=True)[:count]:
        print(f"| {seconds:.1f} | {name} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", default="5,10,20", help="comma-separated max_iterations")
    parser.add_argument("--turns", type=int, default=2, help="auditor.context_turns of the ledger context")
    parser.add_argument("--sweep", action="store_true", help="also time the joblib sweep (minutes)")
    parser.add_argument("--junit", type=Path, help="a junit report of the suite's run: print its slowest tests")
    parser.add_argument("--suite", nargs="+", metavar="PATH",
                        help="run these test paths here (e.g. tests) and print their slowest tests")
    args = parser.parse_args()
    iterations = [int(n) for n in args.iterations.split(",")]
    with FakeOpenRouter() as server, tempfile.TemporaryDirectory() as tmp:
        os.environ |= {"OPENROUTER_API_KEY": TEST_API_KEY, "OPENROUTER_API_BASE": server.base_url,
                       "AUDIT_CACHE_DIR": str(Path(tmp) / "cache")}
        growth_table(server, Path(tmp), iterations, args.turns)
        cache_table(server, Path(tmp), max(iterations), args.turns)
    if args.sweep:
        sweep_table()
    if args.suite:
        with tempfile.TemporaryDirectory() as tmp:
            slowest_tests(suite_report(args.suite, Path(tmp) / "junit.xml"))
    elif args.junit:
        slowest_tests(args.junit)
    if not (args.sweep or args.junit or args.suite):
        print("\n(--sweep: the sweep ratio; --junit <report.xml> or --suite <paths>: the suite's slowest tests)")


if __name__ == "__main__":
    main()
