"""What the HTML reports share: the small inline script that sorts and filters their tables
and card lists. It lives in one file (``sortfilter.js``) that each report inlines, so every
page works offline with no CDN. The script only reorders and hides existing elements and
reads ``textContent``: model text already in the page is never re-parsed as HTML."""

from __future__ import annotations

from importlib.resources import files

SORT_FILTER_JS = files(__package__).joinpath("sortfilter.js").read_text(encoding="utf-8")
