"""The one way a report pages a long drill-down (the audit transcript, the epistemic cards).

The first entries are laid out in the page; the rest are written beside it, a chunk to a file
(``<folder>/0000.js`` ...), as the HTML the same template macro rendered for the page, wrapped in
one call, ``window.__moreEntries(n, "<html>")``. A small inline script (``more.js``) loads the next
file when the reader asks, with a ``<script>`` element (a page opened from disk may not ``fetch``),
and moves the entries in. So one template draws every entry, whether shown at once or later; the
page stays small and opens in seconds however many entries there are; and the page and its files
are written as one set (:func:`audit.io.atomic.write_texts`).

Model text is safe on both paths: the macros render with autoescape, so it is text in the HTML,
and the HTML travels as one JSON string literal in a script file loaded by ``src`` (no HTML parser
reads that file, so a ``</script>`` in it ends nothing), which the loader parses into an inert
``<template>``: nothing in it runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

PAGES_DIR = Path(__file__).resolve().parent
"""Holds ``more.html.j2``, the button a paged report includes (put it on the report's template path)."""
MORE_JS = files(__package__).joinpath("more.js").read_text(encoding="utf-8")
"""The loader, inlined by each paged report."""

@dataclass(frozen=True)
class Paged:
    """A drill-down split for the page: what it shows at once and what waits beside it."""

    folder: str
    """The chunk files' folder, beside the page (the page names it relative to itself)."""
    shown: list[str]
    """The entries' HTML laid out when the page opens."""
    chunks: list[str] = field(default_factory=list)
    """Each later chunk's HTML, one file each."""
    sizes: list[int] = field(default_factory=list)
    """Entries per chunk (the button says how many the next click brings)."""

    def files(self, page: Path) -> dict[Path, str]:
        """The chunk files beside ``page``, by path, to be written with the page as one set."""
        return {page.parent / self.folder / f"{n:04d}.js": f"window.__moreEntries({n}, {json.dumps(html, ensure_ascii=False)});\n"
                for n, html in enumerate(self.chunks)}


def page_entries(html: Sequence[str], *, shown: int, chunk: int, folder: str) -> Paged:
    """Split the rendered entries ``html``: the first ``shown`` in the page, the rest ``chunk`` to a file."""
    rest = list(html[shown:])
    parts = [rest[i:i + chunk] for i in range(0, len(rest), chunk)]
    return Paged(folder=folder, shown=list(html[:shown]), chunks=["".join(p) for p in parts],
                 sizes=[len(p) for p in parts])
