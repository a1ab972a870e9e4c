"""Token and cost totals of a run, computed from what the run dir records.

The gateway's ledger only knows the calls of the current process; a resumed run must
count the calls of every earlier session too. Each output file therefore carries the
usage of the calls that produced it (:func:`call_usage`, the same record the ledger keeps per
call), and the totals are the sum over those records, so they survive a SIGKILL and a resume
without double counting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from audit.llm.types import LLMResponse
from audit.record.usage import Usage


def call_usage(response: LLMResponse) -> Usage:
    """The usage record of one call, as the ledger and the output files store it.

    A reply from the response cache or shared with a request in flight cost nothing in this run,
    so its cost, latency and retries count as zero here while the tokens still show what the
    prompt and reply were.
    """
    one = replace(response.usage, calls=1, cached_calls=int(response.cached and not response.shared),
                  shared_calls=int(response.shared), retries=response.retries, latency_s=response.latency_s,
                  surrogates_replaced=response.surrogates_replaced, model=response.model, provider=response.provider)
    return one.free() if response.cached else one


@dataclass
class Totals:
    """Running totals for the progress line and ``summary.json``: the usage so far and the
    auditor replies that could not be parsed."""

    usage: Usage = field(default_factory=Usage)
    parse_failures: int = 0

    def add(self, usage: Usage | Mapping[str, Any] | None) -> None:
        """Count one usage record (a single call or a sum of calls)."""
        if usage:
            self.usage = self.usage + Usage.of(usage)

    @property
    def tokens(self) -> int:
        return self.usage.tokens

    @property
    def cost(self) -> float:
        return self.usage.cost

    def as_dict(self) -> dict[str, Any]:
        return {**self.usage.as_dict(), "parse_failures": self.parse_failures}
