"""Model-written text shown to another model, made unable to end the fence it is shown in.

The judge and the auditor read the target's words between markers such as
``<<<RESPONSE>>>`` ... ``<<<END RESPONSE>>>`` (``censorship/prompts/*.txt``), and their system
prompts call everything inside untrusted. A reply that itself contains ``<<<END RESPONSE>>>``
followed by instructions would close the fence early and put those instructions outside it, in
the prompt's own voice. So every text that a model wrote (the target's replies, the auditor's
probes and openings, when another model reads them) passes through :func:`untrusted` before it
is placed in a fence: any run of three or more angle brackets becomes the same number of single
guillemets, which read alike to a person but are no marker.

Runs are looked for in the text as a reader takes it (:func:`audit.neutral.visible`): fullwidth and
small forms folded to ``<``/``>``, and invisible characters (zero-width space and joiners, word joiner,
soft hyphen, variation selectors, BOM, bidi marks, the combining grapheme joiner) removed, so
``<<`` + U+200B + ``<`` is a run like ``<<<``. Only a run's characters change (the invisible ones
inside it are dropped); the rest of the text stays exactly as written (a quote the fact judge copies
from it is still found in the response), and one function serves the judge, the fact judge and the
auditor's views.
"""

from __future__ import annotations

import re

from audit.neutral import visible_with_origins

_OPENERS = "<\u3008"  # in the folded view: fullwidth U+FF1C and small U+FE64 are "<", U+2329 and U+FE3F are U+3008
_CLOSERS = ">\u3009"
_RUN = re.compile(f"[{_OPENERS}]{{3,}}|[{_CLOSERS}]{{3,}}")
_ANY = re.compile("[<>\u2329\u232a\u3008\u3009\ufe3f\ufe40\ufe64\ufe65\uff1c\uff1e]")
"""Every character whose folded form is one of the above."""


def untrusted(text: str) -> str:
    """``text`` with every fence-marker run (``<<<``, ``>>>``, look-alikes, invisible characters between
    them) turned into ``‹‹‹``/``›››``."""
    if len(_ANY.findall(text)) < 3:  # the common case, at C speed: no run can be there
        return text
    view, origins = visible_with_origins(text)
    out, at = [], 0
    for run in _RUN.finditer(view):
        start, end = origins[run.start()][0], origins[run.end() - 1][1]
        out += [text[at:start], ("\u2039" if run.group()[0] in _OPENERS else "\u203a") * len(run.group())]
        at = end
    return "".join(out) + text[at:]
