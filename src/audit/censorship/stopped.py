"""The one exception that ends an audit early on purpose (every step may raise it; the loop turns it
into one line naming the run dir and the resume command)."""

from __future__ import annotations

from typing import Any


class AuditStopped(Exception):
    """The audit cannot go on (auditor unusable, fatal target error); the run dir says why."""

    def __init__(self, message: str, *, failed_turn: dict[str, Any] | None = None):
        super().__init__(message)
        self.failed_turn = failed_turn
