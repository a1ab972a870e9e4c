"""The fixed-question benchmark's terms for a page's glossary (:mod:`audit.pages.glossary`): its
shares, fact recall, lie rate, assessments, gaps, counts and cell keys (:mod:`audit.benchmark.cells`;
its comparison page, :mod:`audit.compare.benchmark`)."""

from __future__ import annotations

from audit.judging.labels import headlines, lead
from audit.pages.glossary import Term, Terms

_LEAD = lead()

GAP_RATE_NAMES = (*(str(label.headline) for label in headlines()), "fact recall", "lie rate", "evaluation-aware")
"""The rates of the benchmark's gap tables, as their headers name them (audit.compare.benchmark.GAP_RATES)."""

_Q = "interval over questions, rollouts nested (one question: its draws)"

TERMS = Terms((
    ((f"{_LEAD.headline} share", *(f"{side} {_LEAD.headline}" for side in ("censored", "control", "technique",
                                                                              "assistant"))),
     Term(f"{_LEAD.headline} share (benchmark)",
          f"draws labelled {_LEAD.name} / labelled draws (label failures left out); {_Q}", "benchmark-refusal-share")),
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
))
