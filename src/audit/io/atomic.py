"""Atomic file writes: a reader (or a resumed run) never sees a half-written file.

Each write goes to a temporary file in the same directory, is flushed and fsynced, then
renamed over the target, which POSIX guarantees to be atomic. ``mkstemp`` creates the
temporary file 0600 whatever the umask; the writer widens it to the mode the umask gives
any new file (usually 0644), so run dirs stay readable by the group/colleagues the user
meant to share them with.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import IO, Any


_TMP_SUFFIX = ".tmp"


@cache
def _new_file_mode() -> int:
    """``0o666`` less the process umask, read once: the mode ``open()`` gives a new file.

    Reading the umask means setting it; doing that once (at the first write) keeps the
    brief window in which another thread could create a file with umask 0 to one moment.
    """
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path``.

    ``mode`` is ``"w"`` (UTF-8 text, no newline translation) or ``"wb"``. If the block
    raises, the temporary file is removed and ``path`` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=_TMP_SUFFIX)
    text_options: dict[str, Any] = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
    try:
        os.fchmod(fd, _new_file_mode())
        with os.fdopen(fd, mode, **text_options) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_partial_writes(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files that writes killed mid-way (SIGKILL, power loss) left behind.

    A process killed between creating its temporary file and the rename cannot clean up;
    the target itself is intact, so a resumed run removes these leftovers before it
    continues. Returns what was removed.
    """
    leftovers = [p for p in Path(directory).rglob(f".*{_TMP_SUFFIX}") if p.is_file()]
    for leftover in leftovers:
        leftover.unlink(missing_ok=True)
    return leftovers


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating parent directories."""
    with atomic_open(path) as handle:
        handle.write(text)
    return Path(path)


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as indented UTF-8 JSON (non-ASCII kept readable) atomically."""
    return write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> Path:
    """Write one JSON object per line atomically."""
    return write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file written by :func:`write_json`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
