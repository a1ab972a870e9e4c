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
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from audit.io.atomic import write_json
from audit.io.journal import Journal, read_records
from audit.record.usage import Usage


@dataclass(frozen=True)
class CallRecord:
    """One call (successful, cached or failed): its role and route, its :class:`~audit.record.usage.Usage`
    (one call's worth: ``calls`` 1, the model and provider inside) and how it went.

    A ``usage.jsonl`` line is flat: the usage's fields beside the rest, and ``cached``/``shared`` as
    booleans, as lines have been since the ledger began (:meth:`from_dict` reads every older line).
    """

    tag: str
    route: str
    usage: Usage
    error: str | None = None
    endpoint: str | None = None
    api_base: str | None = None
    structured_output: str | None = None

    @property
    def cached(self) -> bool:
        """Served from the response cache (never also ``shared``)."""
        return self.usage.cached_calls > 0

    @property
    def shared(self) -> bool:
        """Served by an identical request already in flight (single-flight): no HTTP call of its own."""
        return self.usage.shared_calls > 0

    @property
    def estimated(self) -> bool:
        """An attempt cut off in flight: tokens and cost are the gateway's estimate (:mod:`audit.llm.aborted`;
        ``error`` says how it was reckoned)."""
        return self.usage.aborted_calls > 0

    def as_dict(self) -> dict[str, Any]:
        """The record as a flat JSON-ready dict (a ``usage.jsonl`` line)."""
        return {"tag": self.tag, "route": self.route, **self.usage.as_dict(), "cached": self.cached,
                "shared": self.shared, "estimated": self.estimated, "error": self.error, "endpoint": self.endpoint, "api_base": self.api_base,
                "structured_output": self.structured_output}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallRecord:
        """A line as any version wrote it: lines before the usage record had no ``calls``,
        ``cached_calls``, ``shared_calls``, ``errors``, ``aborted_calls`` or ``estimated_cost`` (a
        line was one call; the booleans and ``error`` said the rest)."""
        usage = Usage.of(data)
        aborted = usage.aborted_calls or int(bool(data.get("estimated")))
        usage = replace(usage, calls=usage.calls or 1, cached_calls=usage.cached_calls or int(bool(data.get("cached"))),
                        shared_calls=usage.shared_calls or int(bool(data.get("shared"))), aborted_calls=aborted,
                        estimated_cost=usage.estimated_cost or (usage.cost if aborted else 0.0),
                        errors=usage.errors or int(data.get("error") is not None and not aborted))
        return cls(str(data["tag"]), str(data["route"]), usage, *(None if data.get(k) is None else str(data[k])
                                                                  for k in ("error", "endpoint", "api_base",
                                                                            "structured_output")))


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
        # Keep the record as its journal line holds it (money and latency rounded), so totals summed
        # now equal the totals a resume sums from the journal, to the last digit.
        record = replace(record, usage=Usage.of(record.usage.as_dict()))
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

    def totals(self) -> Usage:
        """Sums over every call so far (cost in USD as reported by the provider)."""
        return Usage.total(r.usage for r in self.records)

    def write(self, path: Path) -> Path:
        """Write totals, per-model and per-tag totals (the tag is the call's role, e.g. ``auditor``,
        ``judge``, or ``audited/<action>`` under ``technique=auto``) and every call record atomically."""
        records = self.records
        return write_json(path, {"totals": self.totals().as_dict(), "by_model": _grouped(records, "model"),
                                 "by_tag": _grouped(records, "tag"), "calls": [r.as_dict() for r in records]})


def _grouped(records: list[CallRecord], key: str) -> dict[str, dict[str, Any]]:
    """The usage summed per value of ``key`` (``model`` or ``tag``)."""
    groups: dict[str, Usage] = {}
    for r in records:
        name = str(r.usage.model) if key == "model" else r.tag
        groups[name] = groups.get(name, Usage()) + r.usage
    return {name: usage.as_dict() for name, usage in groups.items()}


def _cost(records: list[CallRecord]) -> float:
    return round(sum(r.usage.cost for r in records), 10)


def read_journal(path: Path) -> list[CallRecord]:
    """The records in a ``usage.jsonl``; a line cut short by a kill mid-write is skipped."""
    records = []
    for data in read_records(path):
        try:
            records.append(CallRecord.from_dict(data))
        except (KeyError, TypeError, AttributeError):
            continue
    return records
