"""What every report and index page ends with: definitions on its headers, its glossary panel and
tables that fit their box (``glossary.js``, ``fit.js``), inline so every page works offline.

The scripts join the page's one script element (a page holds exactly one, which the escaping
tests count); the page's glossary (:class:`audit.pages.glossary.Glossary`, composed by the page's
builder from the terms of the experiments it shows) goes into it as a JSON literal, escaped so that
no text in it can close the element.
"""

from __future__ import annotations

import json
from importlib.resources import files

from markupsafe import Markup

from audit.pages.glossary import Glossary

IDENTITY = frozenset({"run", "audited", "topic", "technique", "system", "domain", "predicate", "model"})
"""Columns that name a row: never hidden to make a table fit."""
BOOKKEEPING = frozenset({"runs", "run-keys", "epistemic-numbers", "failed-calls", "unverified-citations",
                         "benchmark-n", "benchmark-failures"})
"""Terms hidden first when a table is too wide (counts and states beside the numbers)."""

CSS = """
.col-hidden { display: none; }
button.columns-toggle { font-size: .85em; margin: .2em 0; cursor: pointer; }
th a.def { font-size: .8em; text-decoration: none; color: #2a5db0; font-weight: normal; }
#glossary { position: fixed; right: 8px; bottom: 8px; max-width: 28em; max-height: 70vh; overflow: auto; background: #fff;
  border: 1px solid #bbb; padding: 3px 8px; font-size: 13px; box-shadow: 0 1px 4px rgba(0,0,0,.2); z-index: 10; }
#glossary summary { cursor: pointer; font-weight: bold; }
#glossary dt { font-weight: bold; margin-top: .4em; } #glossary dd { margin: 0 0 0 .8em; }
"""


def _priority(alias: str, anchor: str, headline: frozenset[str]) -> int:
    """0: never hidden; then hidden in the order 3 (bookkeeping), 2 (other numbers), 1 (headline numbers)."""
    return 0 if alias in IDENTITY else 1 if alias in headline else 3 if anchor in BOOKKEEPING else 2


def glossary_json(glossary: Glossary) -> str:
    """Aliases (a header's normalised text) → anchor, and each term's name, definition, docs and
    priority, as JSON safe inside a ``<script>`` element."""
    known = {alias: term.anchor for alias, term in glossary.aliases().items()}
    terms = {t.anchor: {"name": t.name, "definition": t.definition, "docs": t.docs} for t in glossary.all_terms()}
    data = {"aliases": known, "terms": terms,
            "priorities": {alias: _priority(alias, anchor, glossary.headline) for alias, anchor in known.items()}}
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_js(glossary: Glossary) -> Markup:
    """The page's glossary data and the two scripts, for its one script element (after its
    sort/filter script): definitions on the headers, then tables fitted to their box."""
    scripts = "".join(files(__package__).joinpath(name).read_text(encoding="utf-8") for name in ("glossary.js", "fit.js"))
    return Markup(f"\nconst GLOSSARY_DATA = {glossary_json(glossary)};\n{scripts}")


def page_panel() -> Markup:
    """The glossary panel (filled by the script from the page's own headers) and its style."""
    return Markup(
        f'<style>{CSS}</style>\n'
        '<details id="glossary"><summary>Glossary</summary>'
        '<p class="small">What each number and label on this page means; formulas and interval units in '
        'docs/numbers.md.</p><dl id="glossary-terms"></dl></details>\n')


PAGE_PANEL = page_panel()
