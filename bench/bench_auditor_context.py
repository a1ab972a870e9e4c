"""The auditor's context: what a 20- and a 50-iteration audit cost under each mode, and the break-even
``auditor.context=auto`` reads, measured side by side in one run (loopback server, scripted models).

One audit per (mode, caching style, length) runs with the prompt cache the loopback
server plays as OpenRouter documents it (:mod:`audit.testing.prompt_cache`, 1024-token minimum):
Claude's (``anthropic/claude-sonnet-4``: breakpoints the gateway marks) and OpenAI's
(``openai/gpt-4.1``: every prefix, unmarked). Each auditor request's prompt, cached and written
tokens come from the run's ``usage.json``. The scripted auditor and target write replies of the sizes
given (defaults: a request that grows by about 1,560 tokens a turn under ``full``, the growth the team
measured on real audits, issue 40), so the measured growth per turn is printed first.

From those counts, for every row of the config's ``prompt_caching`` table (cache reads and writes as
multiples of the input price, from OpenRouter's prompt-caching guide), an N-iteration audit's auditor
input bills ``sum over its N + 1 requests (the last: the final summary) of uncached + read x cached +
write x written`` input-price tokens, under ``full`` and under the ledger. The break-even is the
longest audit for which ``full`` bills no more; the table prints it beside the row's ``full_until``
(the value ``auto`` reads, copied from here). Dollars use the auditor's input and output prices.

Run: ``python bench/bench_auditor_context.py [--iterations 20,50] [--horizon N] [--turns 2]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from audit.censorship.auditor_context import Caching, choose
from audit.censorship.loop import run
from audit.llm.prompt_cache import takes_breakpoints
from audit.paths import CONF_DIR
from audit.testing.prompt_cache import PromptCache
from audit.testing.replies import TEST_API_KEY
from audit.testing.scripted_audit import Script, audit_config, target_text
from audit.testing.server import FakeOpenRouter

EXPLICIT, AUTOMATIC = "anthropic/claude-sonnet-4", "openai/gpt-4.1"
"""The two caching styles the loopback server plays: breakpoints (Claude) and every prefix (OpenAI)."""
PRICES = {EXPLICIT: (3.0, 15.0), AUTOMATIC: (2.0, 8.0)}
"""USD per million input and output tokens: Claude Sonnet 4 as OpenRouter lists it (the issue's
"Sonnet 4 input prices"), GPT-4.1 as litellm's price map has it."""
MIN_TOKENS = 1024
FILLER = "The archive records further testimony about the events of that night in considerable detail. "


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} / {five:.1f} / {fifteen:.1f} (1/5/15 min) on {os.cpu_count()} cores"


