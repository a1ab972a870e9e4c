"""The definitions every page puts on its column headers and in its glossary panel.

One place defines what each number and label on a page means, so a header's tooltip, the page's
glossary and the documentation (``docs/numbers.md``, whose anchors each term names and a test
checks) say the same thing. A header is matched to its term by its text, whatever the table
calls it (``refused_share``, ``refused share``, ``AP ↓``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from audit.epistemic_rates import RATES
from audit.response_labels import headlines, labels, lead

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


_LABELS = {label.name: label.glossary for label in labels()}
"""The response labels' definitions for a reader (``audit/response_labels.yaml``)."""

GAP_RATE_NAMES = (*(str(label.headline) for label in headlines()), "fact recall", "lie rate", "evaluation-aware")
"""The rates of the benchmark's gap tables, as their headers name them (audit.compare.benchmark.GAP_RATES)."""

_TERMS: tuple[tuple[tuple[str, ...], Term], ...] = (
    *(((label, f"{label} share", f"{label}_share"),
       Term(f"{label} share", f"responses labelled {label} ({text}) / labelled responses; interval over runs "
                              "(one run: its responses)", label)) for label, text in _LABELS.items()),
    (("disputed", "disputed_share", "disputed share"),
     Term("disputed", "responses on which no label won more than half of a judge panel's votes (a label of its own, "
                      "in every denominator)", "disputed")),
    (("fact_recall", "facts revealed under technique", "technique_fact_recall", "recall", "facts revealed"),
     Term("facts revealed under technique", "key facts the target's own responses state (a verified quote) / key facts "
                                            "of the topic; interval over runs (one run: its facts)", "fact-recall")),
    (("baseline_fact_recall", "facts revealed by assistant baseline"),
     Term("facts revealed by assistant baseline", "the same recall over the assistant's answers to the same probes in "
                                                  "the same runs", "baseline-fact-recall")),
    (("contradiction_rate", "contradicted"),
     Term("contradiction rate", "key facts the target contradicted (asserted a false version) / key facts", "contradiction-rate")),
    ((*(k for label in headlines() for k in (f"{label.name}_gap", f"{label.headline} gap")), "facts_gap",
      "facts gap (technique − assistant baseline)", "facts gap vs assistant-technique runs", "facts_gap_vs_assistant_runs"),
     Term("knows-vs-says gap", "the technique's share (or recall) minus the assistant baseline's in the same runs; "
                               "interval over paired runs", "knows-vs-says")),
    ((f"{lead().headline} gap (zh − en)", "facts gap (zh − en)", f"{lead().name}_share_en", f"{lead().name}_share_zh"),
     Term("language gap", "share on the Chinese twin topic minus the English topic; interval over each side's runs",
          "language-gap")),
    (("unlabelled", "unlabelled by judge", "unlabelled by judge (technique)", "unlabelled by judge (baseline)",
      "unlabelled_en", "unlabelled_zh", "baseline_unlabelled"),
     Term("unlabelled by judge", "responses the judge could not label (failed, refused or unparsable call): out of every "
                                 "share's denominator, counted here", "unlabelled")),
    (("citations_verified", "citations_unverified"),
     Term("citations", "excerpts the final hypotheses cite, found (verified) or not found in the target's own "
                       "words of the response they name (a quote of the auditor's probe, prefill or opening is "
                       "unverified)",
          "unverified-citations")),
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
    ((f"{lead().headline} gap (a − b)", "facts gap (a − b)", f"{lead().name}_share_a", f"{lead().name}_share_b",
      *(f"{rate} gap (a − b)" for rate in GAP_RATE_NAMES), f"{lead().headline} a", f"{lead().headline} b"),
     Term("provider gap", "a cell's share (or recall) minus that of a cell sent the same requests but served by another "
                          "provider, endpoint or server; interval over each side's runs", "provider-gap")),
    (("run", "audited", "auditor", "topic", "technique", "baseline", "status", "iterations", "responses", "n_responses",
      "domain", "predicate", "system", "condition", "mapping", "kind", "problem", "path"),
     Term("run keys", "what identifies a run and how it ended: its models, topic or graph, technique, status and "
                      "the iterations or responses it holds", "run-keys")),
    (("n_cards", "cards", "errors", "n_rows", "n_errors"),
     Term("cards", "cards a system answered (errors: failed calls, out of every rate)", "epistemic-numbers")),
    (("kappa", "cohen's kappa", "kappa (labels)", "kappa (facts)"),
     Term("Cohen's kappa", "(p_o − p_e) / (1 − p_e) between two judgings over the items both labelled", "kappa")),
    (("alpha", "krippendorff's alpha"),
     Term("Krippendorff's alpha", "1 − D_o / D_e over every item with at least two votes", "alpha")),
)

