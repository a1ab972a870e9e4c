"""Writes stay inside the run dir they belong to: a link in a run dir is never followed out of it.

A run dir may come from someone else (shared with its results, unpacked from an archive), and a
symbolic link inside it is data like any other byte of it: ``draws.jsonl -> ~/.bashrc`` made a
resume append its records to the user's shell profile, and ``.lock -> <any file>`` made the lock
truncate that file. So a process that writes a run dir (it holds the dir's lock, or rescores into
it) registers the dir here, and every writer of :mod:`audit.io` (journals, atomic writes, the in-place
summary) asks :func:`check` first (the lock file is opened without following a link at all): a path lexically inside a registered dir must also *resolve* inside it,
else :class:`LinkOut`, one line naming the file and the fix. A resume also walks the whole dir with
:func:`refuse_links_out` before it writes anything, so a received run dir is refused as a whole
rather than at its first write.

Links that stay inside the run dir, and a run dir that is itself reached through a link (``runs ->
/scratch/runs``), are fine: the check compares resolved paths with the dir's own resolved path.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from audit.errors import UserError

_HELD: Counter[str] = Counter()
"""The run dirs this process writes (absolute, normalised, unresolved), each with how often it is held."""


class LinkOut(UserError):
    """A path inside a run dir that a link takes outside it; the message is one line naming the file and the fix."""

    def __init__(self, path: Path, real: Path, root: Path):
        super().__init__(f"{path} is a link to {real}, outside its run dir {root}; the tool never writes through "
                         "a link out of a run dir: replace the link by a regular file (or remove it) and run again")
        self.path = path


def _absolute(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(path))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def hold(root: str | os.PathLike[str]) -> None:
    """From now on every write under ``root`` is checked (until :func:`let_go`)."""
    _HELD[_absolute(root)] += 1


def let_go(root: str | os.PathLike[str]) -> None:
    key = _absolute(root)
    _HELD[key] -= 1
    if _HELD[key] <= 0:
        del _HELD[key]


@contextmanager
def confined(root: str | os.PathLike[str]) -> Iterator[None]:
    """Check every write under ``root`` while the block runs (for a writer that holds no lock, e.g. a rescore)."""
    hold(root)
    try:
        yield
    finally:
        let_go(root)


def _escape(path: str, root: str) -> LinkOut | None:
    """The refusal for ``path`` (absolute, under ``root``) when it resolves outside ``root``, else None."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if _inside(real, real_root):
        return None
    return LinkOut(Path(path), Path(real), Path(root))


def check(path: str | os.PathLike[str]) -> None:
    """Refuse (:class:`LinkOut`) to write ``path`` when it lies in a held run dir but resolves outside it."""
    target = _absolute(path)
    for root in list(_HELD):
        if _inside(target, root):
            refusal = _escape(target, root)
            if refusal is not None:
                raise refusal


def refuse_links_out(root: str | os.PathLike[str]) -> None:
    """Walk ``root`` (links not followed) and refuse, in one line, the first entry that resolves outside it:
    what a resume does before it writes anything. An entry that vanishes mid-walk is no concern of this."""
    top = _absolute(root)
    for folder, dirs, files in os.walk(top):
        for name in sorted(dirs + files):
            entry = os.path.join(folder, name)
            if os.path.islink(entry):
                refusal = _escape(entry, top)
                if refusal is not None:
                    raise refusal
