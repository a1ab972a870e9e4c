"""A spending cap (``budget.max_cost_usd``) shared by every process that writes one ledger file.

A sweep's jobs run in several processes (joblib) or on several machines (Slurm), so the
running total cannot live in memory: it is a small JSON file under the sweep dir
(``budget.json``), read and rewritten under an exclusive file lock (``budget.json.lock``)
each time a call's cost is known. The gateway asks :meth:`Budget.check` as each call takes its
concurrency slot (not before it queues for one, or queued calls would all pass on an old total);
once the total reaches the cap no new call starts, so the total can exceed the cap only by the
calls already in flight (at most ``gateway.max_concurrency`` per job). A single run keeps its
total in memory, starting from what its ledger says earlier sessions spent (a resumed run).
"""

from __future__ import annotations

import fcntl
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from audit.io.atomic import write_json
from audit.llm.types import GatewayError

BUDGET_FILE = "budget.json"
BUDGET_KIND = "budget"
"""The :class:`GatewayError` kind of a call refused because the budget is spent."""


class Budget:
    """The cap, and where the shared total lives (None: this process only)."""

    def __init__(self, max_cost_usd: float, path: Path | None = None):
        self.max_cost_usd = float(max_cost_usd)
        self.path = path
        self._spent = 0.0  # used when there is no file
        self._lock = threading.Lock()

    def spent(self) -> float:
        """The total charged so far by every process sharing the file."""
        return float(self._read().get("spent_usd", 0.0))

    @property
    def exhausted(self) -> bool:
        return self.spent() >= self.max_cost_usd

    def check(self, what: str) -> None:
        """Refuse a call (``what`` names it) once the cap is reached: raise GatewayError kind ``budget``."""
        spent = self.spent()
        if spent >= self.max_cost_usd:
            raise GatewayError(BUDGET_KIND, f"budget.max_cost_usd={self.max_cost_usd:g} is spent (${spent:.4f}"
                               f"{f' in {self.path}' if self.path else ''}); {what} not sent")

    def charge(self, cost: float) -> None:
        """Add one finished call's cost to the shared total (under the file lock)."""
        if cost <= 0:
            return
        with self._locked():
            state = self._read()
            state["spent_usd"] = round(float(state.get("spent_usd", 0.0)) + cost, 10)
            state["charged_calls"] = int(state.get("charged_calls", 0)) + 1
            state["max_cost_usd"] = self.max_cost_usd
            if self.path is None:
                self._spent = state["spent_usd"]
            else:
                write_json(self.path, state)

    def _read(self) -> dict[str, float]:
        if self.path is None:
            return {"spent_usd": self._spent}
        try:  # written atomically (rename), so a reader never sees half a file
            return dict(json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return {}

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            if self.path is None:
                yield
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_name(self.path.name + ".lock"), "a") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)


def stopped_by(budget: Budget | None) -> bool:
    """True when a run's failure came from a spent budget (so it ends ``cancelled`` with stop reason
    ``budget``, not ``error``)."""
    return budget is not None and budget.exhausted


_active: Budget | None = None


def activate(budget: Budget | None) -> None:
    """Make ``budget`` the one every gateway built in this process from now on charges (None: no cap)."""
    global _active
    _active = budget


def active() -> Budget | None:
    """The budget set by :func:`activate` (the job runner sets it from ``budget.max_cost_usd``)."""
    return _active
