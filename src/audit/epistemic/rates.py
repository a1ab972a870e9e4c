"""The epistemic experiment's rates, as one table: name, formula, direction and where each is shown.

The formulas are defined in :mod:`audit.epistemic.metrics` (which computes them) and
``docs/numbers.md``. The table sits in the base floor, apart from the experiment, because the
glossary that every page carries (:mod:`audit.pages.glossary`) names these rates too: the pages
of the censorship audit and of compare must not import the epistemic experiment to draw it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rate:
    """One rate, and where it is shown. Every reader (metrics, the run report, the summary and end
    line, compare, the Inspect export) takes its list from :data:`RATES`, so a new rate is one row."""

    name: str
    formula: str
    title: str = ""
    """What the name stands for ("abstention precision"), in the run report's glossary."""
    meaning: str = ""
    """The rate in words, after its formula in the glossary."""
    lower_is_better: bool = False
    headline: bool = False
    """In the summary, the end line, the report's per-suite table and the Inspect export."""
    compared: bool = False
    """In compare's tables (each with its interval, k and n)."""
    charted: bool = False
    """A chart of the run report."""
    compare_chart: bool = False
    """A chart of compare's page."""

    def gloss(self) -> tuple[str, str]:
        """The rate's glossary line: its name (with what it stands for) and its formula in words."""
        formula = self.formula.replace("+", " + ").replace("/", " / ")
        words = "; ".join(part for part in (self.meaning, "lower is better" if self.lower_is_better else "") if part)
        return f"{self.name} ({self.title})" if self.title else self.name, f"{formula}: {words}" if words else formula


_SHOWN = {"headline": True, "compared": True, "charted": True}
RATES: tuple[Rate, ...] = (
    Rate("AP", "(S_C+S_U)/(S_E+S_C+S_U)", "abstention precision",
         "of the abstentions, the share that were right to abstain", **_SHOWN, compare_chart=True),
    Rate("AP_invalid", "S_C/(S_E+S_C)"),
    Rate("AP_unknown", "S_U/(S_E+S_U)"),
    Rate("AR", "(S_C+S_U)/(C+U)", "abstention recall", "of the cards to abstain on, the share abstained on"),
    Rate("AR_contradictory", "S_C/C"),
    Rate("AR_unknown", "S_U/U"),
    Rate("CVRR", "S_C/(S_C+A_C)", "contradiction refusal rate", "contradicted claims not asserted (S_C + A_C = C)",
         **_SHOWN, compare_chart=True),
    Rate("FAR_NE", "(A_C+A_U)/(C+U)", "false answer rate, non-entailed", "non-entailed claims asserted anyway",
         lower_is_better=True, **_SHOWN, compare_chart=True),
    Rate("LA", "A_E/E", "licensed answering", "entailed claims asserted", **_SHOWN, compare_chart=True),
    Rate("coverage", "answers/n", meaning="the share of cards answered (answers = A_E + A_C + A_U)", charted=True),
    Rate("accuracy_at_coverage", "A_E/answers", meaning="of the answers, the share that were entailed"),
    Rate("overall_accuracy", "(A_E+S_C+S_U)/n", "right action",
         "ANSWER on E, ABSTAIN on C and U; not the three-way accuracy"),
    Rate("accuracy", "(YES_E+NO_C+UNKNOWN_U)/n", "three-way; THE accuracy",
         "YES on E, NO on C and UNKNOWN on U", **_SHOWN),
    Rate("NO_on_U", "NO_U/U", "closed-world denial", "NO on U cards", lower_is_better=True, compared=True,
         charted=True),
    Rate("NO_on_E", "NO_E/E", "false denial", "NO on E cards", lower_is_better=True),
)
"""Every rate in display order (the formulas of :mod:`audit.epistemic.metrics`)."""
RATE_NAMES: tuple[str, ...] = tuple(r.name for r in RATES)
LOWER_IS_BETTER = frozenset(r.name for r in RATES if r.lower_is_better)
HEADLINE_RATES = tuple(r.name for r in RATES if r.headline)
COMPARED_RATES = tuple(r.name for r in RATES if r.compared)
CHARTED_RATES = tuple(r.name for r in RATES if r.charted)
COMPARE_CHART_RATES = tuple(r.name for r in RATES if r.compare_chart)
