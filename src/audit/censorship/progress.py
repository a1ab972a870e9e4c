"""The one-line progress report printed per iteration (spec: number, strategy, preview).

Kept pure (a string builder) so its shape is tested without running an audit; the line
also carries tokens and cost so far, which is what a user watching a paid run wants.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from audit.counted import counted
from audit.llm.accounting import Totals
from audit.llm.ledger import CallRecord
from audit.neutral import terminal_text
from audit.progress import Heartbeat, cache_note, format_duration, mark_line
from audit.record.usage import Usage

PREVIEW_CHARS = 100

def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    """``text`` on one line (whitespace collapsed, terminal controls removed), cut to ``limit``
    characters with an ellipsis."""
    flat = " ".join(terminal_text(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def iteration_line(iteration: int, max_iterations: int, strategy: str | None, response: str | None,
                   totals: Totals, *, label: str | None = None, error: str | None = None,
                   judge_failed: bool = False, eta: str | None = None) -> str:
    """``[3/20] historical_framing | deflected | "In 1989 ..." | 12,345 tok | $0.0123 | ≤ 1 min 10 s left``."""
    shown = f"ERROR {preview(error)}" if error else f'"{preview(response)}"'
    parts = [f"[{iteration}/{max_iterations}] {strategy or '-'}"]
    if label:
        parts.append(label)
    elif judge_failed:
        parts.append("unclassified (judge failed)")
    retries = totals.usage.retries
    parts += [shown, f"{totals.tokens:,} tok", f"${totals.cost:.4f}",
              *([f"{retries} {'retry' if retries == 1 else 'retries'}"] if retries else []), *([eta] if eta else [])]
    return " | ".join(parts)


def seconds_per_token(records: Sequence[CallRecord]) -> float | None:
    """Wall seconds per written token over the calls this run sent and got a reply to (prompt time
    included, so an estimate from it errs long); None before the first such call."""
    sent = [r.usage for r in records if not (r.cached or r.shared or r.error) and r.usage.completion_tokens]
    written = sum(u.completion_tokens for u in sent)
    return sum(u.latency_s for u in sent) / written if written else None


def beat(label: str, gateway: Any, max_tokens: int | None = None) -> Heartbeat:
    """A :class:`~audit.progress.Heartbeat` for a step waiting on a model call of at most ``max_tokens``:
    its bound is those tokens at the run's measured speed (none before a call has been timed), and
    its lines count the run's retries."""
    per_token = seconds_per_token(gateway.ledger.records)
    budget = per_token * max_tokens if per_token is not None and max_tokens else None
    return Heartbeat(label, budget_s=budget, retries=lambda: gateway.ledger.totals().retries)


class Session:
    """This process's share of a run (a resume continues an earlier one): its clock for the ETA and
    its calls, to say when every one of them was served from the response cache."""

    def __init__(self, responses_done: int, ledger_totals: Callable[[], Usage],
                 clock: Callable[[], float] = time.monotonic):
        self._clock, self._totals = clock, ledger_totals
        self._started, self._done_at_start = clock(), responses_done
        start = ledger_totals()
        self._calls_at_start, self._cached_at_start = start.calls, start.cached_calls

    def eta(self, iteration: int, max_iterations: int, tail_s: float | None = None) -> str | None:
        """``≤ 2 min 05 s left``: this session's time per iteration times the iterations left to the
        cap, plus ``tail_s``, the bound on what follows the last (the final summary, fact scoring);
        an upper bound, as the auditor may stop sooner. None before one iteration is timed."""
        timed = iteration - self._done_at_start
        if timed <= 0:
            return None
        per_iteration = (self._clock() - self._started) / timed
        left = per_iteration * max(0, max_iterations - iteration) + (tail_s or 0.0)
        return f"≤ {format_duration(left)} left" if left >= 1 else None

    def cache_note(self) -> str:
        """``; all 41 calls served from the cache (nothing sent)`` when this session sent nothing."""
        now = self._totals()
        return cache_note(now.calls - self._calls_at_start, now.cached_calls - self._cached_at_start)


def done_line(outcome: str, iterations: int, totals: Totals, failures: str, cache_note: str, report: Path) -> str:
    """``done: success (auditor) after 5 iterations; 12,345 tokens, $0.0123; report: <run dir>/report.html``."""
    return (f"done: {outcome} after {counted(iterations, 'iteration')}; {totals.tokens:,} tokens, "
            f"${totals.cost:.4f}{totals.usage.bill_notes()}"
            f"{failures}{cache_note}; report: {report}")


def say(line: str) -> None:
    """Progress goes to stdout (spec), flushed so a piped or killed run still shows it."""
    print(line, file=sys.stdout, flush=True)
    mark_line()
