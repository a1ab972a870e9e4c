"""What the HTML reports share: the one Jinja environment factory (:func:`environment`), and the
small inline script that sorts and filters their tables and card lists. It lives in one file (``sortfilter.js``) that each report inlines, so every
page works offline with no CDN. The script only reorders and hides existing elements and
reads ``textContent``: model text already in the page is never re-parsed as HTML."""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import re

import jinja2
from markupsafe import Markup, escape

from audit.counted import counted
from audit.pages.paging import PAGES_DIR
from audit.neutral import page_value

_SEPARATOR = re.compile(r"(?<=[/_])(?=[^/_\s])")
"""After a ``/`` or ``_`` that a word goes on from: where a model id (``deepseek/deepseek-chat``), a run
name or a snake_case header may wrap (a hyphen already may)."""


def breakable(text: object) -> Markup:
    """``text`` escaped, and when it is one token (an id: no space to wrap at) with a word-break
    opportunity (``<wbr>``) after each ``/`` and ``_``: a long id then wraps at its separators when its
    column is narrow, never mid-word; text with spaces wraps at them and is left as written."""
    shown = str(page_value(text))
    if any(c.isspace() for c in shown):
        return escape(shown)
    return Markup("<wbr>").join(escape(part) for part in _SEPARATOR.split(shown))


SORT_FILTER_JS = files(__package__).joinpath("sortfilter.js").read_text(encoding="utf-8")


def environment(templates: Path, *, lenient: bool = False,
                filters: dict[str, Callable[..., Any]] | None = None) -> jinja2.Environment:
    """The Jinja environment of a report: its own ``templates`` folder, then the shared page parts;
    always autoescaped (model output is untrusted text, and the ``.j2`` suffix would defeat
    ``select_autoescape``); an undefined name is an error unless ``lenient`` (a report drawn from a
    run dir of any age leaves out what an older run lacks); blocks trimmed.

    One per process for each report (the same arguments give the same environment), so a template
    is compiled once, not at every call: compiling the audit's report templates took ~0.4 CPU-s, paid
    twice per report (its entries and its page each asked for a new environment), and again by every
    job of a sweep (:func:`compile_all` lets the warm launcher compile them before it forks the jobs).
    Jinja checks a cached template's file for changes on each load, so an edited template is read anew."""
    return _environment(Path(templates), lenient, tuple(sorted((filters or {}).items())))


@functools.cache
def _environment(templates: Path, lenient: bool, filters: tuple[tuple[str, Callable[..., Any]], ...]) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(templates), str(PAGES_DIR)]), autoescape=True,
                             undefined=jinja2.ChainableUndefined if lenient else jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True,
                             finalize=page_value)  # bidi controls shown, not obeyed
    env.filters.update({"counted": counted, "breakable": breakable, **dict(filters)})  # "1 judge failure", "2 judge failures"
    return env


def compile_all(env: jinja2.Environment) -> None:
    """Compile every template ``env`` can load (its report's and the shared parts) and keep them in it."""
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)
