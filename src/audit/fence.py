"""Model-written text shown to another model, made unable to end the fence it is shown in.

The judge and the auditor read the target's words between markers such as
``<<<RESPONSE>>>`` ... ``<<<END RESPONSE>>>`` (``censorship/prompts/*.txt``), and their system
prompts call everything inside untrusted. A reply that itself contains ``<<<END RESPONSE>>>``
followed by instructions would close the fence early and put those instructions outside it, in
the prompt's own voice. So every text that a model wrote (the target's replies, the auditor's
probes and openings, when another model reads them) passes through :func:`untrusted` before it
is placed in a fence: any run of three or more angle brackets (ASCII, fullwidth or small forms,
the shapes a marker can be spelt with) becomes the same number of single guillemets, which
read alike to a person but are no marker. Only the marker characters change; the text stays
readable, and one function serves the judge, the fact judge and the auditor's views.
"""

from __future__ import annotations

import re

_OPENERS = "<\uff1c\ufe64\u2329\u3008"
_CLOSERS = ">\uff1e\ufe65\u232a\u3009"
_RUN = re.compile(f"[{_OPENERS}]{{3,}}|[{_CLOSERS}]{{3,}}")


def untrusted(text: str) -> str:
    """``text`` with every fence-marker run (``<<<``, ``>>>`` and look-alikes) turned into ``‹‹‹``/``›››``."""
    return _RUN.sub(lambda m: ("\u2039" if m.group()[0] in _OPENERS else "\u203a") * len(m.group()), text)
