"""The epistemic experiment's terms for a page's glossary (:mod:`audit.pages.glossary`): the cards
answered and every rate of :data:`audit.epistemic.rates.RATES` (name, formula, direction)."""

from __future__ import annotations

from audit.epistemic.rates import RATES
from audit.pages.glossary import Term, Terms

TERMS = Terms((
    (("n_cards", "cards", "errors", "n_rows", "n_errors"),
     Term("cards", "cards a system answered (errors: failed calls, out of every rate)", "epistemic-numbers")),
    *(((r.name.lower(),), Term(r.name, f"{r.formula.replace('/', ' / ')}"
                                       f"{', lower is better' if r.lower_is_better else ''}; Wilson interval over cards "
                                       "(with repeats: over cards, repeats nested in their card)",
                               r.name.lower())) for r in RATES),
))
