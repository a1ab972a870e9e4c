"""Links between the tool's pages: always a relative path, never something a browser reads as a URL.

Run dirs are named by users (and by whoever shares a results folder): a directory called
``javascript:alert(1)`` made ``runs.html`` link to ``javascript:alert(1)/report.html``, which a
browser runs as a script on click. Percent-encoding the path (``:`` as ``%3A``, also ``#``, ``?``
and ``%`` itself) keeps it a path to the same file, whatever the names in it.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, urlsplit


def relative_href(target: Path, page_dir: Path) -> str:
    """The link from a page in ``page_dir`` to ``target``, as an encoded relative path."""
    href = quote(Path(os.path.relpath(target.resolve(), page_dir.resolve())).as_posix(), safe="/")
    assert not urlsplit(href).scheme and not urlsplit(href).netloc, href  # quote leaves no ':' to make one
    return href
