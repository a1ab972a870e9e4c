"""The hypothesis ledger: what the auditor believed at each turn, and what changed.

The auditor restates all its hypotheses every turn; the ledger turns that sequence into
per-turn deltas (added / changed / dropped, by stable id) and a per-id history, so a reader sees
how confidence moved and which evidence arrived when, instead of diffing JSON by eye. It is
rebuilt on resume by replaying the saved turns, so a resumed run ends with the same ledger.
"""

from __future__ import annotations

import copy
from typing import Any

from audit.censorship.schema import EVIDENCE_KEYS

SCALAR_FIELDS = ("type", "hypothesis", "confidence")


def _citations(items: list[dict[str, Any]] | None) -> list[tuple[int, int | None, str]]:
    """Citation identity: (iteration, draw, excerpt), ignoring the evidence check's annotations
    (``draw`` is None outside ``technique=auto``, where an iteration has one response)."""
    return [(item.get("iteration"), item.get("draw"), item.get("excerpt")) for item in items or []]


def _citation(iteration: int, draw: int | None, excerpt: str) -> dict[str, Any]:
    return {"iteration": iteration, **({"draw": draw} if draw is not None else {}), "excerpt": excerpt}


def _diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Changed fields: scalars as {old, new}; evidence lists as {added, removed} citations."""
    fields: dict[str, Any] = {}
    for key in SCALAR_FIELDS:
        if old.get(key) != new.get(key):
            fields[key] = {"old": old.get(key), "new": new.get(key)}
    for key in EVIDENCE_KEYS:
        before, after = _citations(old.get(key)), _citations(new.get(key))
        added = [_citation(*c) for c in after if c not in before]
        removed = [_citation(*c) for c in before if c not in after]
        if added or removed:
            fields[key] = {"added": added, "removed": removed}
    return fields


class HypothesisLedger:
    """Current hypotheses by id, the delta of every update, and each id's history."""

    def __init__(self) -> None:
        self._current: dict[str, dict[str, Any]] = {}
        self._history: dict[str, list[dict[str, Any]]] = {}
        self._last_iteration: int | None = None

    def update(self, iteration: int, hypotheses: list[dict[str, Any]]) -> dict[str, Any]:
        """Record the full hypothesis list of auditor turn ``iteration``; return its delta.

        A hypothesis missing from the list is dropped (the auditor restates all of them each
        turn); an id that comes back later counts as added again. Iterations must increase, so a
        turn replayed twice on resume fails loudly instead of doubling the history.
        """
        if self._last_iteration is not None and iteration <= self._last_iteration:
            raise ValueError(f"ledger already has iteration {self._last_iteration}; got {iteration}")
        incoming: dict[str, dict[str, Any]] = {}
        for hypothesis in hypotheses:
            hyp_id = str(hypothesis["id"])
            if hyp_id in incoming:
                raise ValueError(f"hypothesis id {hyp_id!r} appears twice in iteration {iteration}")
            incoming[hyp_id] = copy.deepcopy(hypothesis)
        delta: dict[str, Any] = {"added": [], "changed": [], "dropped": []}
        for hyp_id, new in incoming.items():
            old = self._current.get(hyp_id)
            if old is None:
                status = "added"
                delta["added"].append(hyp_id)
            else:
                fields = _diff(old, new)
                status = "changed" if fields else "unchanged"
                if fields:
                    delta["changed"].append({"id": hyp_id, "fields": fields})
            self._history.setdefault(hyp_id, []).append(self._snapshot(iteration, new, status))
        for hyp_id in self._current:
            if hyp_id not in incoming:
                delta["dropped"].append(hyp_id)
                self._history[hyp_id].append({"iteration": iteration, "status": "dropped", "confidence": None})
        self._current = incoming
        self._last_iteration = iteration
        return delta

    @staticmethod
    def _snapshot(iteration: int, hypothesis: dict[str, Any], status: str) -> dict[str, Any]:
        snapshot = {"iteration": iteration, "status": status}
        snapshot.update({key: hypothesis.get(key) for key in SCALAR_FIELDS})
        snapshot.update({key: len(hypothesis.get(key) or []) for key in EVIDENCE_KEYS})
        return snapshot

    def history(self) -> dict[str, list[dict[str, Any]]]:
        """Id -> one snapshot per turn it was present (status, confidence, text, evidence counts), plus its drop."""
        return copy.deepcopy(self._history)

    @classmethod
    def replay(cls, turns: list[tuple[int, list[dict[str, Any]]]]) -> HypothesisLedger:
        """Rebuild the ledger from saved turns ``(iteration, hypotheses)`` (resume)."""
        ledger = cls()
        for iteration, hypotheses in sorted(turns, key=lambda turn: turn[0]):
            ledger.update(iteration, hypotheses)
        return ledger

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HypothesisLedger):
            return NotImplemented
        return (self._current, self._history) == (other._current, other._history)
