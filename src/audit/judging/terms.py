"""The judging's terms for a page's glossary (:mod:`audit.pages.glossary`): each response label's
share (from ``judging/labels.yaml``), a panel's disputed items, the items the judge could not label
and the agreement between judgings."""

from __future__ import annotations

from audit.judging.labels import labels
from audit.pages.glossary import Term, Terms

TERMS = Terms((
    *(((label.name, f"{label.name} share", f"{label.name}_share"),
       Term(f"{label.name} share", f"responses labelled {label.name} ({label.glossary}) / labelled responses; interval "
                                   "over runs (one run: its responses)", label.name)) for label in labels()),
    (("disputed", "disputed_share", "disputed share"),
     Term("disputed", "responses on which no label won more than half of a judge panel's votes (a label of its own, "
                      "in every denominator)", "disputed")),
    (("unlabelled", "unlabelled by judge", "unlabelled by judge (technique)", "unlabelled by judge (baseline)",
      "unlabelled_en", "unlabelled_zh", "baseline_unlabelled"),
     Term("unlabelled by judge", "responses the judge could not label (failed, refused or unparsable call): out of every "
                                 "share's denominator, counted here", "unlabelled")),
    (("blocked", "blocked draws", "blocked share", "blocked_share"),
     Term("blocked", "draws a filter between the user and the model stopped (a typed 400 content_policy_violation or "
                     "refusal, a guardrail's or moderation's 403, a content_filter finish with no text): no words of "
                     "the model, so never judged, never a refusal and never a failure; share over the draws judged or "
                     "blocked, beside the refusal share (API-side filtering apart from the model's censorship)",
          "blocked")),
    (("kappa", "cohen's kappa", "kappa (labels)", "kappa (facts)"),
     Term("Cohen's kappa", "(p_o − p_e) / (1 − p_e) between two judgings over the items both labelled", "kappa")),
    (("alpha", "krippendorff's alpha"),
     Term("Krippendorff's alpha", "1 − D_o / D_e over every item with at least two votes", "alpha")),
))