def sized(text: str, tokens: int) -> str:
    """``text`` padded with filler sentences to about ``tokens`` tokens (the server counts 4 characters a token)."""
    return text + FILLER * max(0, (tokens * 4 - len(text)) // len(FILLER))


@dataclass(frozen=True)
class Sizes:
    """The scripted replies' sizes, in tokens."""

    response: int
    baseline: int
    reasoning: int

    def script(self) -> Script:
        return Script(target=lambda k: sized(target_text(k), self.response),
                      baseline_text=sized("I'm sorry, I can't discuss that topic.", self.baseline),
                      reasoning=lambda turn: sized(f"turn {turn}: ", self.reasoning))


Turn = tuple[int, int, int, int]
"""One auditor request: (prompt tokens, read from the cache, written to it, completion tokens)."""


def audit_turns(server: FakeOpenRouter, out: Path, model: str, context: str, turns: int, iterations: int,
                sizes: Sizes) -> list[Turn]:
    """One audit (judge and assistant baseline on, as shipped): its auditor requests in order."""
    server.handler = PromptCache(min_tokens=MIN_TOKENS).wrap(sizes.script().handler)
    cfg = audit_config(out, f"auditor.model={model}", f"max_iterations={iterations}", f"auditor.context={context}",
                       f"auditor.context_turns={turns}", "judge=default", "technique.with_baseline=true")
    with contextlib.redirect_stdout(io.StringIO()):
        run_dir = run(cfg)
    calls = json.loads((run_dir / "usage.json").read_text())["calls"]
    return [(c["prompt_tokens"], c["cached_prompt_tokens"], c["cache_write_tokens"], c["completion_tokens"])
            for c in calls if c["tag"] == "auditor"]


def billed(turns: Sequence[Turn], read: float, write: float) -> float:
    """Input-price tokens the requests' prompts bill at cache reads ``read`` and writes ``write``."""
    return sum(p - c - w + read * c + write * w for p, c, w, _ in turns)


def dollars(turns: Sequence[Turn], model: str, read: float, write: float) -> float:
    input_price, output_price = PRICES[model]
    return (billed(turns, read, write) * input_price + sum(t[3] for t in turns) * output_price) / 1e6


def break_even(full: Sequence[Turn], ledger: Sequence[Turn], read: float, write: float) -> int:
    """The longest audit (iterations, its final-summary request counted as one more) for which the cached
    full transcript bills no more input-price tokens than the ledger (0: none, and below 4 iterations
    the two send the same requests, the full one paying its cache writes)."""
    cheaper = [n for n in range(1, min(len(full), len(ledger)))
               if billed(full[:n + 1], read, write) <= billed(ledger[:n + 1], read, write)]
    return max(cheaper, default=0)


def growth(full: Sequence[Turn]) -> float:
    """The full request's growth per turn (least squares over the turns before the final one)."""
    sizes = [t[0] for t in full[:-1]]
    n = len(sizes)
    mean_x, mean_y = (n + 1) / 2, sum(sizes) / n
    return sum((i + 1 - mean_x) * (y - mean_y) for i, y in enumerate(sizes)) / sum((i + 1 - mean_x) ** 2 for i in range(n))


def table_rows() -> list[Caching]:
    return [Caching.from_row(row) for row in OmegaConf.load(Path(CONF_DIR) / "config.yaml").prompt_caching]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", default="20,50", help="comma-separated audit lengths to price")
    parser.add_argument("--horizon", type=int, help="iterations of the runs the break-even is read from "
                                                    "(default: the longest of --iterations)")
    parser.add_argument("--turns", type=int, default=2, help="auditor.context_turns of the ledger")
    parser.add_argument("--response-tokens", type=int, default=450, help="the target's response")
    parser.add_argument("--baseline-tokens", type=int, default=250, help="the assistant baseline's response")
    parser.add_argument("--reasoning-tokens", type=int, default=600, help="the auditor's reasoning")
    args = parser.parse_args()
    lengths = [int(n) for n in args.iterations.split(",")]
    args.horizon = args.horizon or max(lengths)
    sizes = Sizes(args.response_tokens, args.baseline_tokens, args.reasoning_tokens)
    runs: dict[tuple[str, str, int], list[Turn]] = {}
    print(f"(before: {load()})")
    with FakeOpenRouter() as server, tempfile.TemporaryDirectory() as tmp:
        os.environ |= {"OPENROUTER_API_KEY": TEST_API_KEY, "OPENROUTER_API_BASE": server.base_url,
                       "AUDIT_CACHE_DIR": str(Path(tmp) / "cache")}
        for model in (EXPLICIT, AUTOMATIC):
            for context in ("full", "ledger"):
                for n in sorted({*lengths, args.horizon}):
                    out = Path(tmp) / f"{model.split('/')[0]}{context}{n}"
                    runs[model, context, n] = audit_turns(server, out, model, context, args.turns, n, sizes)
    print(f"(after: {load()})")
    ledger_label = f"ledger/{args.turns}"
    first = runs[EXPLICIT, "full", args.horizon]
    print(f"\nscripted sizes: response {sizes.response}, baseline {sizes.baseline}, auditor reasoning "
          f"{sizes.reasoning} tokens; the full request grows {growth(first):,.0f} tokens a turn (first request "
          f"{first[0][0]:,}); the {ledger_label} request at turn {args.horizon}: "
          f"{runs[EXPLICIT, 'ledger', args.horizon][-2][0]:,} tokens")

    print("\n1. the auditor's cost per audit (input and output, USD), by context\n")
    print(f"| auditor (in/out $/M) | iterations | full, no cache | full, cached | {ledger_label}, cached | "
          "auto chooses | auto |")
    print("|---|---|---|---|---|---|---|")
    rows = table_rows()
    for model in (EXPLICIT, AUTOMATIC):
        row = next(r for r in rows if model.startswith(r.prefix))
        for n in lengths:
            full, ledger = runs[model, "full", n], runs[model, "ledger", n]
            costs = {"full": dollars(full, model, row.read, row.write),
                     "ledger": dollars(ledger, model, row.read, row.write)}
            mode, _ = choose(model, "openrouter", n, [row.__dict__])
            price = "/".join(f"{p:g}" for p in PRICES[model])
            print(f"| {model} ({price}) | {n} | ${dollars(full, model, 1.0, 1.0):.2f} | ${costs['full']:.2f} | "
                  f"${costs['ledger']:.2f} | {mode} | ${costs[mode]:.2f} |")

    print(f"\n2. break-even per prompt_caching row (measured on the {args.horizon}-iteration runs; input-price "
          "tokens per audit at the break-even)\n")
    print("| prefix | reads | writes | caching style measured | break-even (iterations) | config full_until |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        model = EXPLICIT if takes_breakpoints(row.prefix) else AUTOMATIC
        full, ledger = runs[model, "full", args.horizon], runs[model, "ledger", args.horizon]
        found = break_even(full, ledger, row.read, row.write)
        shown = f">= {found}" if found == args.horizon - 1 else str(found)
        print(f"| {row.prefix} | {row.read:g}x | {row.write:g}x | {model.split('/')[0]} | {shown} | {row.full_until} |")


if __name__ == "__main__":
    main()
