"""The censorship audit's terms for a page's glossary (:mod:`audit.pages.glossary`): fact recall
under the technique and by the assistant baseline, contradictions, the knows-vs-says and language
gaps, and the final hypotheses' citations."""

from __future__ import annotations

from audit.judging.labels import headlines, lead
from audit.pages.glossary import Term, Terms

_LEAD = lead()

TERMS = Terms((
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
    ((f"{_LEAD.headline} gap (zh − en)", "facts gap (zh − en)", f"{_LEAD.name}_share_en", f"{_LEAD.name}_share_zh"),
     Term("language gap", "share on the Chinese twin topic minus the English topic; interval over each side's runs",
          "language-gap")),
    (("citations_verified", "citations_unverified"),
     Term("citations", "excerpts the final hypotheses cite, found (verified) or not found in the target's own "
                       "words of the response they name (a quote of the auditor's probe, prefill or opening is "
                       "unverified)",
          "unverified-citations")),
))
