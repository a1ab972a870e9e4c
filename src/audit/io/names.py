"""Names from the config that become parts of file paths (run dir names and the like).

``topic.name``, ``audited.name``, ``domain.name`` and ``predicate.name`` are joined into
directory names under ``output_dir``. A value such as ``../../etc`` or ``/tmp/x`` would put
files outside it, and an empty one would produce names that collide or hide (``_x_...``).
Names are refused rather than silently slugged, so the directory a user later looks for
carries exactly the name they gave.
"""

from __future__ import annotations

import re

from audit.errors import UserError

# One path component: starts with a letter or digit (so never ``.``/``..`` or a hidden
# file), then letters, digits, ``.``, ``_`` or ``-``; no separators, no spaces.
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def is_path_component(text: str) -> bool:
    """Whether ``text`` is safe as one path component (what :func:`path_component` accepts)."""
    return bool(_COMPONENT.fullmatch(text))


def path_component(value: object, key: str) -> str:
    """``value`` as a string if it is safe as one path component, else a one-line UserError naming ``key``."""
    text = "" if value is None else str(value)
    if not is_path_component(text):
        raise UserError(f"{key}={text!r} cannot name a directory: use 1-100 letters, digits, '.', '_' or '-' "
                        f"starting with a letter or digit (e.g. {key}=my_{key.split('.')[0]})")
    return text
