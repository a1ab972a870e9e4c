"""Atomic file writes: a reader (or a resumed run) never sees a half-written file.

Each write goes to a temporary file in the same directory, is flushed and fsynced, then
renamed over the target, which POSIX guarantees to be atomic. ``mkstemp`` creates the
temporary file 0600 whatever the umask; the writer widens it to the mode the umask gives
any new file (usually 0644), so run dirs stay readable by the group/colleagues the user
meant to share them with.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import IO, Any

from audit.io import confine, safe_read, walk


_TMP_SUFFIX = ".tmp"


@cache
def _umask() -> int:
    """The process umask, read once.

    Reading the umask means setting it; doing that once (at the first write) keeps the
    brief window in which another thread could create a file with umask 0 to one moment.
    """
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _new_file_mode() -> int:
    """``0o666`` less the umask: the mode ``open()`` gives a new file."""
    return 0o666 & ~_umask()


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path``.

    ``mode`` is ``"w"`` (UTF-8 text, no newline translation) or ``"wb"``. If the block
    raises, the temporary file is removed and ``path`` is left as it was. An OS error from a
    write (a full disk: EFBIG, ENOSPC) carries no file name; it is given ``path``'s, so the
    one line the user sees says which file could not be written. A path that a link takes out of
    the run dir being written is refused before anything is written (:mod:`audit.io.confine`).
    """
    target = Path(path)
    confine.check(target)
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
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        name_in_os_error(exc, target)
        raise


def name_in_os_error(exc: BaseException, path: Path) -> None:
    """Give an OS error from a write the file's name if it has none (a full disk's EFBIG and
    ENOSPC come from ``write()``, which knows no name), so the user's one line says which file."""
    if isinstance(exc, OSError) and exc.filename is None:
        exc.filename = str(path)


@contextmanager
def new_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Fill a directory under a hidden temporary name; when the block succeeds it appears at ``path`` whole.

    A run dir can only be resumed once its config is saved. Built this way, a kill at any
    moment leaves either no ``path`` at all (the command is simply run again) or one holding
    everything the block wrote; the hidden leftover of a killed build is never read. Raises
    :class:`FileExistsError` when another process has taken ``path`` meanwhile. A lock taken
    on the temporary directory stays held after the rename (it is the same directory).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=_TMP_SUFFIX))
    try:
        os.chmod(building, 0o777 & ~_umask())  # mkdtemp makes it 0700
        yield building
        if target.exists():
            raise FileExistsError(errno.EEXIST, "already exists", str(target))
        try:
            os.rename(building, target)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise FileExistsError(exc.errno, "already exists", str(target)) from None
            raise
    except BaseException as exc:
        shutil.rmtree(building, ignore_errors=True)
        _name_target(exc, building, target)
        raise


def _name_target(exc: BaseException, building: Path, target: Path) -> None:
    """An OS error on a file inside the hidden directory being built names the file as it would be in
    ``target`` (a disk that fills before the run dir exists: the user's one line names a path they know,
    not a temporary one that is gone)."""
    if isinstance(exc, OSError) and exc.filename is not None:
        inside = Path(str(exc.filename))
        if inside == building or building in inside.parents:
            exc.filename = str(target / inside.relative_to(building))


def remove_partial_writes(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files that writes killed mid-way (SIGKILL, power loss) left behind.

    A process killed between creating its temporary file and the rename cannot clean up;
    the target itself is intact, so a resumed run removes these leftovers before it
    continues. Returns what was removed.
    """
    leftovers = [p for p in walk.files(directory, hidden=True) if p.name.startswith(".") and p.name.endswith(_TMP_SUFFIX)]
    for leftover in leftovers:
        leftover.unlink(missing_ok=True)
    return leftovers


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating parent directories."""
    with atomic_open(path) as handle:
        handle.write(text)
    return Path(path)


def write_texts(files: Mapping[Path, str | bytes]) -> list[Path]:
    """Write several files (text as UTF-8, bytes as they are) as one set: every one is written
    whole beside its target first, and only then are they all renamed into place. A write that
    fails (a full disk) leaves every target as it was: never some outputs new and others
    missing or old."""
    written: list[tuple[Path, Path]] = []
    path = Path(".")
    for target in files:
        confine.check(target)
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=_TMP_SUFFIX)
            written.append((Path(tmp), path))
            os.fchmod(fd, _new_file_mode())
            with (os.fdopen(fd, "wb") if isinstance(text, bytes)
                  else os.fdopen(fd, "w", encoding="utf-8", newline="")) as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
    except BaseException as exc:
        for tmp, _target in written:
            tmp.unlink(missing_ok=True)
        name_in_os_error(exc, path)
        raise
    for tmp, target in written:
        os.replace(tmp, target)
    return [target for _, target in written]


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Write ``data`` as indented UTF-8 JSON (non-ASCII kept readable) atomically."""
    return write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> Path:
    """Write one JSON object per line atomically."""
    return write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def overwrite_in_place(path: str | os.PathLike[str], text: str) -> Path:
    """Replace ``path``'s content by ``text`` in the file's own blocks: the last resort on a full disk.

    An atomic write needs room for a second file, which a full disk refuses; truncating the
    file first frees its blocks, so a ``text`` no longer than the old content fits. Not atomic
    (a crash mid-write leaves a cut file), so only for a short record that replaces one that
    would otherwise say something false (a summary still saying ``started``).
    """
    target = Path(path)
    confine.check(target)
    try:
        with open(target, "r+", encoding="utf-8", newline="") as handle:
            handle.truncate(0)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        name_in_os_error(exc, target)
        raise
    return target


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file written by :func:`write_json`, through the safe reader (size, binary and
    depth checked first: a saved file may have been damaged or edited by someone else)."""
    return safe_read.read_json(Path(path))


def read_json_saved(path: Path) -> Any:
    """A saved JSON file for a reader that must carry on past damage (run dirs found on disk):
    ``ValueError`` with one line naming the file (:class:`~audit.io.safe_read.UnsafeFile`), never a traceback."""
    return read_json(path)
