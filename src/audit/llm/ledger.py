"""The cost and usage ledger: one record per model call, totals per run.

litellm's price map has no ``openrouter/*`` entries and its ``completion_cost()`` guesses,
so cost is what OpenRouter itself reports in ``usage.cost``. Replies that cost nothing this
run are recorded with zero cost and flagged, so totals stay honest. The two flags are disjoint:
``cached`` means served from the response cache (an earlier run or session paid for it),
``shared`` means served by an identical request in flight at the same moment (single-flight,
which paid for it in this run); ``calls - cached_calls - shared_calls`` is the requests sent.

With a journal (``usage.jsonl`` beside ``usage.json``) every record is appended as the call
completes, so a SIGKILL loses at most the calls in flight, and a resumed run starts from
every earlier session's records: ``usage.json`` is then the summary of the whole run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from audit.io.atomic import write_json
from audit.io.journal import Journal, read_records


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
    """Served from the response cache (never also ``shared``)."""
    error: str | None = None
    endpoint: str | None = None
    api_base: str | None = None
    structured_output: str | None = None
    surrogates_replaced: int = 0
    """Lone UTF-16 surrogates (half an emoji) replaced by U+FFFD in the reply (``replies.sanitize``)."""
    shared: bool = False
    """Served by an identical request already in flight (single-flight): no HTTP call of its own."""
    cached_prompt_tokens: int = 0
    """Of ``prompt_tokens``, read from the provider's prompt cache (billed at its cache-read price)."""
    cache_write_tokens: int = 0
    """Of ``prompt_tokens``, written to the provider's prompt cache (billed at its cache-write price)."""
    estimated: bool = False
    """An attempt cut off in flight (deadline, Ctrl-C, a budget stop): the server had it and may bill
    it, and no reply said what it cost, so tokens and cost are the gateway's estimate
    (:mod:`audit.llm.aborted`; ``error`` says how it was reckoned)."""

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready dict; every field is a scalar, so no deep copy (``asdict``) is needed per call."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Ledger:
    """Thread-safe accumulator of :class:`CallRecord`; written as ``usage.json``.

    ``journal`` (optional) is read at once for earlier sessions' records and appended to from
    the first call on; its directory need not exist before then (a run dir is created after
    the gateway, so a bad config writes nothing).
    """

    def __init__(self, journal: Path | None = None) -> None:
        self._records: list[CallRecord] = read_journal(journal) if journal is not None else []
        self.earlier_cost = _cost(self._records)
        """What the journal's earlier sessions spent (a resumed run's budget starts from it)."""
        self._lock = threading.Lock()
        self._journal = Journal(journal) if journal is not None else None

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self._records.append(record)
            if self._journal is not None:
                self._journal.append(record.as_dict())

    def attach(self, journal: Path) -> None:
        """Start journalling to ``journal`` (for a run dir made after the gateway); its records come first."""
        with self._lock:
            if self._journal is not None:
                raise ValueError(f"ledger already journals to {self._journal.path}")
            pending, self._records = self._records, read_journal(journal)
            self.earlier_cost = _cost(self._records)
            self._journal = Journal(journal)
        for record in pending:
            self.add(record)

    def close(self) -> None:
        """Close the journal (reopened on the next :meth:`add`)."""
        with self._lock:
            if self._journal is not None:
                self._journal.close()

    def __len__(self) -> int:
        """Calls recorded so far (cheap: progress lines read it)."""
        with self._lock:
            return len(self._records)

    @property
    def records(self) -> list[CallRecord]:
        with self._lock:
            return list(self._records)

    def totals(self) -> dict[str, Any]:
        """Sums over every call so far (cost in USD as reported by the provider, plus the estimates of
    ``aborted_calls``, cut off in flight, given apart as ``estimated_cost``)."""
        records = self.records
        return {
            "calls": len(records),
            "cached_calls": sum(r.cached for r in records),
            "shared_calls": sum(r.shared for r in records),
            "prompt_tokens": sum(r.prompt_tokens for r in records),
            "cached_prompt_tokens": sum(r.cached_prompt_tokens for r in records),
            "cache_write_tokens": sum(r.cache_write_tokens for r in records),
            "completion_tokens": sum(r.completion_tokens for r in records),
            "cost": _cost(records),
            "retries": sum(r.retries for r in records),
            "errors": sum(r.error is not None and not r.estimated for r in records),
            "aborted_calls": sum(r.estimated for r in records),
            "estimated_cost": round(sum(r.cost for r in records if r.estimated), 10),
            "surrogates_replaced": sum(r.surrogates_replaced for r in records),
            "latency_s": round(sum(r.latency_s for r in records), 6),
        }

    def write(self, path: Path) -> Path:
        """Write totals, per-model and per-tag totals (the tag is the call's role, e.g. ``auditor``,
        ``judge``, or ``audited/<action>`` under ``technique=auto``) and every call record atomically."""
        records = self.records
        return write_json(path, {"totals": self.totals(), "by_model": _grouped(records, "model"),
                                 "by_tag": _grouped(records, "tag"), "calls": [r.as_dict() for r in records]})


def _grouped(records: list[CallRecord], key: str) -> dict[str, dict[str, float]]:
    """Calls, tokens and cost summed per value of the record field ``key``."""
    groups: dict[str, dict[str, float]] = {}
    for r in records:
        entry = groups.setdefault(getattr(r, key), {"calls": 0, "prompt_tokens": 0, "cached_prompt_tokens": 0,
                                                    "completion_tokens": 0, "cost": 0.0})
        entry["calls"] += 1
        entry["prompt_tokens"] += r.prompt_tokens
        entry["cached_prompt_tokens"] += r.cached_prompt_tokens
        entry["completion_tokens"] += r.completion_tokens
        entry["cost"] = round(entry["cost"] + r.cost, 10)
    return groups


def _cost(records: list[CallRecord]) -> float:
    return round(sum(r.cost for r in records), 10)


def read_journal(path: Path) -> list[CallRecord]:
    """The records in a ``usage.jsonl``; a line cut short by a kill mid-write is skipped."""
    known = {f.name for f in fields(CallRecord)}
    records = []
    for data in read_records(path):
        try:
            records.append(CallRecord(**{k: v for k, v in data.items() if k in known}))
        except TypeError:
            continue
    return records
