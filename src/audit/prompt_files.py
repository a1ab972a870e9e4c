"""Model-facing text read from files: the one loader both experiments use.

Prompts live in a ``prompts/`` folder beside the code that fills them (``audit/censorship/prompts``,
``audit/epistemic/prompts``), so they can be read and changed without touching code and ship
inside the wheel. A name picks a shipped file (``judge_classify_system`` or
``judge_classify_system.txt``); where a run lets the user bring their own text (the epistemic
``prompt`` group), a path to a file works too. A name that is neither is one line listing the
shipped ones.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from audit.errors import UserError, unknown_choice
from audit.io.safe_read import MAX_CONFIG_BYTES, read_text

SUFFIX = ".txt"


def shipped(directory: Path) -> list[str]:
    """The prompt files a folder ships, by file name."""
    return sorted(p.name for p in directory.glob(f"*{SUFFIX}"))


def prompt_path(directory: Path, name: str, *, own_files: bool = False) -> Path:
    """The file ``name`` means: a shipped prompt in ``directory`` or, with ``own_files``, a path
    to the user's own file (anything with a directory part or an absolute path)."""
    own = Path(name).expanduser()
    if own.is_absolute() or os.sep in name:
        if not own_files:  # a shipped name only: a path must not reach outside the prompts folder
            raise unknown_choice("prompt", name, shipped(directory))
        if not own.is_file():
            raise UserError(f"prompt file {name!r} does not exist; give a path to a text file or one of "
                            f"{', '.join(shipped(directory))}")
        return own
    path = directory / (name if name.endswith(SUFFIX) else f"{name}{SUFFIX}")
    if not path.is_file():
        raise unknown_choice("prompt", name, shipped(directory))
    return path


def read_prompt(directory: Path, name: str, *, own_files: bool = False) -> str:
    """The text of the prompt ``name`` (see :func:`prompt_path`), as the file has it; a binary, huge
    or non-UTF-8 file is one line naming it (through the safe reader)."""
    return read_text(prompt_path(directory, name, own_files=own_files), max_bytes=MAX_CONFIG_BYTES,
                     fix="give a UTF-8 text file as the prompt")


def placeholders(template: str, where: str | Path) -> set[str]:
    """The ``{name}`` fields of a ``str.format`` template, read when it is loaded: a stray or unclosed
    brace is one line naming the file, the line and the column (not a traceback at the first call)."""
    at = _unbalanced_brace(template)
    if at is not None:
        line = template.count("\n", 0, at) + 1
        column = at - (template.rfind("\n", 0, at) + 1) + 1
        raise UserError(f"prompt file {where}: unbalanced {template[at]!r} at line {line}, column {column}; "
                        "write a literal brace twice ({{ or }}), or close the placeholder ({name})")
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:  # a conversion or field the format language refuses
        raise UserError(f"prompt file {where}: {exc}; write placeholders as {{name}}") from None


def _unbalanced_brace(template: str) -> int | None:
    """Where ``str.format`` would stop on a brace (a lone ``}`` or a ``{`` never closed), or None."""
    at, opened = 0, None
    while at < len(template):
        pair = template[at:at + 2]
        if opened is None and pair in ("{{", "}}"):
            at += 2
            continue
        if template[at] == "{":
            if opened is not None:
                return opened
            opened = at
        elif template[at] == "}":
            if opened is None:
                return at
            opened = None
        at += 1
    return opened


def loader(directory: Path) -> Callable[[str], str]:
    """``load(name)`` for one package's shipped prompts: the text of ``<directory>/<name>.txt``
    without its final newline, read once."""
    @cache
    def load(name: str) -> str:
        return read_prompt(directory, name).removesuffix("\n")
    return load


def fill(template: str, **values: Any) -> str:
    """Replace ``{key}`` for the given keys only, in one pass (values are never re-scanned): the texts
    contain JSON braces, and values (probes, model responses) may contain ``{...}`` that must arrive
    verbatim."""
    if not values:
        return template
    pattern = re.compile("\\{(" + "|".join(re.escape(k) for k in values) + ")\\}")
    return pattern.sub(lambda m: str(values[m.group(1)]), template)
