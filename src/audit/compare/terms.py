"""The comparison's own terms for a page's glossary (:mod:`audit.pages.glossary`), and each
comparison page's glossary, composed from the terms of the experiments it compares."""

from __future__ import annotations

from audit.benchmark import terms as benchmark
from audit.censorship import terms as censorship
from audit.epistemic import terms as epistemic
from audit.judging import terms as judging
from audit.judging.labels import lead
from audit.pages.glossary import COMMON, Glossary, Term, Terms

_LEAD = lead()

TERMS = Terms((
    ((f"{_LEAD.headline} gap (a − b)", "facts gap (a − b)", f"{_LEAD.name}_share_a", f"{_LEAD.name}_share_b",
      *(f"{rate} gap (a − b)" for rate in benchmark.GAP_RATE_NAMES), f"{_LEAD.headline} a", f"{_LEAD.headline} b"),
     Term("provider gap", "a cell's share (or recall) minus that of a cell sent the same requests but served by another "
                          "provider, endpoint or server; interval over each side's runs", "provider-gap")),
))
"""Numbers only a comparison computes: the gap between cells served apart."""

GLOSSARY = Glossary(judging.TERMS, censorship.TERMS, COMMON, TERMS, benchmark.TERMS, epistemic.TERMS)
"""Every comparison page's glossary: a comparison shows any experiment's numbers side by side."""
