"""The one walk over directories that other processes may be writing: what vanishes or appears mid-walk is skipped.

Run dirs and sweep dirs change while they are read: a sweep job builds its run dir under a hidden
``.<name>.tmp`` and renames it into place, atomic writes rename temporary files over their targets, a
user deletes a run. ``Path.rglob`` raised ``FileNotFoundError`` when a directory it had listed was
renamed before it looked inside (``runs list``, ``compare`` and a sweep's resume scan, while a sweep
wrote). ``os.walk`` skips a directory it cannot list (its errors are ignored unless asked for), so a
walk here never raises for what other processes do; a reader sees each folder as it was when listed.
Links to directories are not followed (a run dir may come from someone else).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def folders(root: str | os.PathLike[str], *, hidden: bool = False) -> Iterator[tuple[Path, frozenset[str]]]:
    """Each folder under ``root`` (``root`` first, then depth-first in name order) with the names of the
    files in it. Hidden folders (``.hydra``, a run dir still being built) are skipped unless ``hidden``."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if hidden or not d.startswith("."))
        yield Path(folder), frozenset(files)


def files(root: str | os.PathLike[str], *, hidden: bool = False) -> Iterator[Path]:
    """Every file under ``root`` (see :func:`folders`); hidden files are listed, hidden folders only with ``hidden``."""
    for folder, names in folders(root, hidden=hidden):
        for name in sorted(names):
            yield folder / name


def names(folder: str | os.PathLike[str]) -> list[str]:
    """The names in one folder, sorted; none when it does not exist (or no longer: removed as it was read)."""
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
