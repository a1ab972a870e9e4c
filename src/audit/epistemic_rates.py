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
    lower_is_better: bool = False
    headline: bool = False
    """In the summary, the end line, the report's per-suite table and the Inspect export."""
    compared: bool = False
    """In compare's tables (each with its interval, k and n)."""
    charted: bool = False
    """A chart of the run report."""
    compare_chart: bool = False
    """A chart of compare's page."""


_SHOWN = {"headline": True, "compared": True, "charted": True}
RATES: tuple[Rate, ...] = (
    Rate("AP", "(S_C+S_U)/(S_E+S_C+S_U)", **_SHOWN, compare_chart=True),
    Rate("AP_invalid", "S_C/(S_E+S_C)"),
    Rate("AP_unknown", "S_U/(S_E+S_U)"),
    Rate("AR", "(S_C+S_U)/(C+U)"),
    Rate("AR_contradictory", "S_C/C"),
    Rate("AR_unknown", "S_U/U"),
    Rate("CVRR", "S_C/(S_C+A_C)", **_SHOWN, compare_chart=True),
    Rate("FAR_NE", "(A_C+A_U)/(C+U)", lower_is_better=True, **_SHOWN, compare_chart=True),
    Rate("LA", "A_E/E", **_SHOWN, compare_chart=True),
    Rate("coverage", "answers/n", charted=True),
    Rate("accuracy_at_coverage", "A_E/answers"),
    Rate("overall_accuracy", "(A_E+S_C+S_U)/n"),
    Rate("accuracy", "(YES_E+NO_C+UNKNOWN_U)/n", **_SHOWN),
    Rate("NO_on_U", "NO_U/U", lower_is_better=True, compared=True, charted=True),
    Rate("NO_on_E", "NO_E/E", lower_is_better=True),
)
"""Every rate in display order (the formulas of :mod:`audit.epistemic.metrics`)."""
RATE_NAMES: tuple[str, ...] = tuple(r.name for r in RATES)
LOWER_IS_BETTER = frozenset(r.name for r in RATES if r.lower_is_better)
HEADLINE_RATES = tuple(r.name for r in RATES if r.headline)
COMPARED_RATES = tuple(r.name for r in RATES if r.compared)
CHARTED_RATES = tuple(r.name for r in RATES if r.charted)
COMPARE_CHART_RATES = tuple(r.name for r in RATES if r.compare_chart)
