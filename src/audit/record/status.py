"""The one status vocabulary of a run, for both experiments (modelled on inspect_ai's log status).

On disk a run is ``started`` (its process is at work, or was killed), ``success`` (it did all it
set out to do, possibly with some failed calls: ``failed_calls`` counts them and a resume redoes
them), ``cancelled`` (stopped on purpose before the end, keeping what it had: Ctrl-C, SIGTERM, a
spent budget) or ``error`` (it could not go on, or its numbers describe failures rather than the
model). ``stop_reason`` says why a run stopped where that matters to the reader.

Run dirs written before this vocabulary used seven names across the two experiments;
:func:`from_legacy` maps them, so old runs read like new ones.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal


class Status(str, Enum):
    STARTED = "started"
    SUCCESS = "success"
    CANCELLED = "cancelled"
    ERROR = "error"


StopReason = Literal["auditor", "max_iterations", "max_draws", "auditor_unusable", "budget", "interrupted",
                     "mostly_errors"]
"""Why a run stopped: the auditor ended the audit itself, the audit reached ``max_iterations`` (or,
under ``technique=auto``, spent its ``max_draws``), the auditor gave no usable reply after its
re-asks and concluded on what the audit had, the budget was spent, the user interrupted it,
or most of a system's answers were errors."""

FINISHED = (Status.SUCCESS,)
"""A run that needs nothing more: a sweep finish leaves it alone."""

_LEGACY: dict[str, tuple[Status, StopReason | None]] = {
    "running": (Status.STARTED, None),
    "completed": (Status.SUCCESS, "auditor"),
    "ok": (Status.SUCCESS, None),
    "stopped_at_max_iterations": (Status.SUCCESS, "max_iterations"),
    "completed_with_errors": (Status.SUCCESS, None),
    "interrupted": (Status.CANCELLED, "interrupted"),
    "stopped_budget": (Status.CANCELLED, "budget"),
    "mostly_errors": (Status.ERROR, "mostly_errors"),
    "error": (Status.ERROR, None),
}


def from_legacy(status: object, error: object = None) -> tuple[Status, StopReason | None]:
    """A status as run dirs before the typed run record wrote it, in the current vocabulary.

    Current names pass through. A censorship run interrupted by an old version said
    ``error`` with the error ``interrupted``. Unknown names raise ``ValueError``.
    """
    text = str(status)
    if text == "error" and error == "interrupted":
        return Status.CANCELLED, "interrupted"
    if text in Status._value2member_map_:
        return Status(text), None
    if text not in _LEGACY:
        raise ValueError(f"unknown status {text!r} (expected one of {', '.join(s.value for s in Status)})")
    return _LEGACY[text]