# The fixed-question benchmark's numbers (audit.benchmark.cells; its comparison page, audit.compare.benchmark).
_Q = "interval over questions, rollouts nested (one question: its draws)"
_TERMS += (
    ((f"{lead().headline} share", *(f"{side} {lead().headline}" for side in ("censored", "control", "technique",
                                                                              "assistant"))),
     Term(f"{lead().headline} share (benchmark)",
          f"draws labelled {lead().name} / labelled draws (label failures left out); {_Q}", "benchmark-refusal-share")),
    (("official-line share",),
     Term("official-line share", f"draws labelled official_line / labelled draws; {_Q}", "benchmark-official-line")),
    (("fact recall (all facts)",),
     Term("fact recall (benchmark)", "facts the target's own words state (mentioned, quote verified) / judged facts, over "
                                     f"the cell's draws; {_Q}", "benchmark-fact-recall")),
    (("fact recall (knowable)", "fact recall (unstated by reference)"),
     Term("knowable facts", "fact recall on the facts the reference model states (verified) in at least one of its "
                            "rollouts of the question, and apart on the facts none of its rollouts of the question "
                            "states (unstated in these rollouts, not shown unknowable)", "knowable-facts")),
    (("lie rate",),
     Term("lie rate", f"facts the target contradicted (verified quote) / judged facts; {_Q}", "lie-rate")),
    (("honest share",),
     Term("honest share", f"draws the assessment calls honest / draws with an honesty verdict; {_Q}", "honest-share")),
    (("evaluation-aware share", "framing evaluation-aware", "natural evaluation-aware"),
     Term("evaluation-aware share", "draws whose response says or implies it is being tested / draws with an awareness "
                                    f"verdict; {_Q}", "eval-aware-share")),
    (tuple(f"{rate} gap (censored − control)" for rate in GAP_RATE_NAMES),
     Term("censored − control gap", "a rate on the censored questions minus the same on the control questions of the "
                                    "same cell keys; each side's interval over its questions, combined (MOVER)", "control-gap")),
    (tuple(f"{rate} gap (technique − assistant)" for rate in GAP_RATE_NAMES),
     Term("knows vs says (benchmark)", "a rate under the technique minus the same as the assistant on the same "
                                       "questions; paired interval over questions", "benchmark-knows-vs-says")),
    (tuple(f"{rate} gap (framing − natural)" for rate in GAP_RATE_NAMES),
     Term("framing gap", "a rate under the framing (evaluation, monitored, unmonitored) minus the same posed naturally, "
                         "on the same questions; paired interval over questions", "framing-gap")),
    (("questions", "draws", "replayed draws", "paired questions", "censored questions", "control questions"),
     Term("questions and draws", "questions behind a cell (the unit of its intervals) and draws (rollouts of them); a "
                                 "question two runs asked is one question, a draw the cache replayed into another "
                                 "run counts once (replayed draws: shown, not counted)", "benchmark-n")),
    (("judge failures", "assessment failures", "unjudged draws", "fact judgments failed", "unverified claims"),
     Term("judge failures (benchmark)", "draws whose label or assessment failed, facts whose judgment failed, draws "
                                        "not answered, and claims whose quote was not verified: out of every "
                                        "denominator, counted here", "benchmark-failures")),
    (("blocked", "blocked draws", "blocked share", "blocked_share"),
     Term("blocked", "draws a filter between the user and the model stopped (a typed 400 content_policy_violation or "
                     "refusal, a guardrail's or moderation's 403): no words of the model, so never judged, never a "
                     "refusal and never a failure; share over the draws judged or blocked, beside the refusal "
                     "share (API-side filtering apart from the model's censorship)", "blocked")),
    (("confirmed only",),
     Term("confirmed only (benchmark)", "facts whose words the question wrote and the target only agreed with or "
                                        "completed (quote verified, blind check passed): counted apart, in fact "
                                        "recall's denominator, never in its numerator", "benchmark-confirmed")),
    (("served by",),
     Term("served by", "the providers that served the cell's answered draws, with each one's draws; more than one "
                       "is marked (the cell's rates mix them: pin a provider to compare them)", "served-by")),
    (("role", "framing", "lang", "question set", "question kind", "category"),
     Term("benchmark cell keys", "what identifies a cell, never pooled: target or reference model, model, technique, "
                                 "framing, language, question set, censored or control, category", "benchmark-keys")),
)

# The epistemic rates from their one table (audit.epistemic_rates.RATES): name, formula, direction.
_TERMS += tuple(((r.name.lower(),), Term(r.name, f"{r.formula.replace('/', ' / ')}"
                                                 f"{', lower is better' if r.lower_is_better else ''}; Wilson interval over cards "
                                                 "(with repeats: over cards, repeats nested in their card)",
                                         r.name.lower())) for r in RATES)

_BY_ALIAS = {alias.lower(): term for aliases, term in _TERMS for alias in aliases}


def normalise(header: str) -> str:
    """A header's text as a lookup key: lower case, without the ↓/↑ marks and a trailing interval unit."""
    text = re.sub(r"\s*[↓↑]\s*$", "", header.strip()).lower()
    return re.sub(r"\s+", " ", text)


def term_for(header: str) -> Term | None:
    """The term a column header shows, or None for a header that is no number or label."""
    key = normalise(header)
    return _BY_ALIAS.get(key) or _BY_ALIAS.get(key.replace(" ", "_"))


def terms_for(headers: Iterable[str]) -> list[Term]:
    """The distinct terms of a page's headers, in first-seen order (its glossary panel)."""
    seen: dict[str, Term] = {}
    for header in headers:
        term = term_for(header)
        if term is not None:
            seen.setdefault(term.anchor, term)
    return list(seen.values())


def aliases() -> dict[str, Term]:
    """Every header text a term is known by (lower case) → its term."""
    return dict(_BY_ALIAS)


def all_terms() -> list[Term]:
    """Every term, once (for the docs check)."""
    return list({term.anchor: term for _, term in _TERMS}.values())
