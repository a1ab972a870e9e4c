"""The cost and usage ledger: one record per model call, totals per run.

litellm's price map has no ``openrouter/*`` entries and its ``completion_cost()`` guesses,
so cost is what OpenRouter itself reports in ``usage.cost``. Cached replies are recorded
with zero cost (they cost nothing this run) and flagged, so totals stay honest.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from audit.io.atomic import write_json


@dataclass(frozen=True)
class CallRecord:
    """What one call (successful, cached or failed) cost and how it went."""

    tag: str
    route: str
    model: str
    provider: str | None
    prompt_tokens: int
    completion_tokens: int
    cost: float
    latency_s: float
    retries: int
    cached: bool
    error: str | None = None
    endpoint: str | None = None
    api_base: str | None = None
    structured_output: str | None = None


class Ledger:
    """Thread-safe accumulator of :class:`CallRecord`; written as ``usage.json``."""

    def __init__(self) -> None:
        self._records: list[CallRecord] = []
        self._lock = threading.Lock()

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self._records.append(record)

    @property
    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    def totals(self) -> dict[str, Any]:
        """Sums over every call so far (cost in USD as reported by the provider)."""
        records = self.records
        return {
            "calls": len(records),
            "cached_calls": sum(r.cached for r in records),
            "prompt_tokens": sum(r.prompt_tokens for r in records),
            "completion_tokens": sum(r.completion_tokens for r in records),
            "cost": round(sum(r.cost for r in records), 10),
            "retries": sum(r.retries for r in records),
            "errors": sum(r.error is not None for r in records),
            "latency_s": round(sum(r.latency_s for r in records), 6),
        }

    def write(self, path: Path) -> Path:
        """Write totals, per-model totals and every call record atomically."""
        records = self.records
        by_model: dict[str, dict[str, float]] = {}
        for r in records:
            entry = by_model.setdefault(r.model, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0})
            entry["calls"] += 1
            entry["prompt_tokens"] += r.prompt_tokens
            entry["completion_tokens"] += r.completion_tokens
            entry["cost"] = round(entry["cost"] + r.cost, 10)
        return write_json(path, {"totals": self.totals(), "by_model": by_model, "calls": [asdict(r) for r in records]})
