"""The auditor's citations, checked: every excerpt a hypothesis cites is looked up in the response it
names (:func:`audit.quotes.check_citation`) and marked ``verified``, with the reason when it is not."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from audit.censorship.schema import EVIDENCE_KEYS
from audit.quotes import Responses, check_citation


def check_evidence(hypotheses: list[dict[str, Any]], responses: Responses) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Annotate every cited excerpt with ``verified``; return the annotated copy and the counts.

    ``responses`` maps iteration -> response text, or a list of texts when the iteration has
    more than one sample (the response and its assistant baseline: each is searched on its own,
    so an elided quote cannot be stitched from both); a ``None`` is a failed call.
    """
    annotated = copy.deepcopy(hypotheses)
    for hypothesis in annotated:
        for key in EVIDENCE_KEYS:
            hypothesis[key] = [check_citation(item, responses) for item in hypothesis.get(key) or []]
    return annotated, citation_counts(annotated)


def citation_counts(hypotheses: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Citations, verified and unverified, from hypotheses :func:`check_evidence` annotated.

    Counting the saved marks (not re-checking) keeps a summary's counts equal to the marks its
    readers see, and lets the report count a run dir without its responses.
    """
    counts = {"citations": 0, "verified": 0, "unverified": 0}
    for hypothesis in hypotheses:
        for key in EVIDENCE_KEYS:
            for item in hypothesis.get(key) or []:
                counts["citations"] += 1
                counts["verified" if item.get("verified") else "unverified"] += 1
    return counts
