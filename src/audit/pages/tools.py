"""What every report and index page ends with: definitions on its headers, its glossary panel and
tables that fit their box (``glossary.js``, ``fit.js``), inline so every page works offline.

The scripts join the page's one script element (a page holds exactly one, which the escaping
tests count); the page's glossary (:class:`audit.pages.glossary.Glossary`, composed by the page's
builder from the terms of the experiments it shows) goes into it as a JSON literal, escaped so that
no text in it can close the element.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

from markupsafe import Markup

from audit.pages.glossary import Glossary

KEYS = frozenset({"run", "audited", "topic", "technique", "system", "domain", "predicate", "model", "framing",
                  "category"})
"""Columns that name a row: a table too wide for its box is cut into column groups (``fit.js``), and
each group repeats these, so every number in a group still says whose it is."""
VARIED_KEYS = frozenset({"auditor", "judge", "condition", "mapping", "settings", "role", "lang", "question set",
                         "question kind"})
"""Columns that name a row where the table's rows differ in them (a sweep over judges, a benchmark
over languages): repeated in each column group only then (otherwise shown once, in a group)."""

FAMILIES: tuple[tuple[str, ...], ...] = (
    ("citations *",),  # citations_verified / citations_unverified
    ("facts revealed *",),  # knows vs says: facts revealed under the technique / by the assistant baseline
    ("unlabelled *",),  # unlabelled by judge (technique) / (baseline); unlabelled_en / unlabelled_zh
    ("runs en", "runs zh"),
    ("refused share en", "refused share zh"),
    ("tokens", "cost"),
)
"""Columns read together, which a table cut into column groups (``fit.js``) keeps in one group: a
header is in a family when its name (lower case, ``_`` as a space) is one of the family's names or
starts with one ending in ``*``. A family's columns move as one, to where its first column stands (a
column between two of them may go to the next group); a family wider than the box on its own is cut
as single columns rather than overflow it."""

CSS = """
table.fitting td, .colgroups td.keycell { white-space: nowrap; } table.fitting td wbr, .colgroups td.keycell wbr { display: none; }
.colgroups > .part { margin: .6em 0 .1em; font-size: .85em; color: #555; }
.colgroups > .part + .scroll table { margin-top: .1em; }
th a.def { font-size: .8em; text-decoration: none; color: #2a5db0; font-weight: normal; }
#glossary { position: fixed; right: 8px; bottom: 8px; max-width: 28em; max-height: 70vh; overflow: auto; background: #fff;
  border: 1px solid #bbb; padding: 3px 8px; font-size: 13px; box-shadow: 0 1px 4px rgba(0,0,0,.2); z-index: 10; }
#glossary summary { cursor: pointer; font-weight: bold; }
#glossary dt { font-weight: bold; margin-top: .4em; } #glossary dd { margin: 0 0 0 .8em; }
"""


def glossary_json(glossary: Glossary) -> str:
    """Aliases (a header's normalised text) → anchor, each term's name, definition and docs, the
    aliases that name a row (:data:`KEYS`, :data:`VARIED_KEYS`) and the column families
    (:data:`FAMILIES`), as JSON safe inside a ``<script>`` element."""
    known = {alias: term.anchor for alias, term in glossary.aliases().items()}
    terms = {t.anchor: {"name": t.name, "definition": t.definition, "docs": t.docs} for t in glossary.all_terms()}
    data = {"aliases": known, "terms": terms,
            "keys": sorted(KEYS), "varied_keys": sorted(VARIED_KEYS), "families": [list(f) for f in FAMILIES]}
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@cache
def page_js(glossary: Glossary) -> Markup:
    """The page's glossary data and the two scripts, for its one script element (after its
    sort/filter script, which waits for them): definitions on the headers, then tables fitted to
    their box in column groups. Built once per glossary (each page kind has one), not per page
    written: a sweep writes a report per run."""
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
