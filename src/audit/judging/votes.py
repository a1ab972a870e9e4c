"""A panel's judgments of one item combined into the record a run keeps (pure: no I/O).

A *judgment* is one member's answer to one judge call, as :func:`audit.judging.call.call_panel`
gathers them: ``{"member", "sample", "error_kind", ...}`` plus what the single judge's call returns
(``label`` and ``rationale``, or ``facts``; ``error`` when it failed; ``raw_response``, ``usage``).
Every judgment is kept in the record (per-member labels, which member failed and how), beside the
panel's outcome from :func:`audit.judging.majority.panel_label`:

* a response label: ``label`` is the majority label, ``disputed``, or None when the outcome is
  ``failed`` (the response is then unclassified, out of every share's denominator, as a single
  judge's failure is); ``error`` says why it failed.
* key facts: one panel verdict per fact (``status`` the majority status, ``disputed``, or None
  when failed); when every call failed the record has no ``facts`` and an ``error``, as a single
  judge's failed fact scoring has.

``usage`` is the sum over the calls (None when none was answered), so the run's totals count
every call of the panel, and a panel whose every call failed counts as a failed call to redo.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from audit.record.usage import Usage
from audit.judging.majority import FAILED, PanelVerdict, panel_label

Judgment = Mapping[str, Any]


def _verdict(judgments: Sequence[Judgment], members: Sequence[str], samples: int,
             vote: Callable[[Judgment], str | None]) -> PanelVerdict:
    """The panel's verdict from ``vote(judgment)`` (None: no vote) of every member x sample."""
    votes: dict[str, list[str | None]] = {m: [None] * samples for m in members}
    errors: dict[str, list[str | None]] = {m: [None] * samples for m in members}
    for j in judgments:
        votes[j["member"]][j["sample"]] = vote(j)
        if votes[j["member"]][j["sample"]] is None:
            errors[j["member"]][j["sample"]] = f"{j.get('error_kind') or 'failed'}: {j.get('error') or 'no vote'}"
    return panel_label(votes, errors)


def _usage(judgments: Sequence[Judgment]) -> dict[str, Any] | None:
    usages = [j.get("usage") for j in judgments if j.get("usage")]
    return Usage.total(usages).as_dict() if usages else None


def _failure_line(verdict: PanelVerdict) -> str:
    first = verdict.failures[0].error if verdict.failures else "no vote"
    return f"panel: no majority without the {len(verdict.failures)} failed vote(s) of {verdict.votes} ({first})"


def label_record(judgments: Sequence[Judgment], members: Sequence[str], samples: int) -> dict[str, Any]:
    """The panel's label of one response (see the module docstring)."""
    verdict = _verdict(judgments, members, samples, lambda j: j.get("label"))
    record: dict[str, Any] = {**verdict.as_dict(), "judgments": list(judgments), "usage": _usage(judgments)}
    if verdict.outcome == FAILED:
        record["error"] = _failure_line(verdict)
    return record


def facts_record(judgments: Sequence[Judgment], members: Sequence[str], samples: int,
                 facts: Sequence[str]) -> dict[str, Any]:
    """The panel's verdict on each key fact (see the module docstring); a member's vote on a fact
    is the status its own call gave it (after the quote check: only verified quotes count)."""
    usage = _usage(judgments)
    if all(j.get("facts") is None for j in judgments):
        first = next((j.get("error") for j in judgments if j.get("error")), "no verdicts")
        return {"facts": None, "error": f"panel: every call failed ({first})", "judgments": list(judgments),
                "usage": usage}
    verdicts = []
    for k, fact in enumerate(facts):
        verdict = _verdict(judgments, members, samples,
                           lambda j, k=k: j["facts"][k]["status"] if j.get("facts") is not None else None)
        verdicts.append({"fact": fact, "status": verdict.label,
                         **{key: v for key, v in verdict.as_dict().items() if key != "label"}})
    return {"facts": verdicts, "judgments": list(judgments), "usage": usage}


def score_record(judgments: Sequence[Judgment], members: Sequence[str], samples: int) -> dict[str, Any]:
    """A panel's score of one item (the testbed protocol's 0-100 honesty score): the mean of the
    members' scores that came back; None, with ``error``, when every call failed."""
    scores = [j["score"] for j in judgments if isinstance(j.get("score"), (int, float))]
    record: dict[str, Any] = {"score": sum(scores) / len(scores) if scores else None, "votes": len(scores),
                              "judgments": list(judgments), "usage": _usage(judgments)}
    if not scores:
        record["error"] = f"panel: every call failed ({next((j.get('error') for j in judgments if j.get('error')), 'no score')})"
    return record
