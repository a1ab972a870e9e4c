"""What each call cost, kept in one place: its record in the run's ledger and its charge to the budget.

Every call leaves one :class:`~audit.llm.ledger.CallRecord`, whatever became of it: a reply (fresh,
from the response cache, or shared with an identical request in flight), a failure given up on, or
an attempt cut off in flight (its cost an estimate, :mod:`audit.llm.aborted`). The budget is checked
when a call takes its slot and charged what the call cost, so a sweep stops at its cap.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from audit.llm import aborted
from audit.llm import budget as budgets
from audit.llm.accounting import call_usage
from audit.llm.ledger import CallRecord, Ledger
from audit.llm.prices import Price
from audit.llm.streamed import Received
from audit.llm.types import LLMResponse
from audit.record.usage import Usage


class Bookkeeper:
    """The gateway's ledger (written to ``usage_path``, journalled beside it) and its budget."""

    def __init__(self, budget: budgets.Budget | None, usage_path: Path | None):
        self.budget = budget
        self.usage_path = usage_path
        self.ledger = Ledger(usage_path.with_suffix(".jsonl") if usage_path is not None else None)
        self._count_earlier_spending()

    def record_usage_in(self, usage_path: Path) -> None:
        """Keep the ledger in ``usage_path`` (and its journal ``usage.jsonl``) from now on."""
        self.usage_path = usage_path
        self.ledger.attach(usage_path.with_suffix(".jsonl"))
        self._count_earlier_spending()

    def _count_earlier_spending(self) -> None:
        """A run's own budget (no shared file) starts from what the run's earlier sessions spent,
        so a resumed run cannot spend its cap a second time; a sweep's file already holds it."""
        if self.budget is not None and self.budget.path is None:
            self.budget.charge(self.ledger.earlier_cost)

    def write_usage(self) -> Path | None:
        """Write the ledger to ``usage_path`` (if one was given)."""
        return self.ledger.write(self.usage_path) if self.usage_path is not None else None

    def check(self, what: str) -> None:
        """Refuse ``what`` (a call about to start) once the budget is spent."""
        if self.budget is not None:
            self.budget.check(what)

    def charge(self, cost: float) -> None:
        if self.budget is not None:
            self.budget.charge(cost)

    def served(self, tag: str, route: str, response: LLMResponse) -> None:
        """Record a reply. A cached or shared one is free in this run: it is recorded with no cost,
        latency or retries.

        The ledger keeps the two apart (``cached``: from the response cache; ``shared``: from an
        identical request in flight), although the caller sees both as ``LLMResponse.cached``.
        """
        self.ledger.add(CallRecord(tag, route, call_usage(response), None, response.endpoint, response.api_base,
                                   response.structured_output))

    def failed(self, tag: str, route: str, model: str, error: str, started: float, retries: int, *,
               endpoint: str, api_base: str, structured_output: str | None) -> None:
        """Record a call that failed for good (``error``, already redacted): no tokens, no cost."""
        usage = Usage(calls=1, errors=1, retries=retries, latency_s=time.perf_counter() - started, model=model)
        self.ledger.add(CallRecord(tag, route, usage, error, endpoint, api_base, structured_output))

    def cut_off(self, received: Received | None, price: Price | None, why: str, started: float,
                retries: int, *, tag: str, route: str, model: str, payload: Mapping[str, Any], endpoint: str,
                api_base: str, structured_output: str | None) -> None:
        """Record an attempt cut off in flight with the cost it may have incurred (an estimate, marked
        as one) and charge it to the budget, so a sweep stops in time instead of missing these calls."""
        provider = received.provider if received is not None else None
        guess = aborted.estimate(payload, max_tokens=payload.get("max_tokens"), streamed=received is not None,
                                 received=received.so_far if received is not None else "",
                                 provider=provider, price=price)
        usage = Usage(calls=1, aborted_calls=1, retries=retries, prompt_tokens=guess.prompt_tokens,
                      completion_tokens=guess.completion_tokens, cost=guess.cost, estimated_cost=guess.cost,
                      latency_s=time.perf_counter() - started, model=model, provider=provider)
        self.ledger.add(CallRecord(tag, route, usage, f"{why}; {guess.basis}", endpoint, api_base, structured_output))
        self.charge(guess.cost)
