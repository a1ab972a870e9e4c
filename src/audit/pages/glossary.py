"""The definitions a page puts on its column headers and in its glossary panel.

A page's glossary is composed from the terms each experiment declares beside the numbers it
computes (``audit/<experiment>/terms.py``, ``audit/judging/terms.py``) and the few every run has
(:data:`COMMON`), so this module names no experiment and a new experiment brings its own terms.
A header's tooltip, the page's glossary and the documentation (``docs/numbers.md``, whose anchors
each term names and a test checks) say the same thing. A header is matched to its term by its
text, whatever the table calls it (``refused_share``, ``refused share``, ``AP ↓``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

DOCS_PAGE = "docs/numbers.md"
"""Where the full definitions live, with formulas and interval units (the repository's docs)."""


@dataclass(frozen=True)
class Term:
    """A number or label: its name as shown, one sentence with its formula, and its docs anchor."""

    name: str
    definition: str
    anchor: str

    @property
    def docs(self) -> str:
        return f"{DOCS_PAGE}#{self.anchor}"


Entry = tuple[tuple[str, ...], Term]
"""The header texts a term is known by, and the term."""


@dataclass(frozen=True)
class Terms:
    """The terms one experiment (or the judging, or every run) declares."""

    entries: tuple[Entry, ...]


COMMON = Terms((
    (("failed_calls", "flags"),
     Term("flags", "failed calls (holes after retries), unlabelled responses and failed fact scoring of the run",
          "failed-calls")),
    (("cost", "tokens"),
     Term("cost", "USD the provider reported for every call of the run (tokens: prompt + completion); cache replays cost 0",
          "cost")),
    (("runs", "paired_runs", "runs_without_baseline", "assistant_runs", "runs_en", "runs_zh", "repeat", "repeats",
      "counted", "off_language_runs", "missing"),
     Term("runs", "run counts behind a row: the run is the unit of every audit interval; a repeat (samples=k) is a "
                  "separate run, a cached re-run is not counted again", "runs")),
    (("settings", "settings_a", "settings_b", "provider_pin"),
     Term("settings", "what a system or target was sent and how (prompt, chat template, model id, provider pin, "
                      "endpoint, temperature, max_tokens, top_k, ...), from each run's config: shown where the runs "
                      "compared differ in it, never pooled", "target-settings")),
    (("providers", "providers_a", "providers_b", "provider"),
     Term("providers", "the providers that served the target's draws, each with its draw count (each reply names "
                       "its provider)", "provider-axis")),
    (("run", "audited", "auditor", "topic", "technique", "baseline", "status", "iterations", "responses", "n_responses",
      "domain", "predicate", "system", "condition", "mapping", "kind", "problem", "path"),
     Term("run keys", "what identifies a run and how it ended: its models, topic or graph, technique, status and "
                      "the iterations or responses it holds", "run-keys")),
))
"""What every run has: its keys, run counts, settings, providers, cost and flags."""


def normalise(header: str) -> str:
    """A header's text as a lookup key: lower case, without the ↓/↑ marks and a trailing interval unit."""
    text = re.sub(r"\s*[↓↑]\s*$", "", header.strip()).lower()
    return re.sub(r"\s+", " ", text)


class Glossary:
    """The terms of one kind of page, composed from :class:`Terms` groups (a later group's alias
    wins, as a later entry does within a group)."""

    def __init__(self, *groups: Terms) -> None:
        entries = [entry for group in groups for entry in group.entries]
        self._by_alias = {alias.lower(): term for aliases, term in entries for alias in aliases}
        self._terms = list({term.anchor: term for _, term in entries}.values())

    def term_for(self, header: str) -> Term | None:
        """The term a column header shows, or None for a header that is no number or label."""
        key = normalise(header)
        return self._by_alias.get(key) or self._by_alias.get(key.replace(" ", "_"))

    def terms_for(self, headers: Iterable[str]) -> list[Term]:
        """The distinct terms of a page's headers, in first-seen order (its glossary panel)."""
        seen: dict[str, Term] = {}
        for header in headers:
            term = self.term_for(header)
            if term is not None:
                seen.setdefault(term.anchor, term)
        return list(seen.values())

    def aliases(self) -> dict[str, Term]:
        """Every header text a term is known by (lower case) → its term."""
        return dict(self._by_alias)

    def all_terms(self) -> list[Term]:
        """Every term, once."""
        return list(self._terms)
