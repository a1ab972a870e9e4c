"""Token and cost totals of a run, computed from what the run dir records.

The gateway's ledger only knows the calls of the current process; a resumed run must
count the calls of every earlier session too. Each output file therefore carries the
usage of the calls that produced it, and the totals are the sum over those records, so
they survive a SIGKILL and a resume without double counting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from audit.llm.types import LLMResponse

SUMMED = ("prompt_tokens", "completion_tokens", "cost", "retries", "calls", "cached_calls", "shared_calls", "latency_s",
          "cached_prompt_tokens", "cache_write_tokens")


def call_usage(response: LLMResponse) -> dict[str, Any]:
    """Usage record of one call, as stored in the output files.

    A cached reply cost nothing in this run, so its cost counts as zero here while the
    tokens still show what the prompt and reply were.
    """
    return {
        "prompt_tokens": response.usage.prompt_tokens,
        "cached_prompt_tokens": response.usage.cached_prompt_tokens,
        "cache_write_tokens": response.usage.cache_write_tokens,
        "completion_tokens": response.usage.completion_tokens,
        "cost": 0.0 if response.cached else response.usage.cost,
        "retries": response.retries,
        "calls": 1,
        "cached_calls": int(response.cached and not response.shared),  # as the ledger counts them
        "shared_calls": int(response.shared),
        "latency_s": response.latency_s,
        "model": response.model,
        "provider": response.provider,
    }


def sum_usage(records: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """Add usage records field by field (``None`` entries are skipped)."""
    total: dict[str, Any] = {key: 0 for key in SUMMED}
    total["cost"] = 0.0
    total["latency_s"] = 0.0
    for record in records:
        if record:
            for key in SUMMED:
                total[key] += record.get(key) or 0
    total["cost"] = round(total["cost"], 8)
    total["latency_s"] = round(total["latency_s"], 6)
    return total


@dataclass
class Totals:
    """Running totals for the progress line and ``summary.json``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    retries: int = 0
    calls: int = 0
    cached_calls: int = 0
    shared_calls: int = 0
    cached_prompt_tokens: int = 0
    """Prompt tokens the provider read from its prompt cache (a share of ``prompt_tokens``)."""
    cache_write_tokens: int = 0
    parse_failures: int = 0

    def add(self, usage: Mapping[str, Any] | None) -> None:
        """Count one usage record (a single call or a sum of calls)."""
        if usage:
            for f in fields(self):
                if f.name != "parse_failures":
                    setattr(self, f.name, getattr(self, f.name) + (usage.get(f.name) or 0))

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def cache_line(self) -> str:
        """The end line's prompt-cache part, e.g. ``; 12,345 of 20,000 prompt tokens (62%) read from the
        provider's prompt cache``; empty when the provider reported none. Its cost is already the
        provider's ``usage.cost``: the line says how much of the prompt the discount applied to."""
        if not self.cached_prompt_tokens or not self.prompt_tokens:
            return ""
        share = self.cached_prompt_tokens / self.prompt_tokens
        return (f"; {self.cached_prompt_tokens:,} of {self.prompt_tokens:,} prompt tokens ({share:.0%}) "
                "read from the provider's prompt cache")

    def as_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["cost"] = round(self.cost, 8)
        return data
