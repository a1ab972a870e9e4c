"""Check that a quoted excerpt really occurs in the response it names (the auditor's citations, the
judge's fact quotes, the tables' fact quotes).

Auditor and judge LLMs paraphrase and invent quotes; a hypothesis or a fact credit resting on an
invented quote is worth nothing, so every citation is looked up in the response of its iteration
and marked. The match
forgives what copying through JSON changes without changing the words: Unicode width forms
(NFKC), case, whitespace, curly vs straight quotes, dash variants, markdown emphasis, surrounding
quotes and ellipses, and trailing punctuation. An inner ellipsis ("A ... B") means elision: the
parts must occur in order. Anything else (other words, another iteration) is unverified, with
the reason.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from collections.abc import Mapping, Sequence
from typing import Any

_QUOTES = "\"'`\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u2032\u2033\u00ab\u00bb\u2039\u203a\u300c\u300d\u300e\u300f"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_TRANSLATE = str.maketrans({**{c: "'" for c in _QUOTES}, **{c: "-" for c in _DASHES}, "*": None, "#": None})
_ELLIPSIS = re.compile(r"\s*(?:\[\s*\.{3,}\s*\]|\(\s*\.{3,}\s*\)|\.{3,})\s*")
_EDGE = " '.,;:!?-\u3002\uff0c"  # also strips CJK full stop/comma that NFKC leaves alone

Responses = Mapping[int, "str | Sequence[str | None] | None"]
MIN_EXCERPT = 4
"""Fewest characters (normalised, ellipses left out; a wide CJK character counts two, as it carries a
word: "开枪" passes) a verified excerpt has: a one-character excerpt occurs in any response and
proved nothing, yet counted as a verified citation."""


def _weight(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


@lru_cache(maxsize=1024)
def normalize(text: str) -> str:
    """Canonical form for matching: NFKC, casefold, one quote and dash style, no markdown, single spaces.

    Cached: every turn re-checks all citations against the same few responses.
    """
    text = unicodedata.normalize("NFKC", text).casefold().translate(_TRANSLATE)
    return " ".join(text.split())


def excerpt_parts(excerpt: str) -> list[str]:
    """The normalised pieces of an excerpt, split at ellipses, with quotes/punctuation trimmed at the edges."""
    parts = _ELLIPSIS.split(normalize(excerpt))
    return [p for p in (part.strip(_EDGE) for part in parts) if p]


def occurs(excerpt: str, text: str) -> bool:
    """True when every part of ``excerpt`` occurs in ``text``, in order, after normalisation."""
    parts = excerpt_parts(excerpt)
    if not parts:
        return False
    haystack = normalize(text)
    position = 0
    for part in parts:
        found = haystack.find(part, position)
        if found < 0:
            return False
        position = found + len(part)
    return True


def _texts(value: str | Sequence[str] | None) -> list[str]:
    """The texts of one iteration: the response, plus e.g. its assistant baseline."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [t for t in value if isinstance(t, str)]


def check_citation(item: Mapping[str, Any], responses: Responses) -> dict[str, Any]:
    """``item`` plus ``verified`` (and ``reason`` when not verified)."""
    out = dict(item)
    out.pop("reason", None)
    iteration = item.get("iteration")
    draw = item.get("draw")
    excerpt = item.get("excerpt") or ""
    reason = None
    texts = _texts(responses.get(iteration)) if iteration in responses else []
    if draw is not None and iteration in responses:
        # ``draw`` names one of the iteration's draws (1-based): the quote must be in that one
        drawn = responses[iteration]
        drawn = [drawn] if drawn is None or isinstance(drawn, str) else list(drawn)
        texts = _texts(drawn[draw - 1]) if 1 <= draw <= len(drawn) else []
    if not excerpt_parts(excerpt):
        reason = "empty excerpt"
    elif (length := sum(_weight(part) for part in excerpt_parts(excerpt))) < MIN_EXCERPT:
        reason = f"excerpt too short to show anything ({length} characters; quote at least {MIN_EXCERPT})"
    elif iteration not in responses:
        known = ", ".join(str(k) for k in sorted(responses)) or "none yet"
        reason = f"no response for iteration {iteration} (responses so far: {known})"
    elif draw is not None and not texts:
        reason = f"iteration {iteration} has no draw {draw} with text"
    elif not any(t.strip() for t in texts):
        reason = f"iteration {iteration} has no response text"
    elif not any(occurs(excerpt, t) for t in texts):
        elsewhere = [k for k in sorted(responses) if k != iteration and any(occurs(excerpt, t) for t in _texts(responses[k]))]
        reason = f"not found in the response of iteration {iteration}" + (f" draw {draw}" if draw is not None else "")
        if elsewhere:
            reason += f" (found in iteration {', '.join(map(str, elsewhere))})"
    out["verified"] = reason is None
    if reason:
        out["reason"] = reason
    return out
