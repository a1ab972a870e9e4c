"""User-facing errors: one line naming the problem and the fix, then a non-zero exit.

Anything the user can fix (a missing key, a bad file, an unknown option) raises
:class:`UserError`; entrypoints run their job under :func:`exit_on_user_error` so the user
sees that line instead of a traceback. An operating-system error on a file (a full disk, a
read-only or missing directory, a file where a directory should be) is the user's to fix
too, and wherever it happens it is reported the same way by :func:`os_error_line`.
"""

from __future__ import annotations


import errno
import sys
import warnings
from collections.abc import Callable, Iterable
from difflib import get_close_matches
from pathlib import Path
from typing import TypeVar

from audit.neutral import terminal_text

T = TypeVar("T")


class UserError(Exception):
    """A problem the user can fix; its message is a single line that says how."""


class Interrupted(UserError):
    """The user stopped the run (Ctrl-C, SIGTERM); its message says how to continue it.

    A sweep stops at once on it rather than going on to the next job: whoever pressed Ctrl-C
    meant the whole command.
    """


def unknown_choice(kind: str, value: str, available: Iterable[str]) -> UserError:
    """Build the registry-style error: Unknown 'x'. Did you mean ...? Available: ..."""
    options = sorted(available)
    close = get_close_matches(value, options, n=3)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return UserError(f"Unknown {kind} {value!r}.{hint} Available: {', '.join(options)}")


_OS_CAUSES: dict[int, tuple[str, str]] = {
    **dict.fromkeys((errno.ENOSPC, errno.EFBIG, errno.EDQUOT), (
        "disk full or file too large", "free some space (or raise the file-size limit) and run again")),
    **dict.fromkeys((errno.EACCES, errno.EPERM, errno.EROFS), (
        "not writable", "make it writable or choose another directory")),
    **dict.fromkeys((errno.ENOTDIR, errno.EEXIST, errno.EISDIR), (
        "a file is in the way", "remove it or choose another directory")),
    errno.ENOENT: ("no such file or directory", "check the path"),
}


def os_error_line(exc: OSError) -> str | None:
    """One line for an OS error on a file: the path, the cause in plain words, and the fix.

    None for an OSError that carries no errno (not a file-system problem: let it surface).
    """
    if exc.errno is None:
        return None
    cause, fix = _OS_CAUSES.get(exc.errno, (exc.strerror or "failed", "check the path and the disk"))
    where = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 else "") if exc.filename else "a file"
    if exc.errno == errno.ENOTDIR and exc.filename:  # name the file in the way, not the path below it
        blocker = next((p for p in Path(str(exc.filename)).parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            where = str(blocker)
    return f"cannot write {where}: {cause} ({exc.strerror}); {fix}"


def user_error_line(exc: BaseException) -> str | None:
    """The one line for an error the user can fix (:class:`UserError` or a file-system error), else None."""
    if isinstance(exc, UserError):
        return str(exc)
    return os_error_line(exc) if isinstance(exc, OSError) else None


def exit_on_user_error(job: Callable[[], T]) -> T:
    """Run ``job``; on a :class:`UserError` or a file-system error print its line to stderr and exit 1."""
    try:
        return job()
    except (UserError, OSError) as exc:
        line = user_error_line(exc)
        if line is None:
            raise
        drop_abandoned_call_warnings()
        print_error_line(line)
        raise SystemExit(1) from None


def print_error_line(line: str) -> None:
    """Print ``error: <line>`` on stderr as one line, for a single run and a sweep's job alike.

    Server and model text reaches these lines: no escape sequence may act on the terminal, and a line
    break inside it (a key echoed "split across lines", a multi-line server message) must not make
    the one line two."""
    print(f"error: {' '.join(terminal_text(line).split())}", file=sys.stderr)


def drop_abandoned_call_warnings() -> None:
    """Keep the one line the only line when a run stops with calls in flight (an interrupt, a fatal 401).

    litellm builds each call's coroutine in a worker thread (``run_in_executor``) and awaits
    it back on the loop; a call cancelled while that thread runs leaves the coroutine
    unawaited, and Python reports it at exit (``RuntimeWarning: coroutine ... was never
    awaited`` plus a tracemalloc hint) in about half the interrupted runs. Those calls were
    cut off on purpose and are redone by the resume, so once the run is stopping it is noise.
    """
    warnings.filterwarnings("ignore", message=r"coroutine '.*' was never awaited", category=RuntimeWarning)
    # An interrupt that lands while asyncio is still building its event loop leaves a half-made
    # loop whose destructor fails at exit ("Exception ignored in ... BaseEventLoop.__del__");
    # destructors of objects abandoned by the stop have nothing left to report to the user.
    sys.unraisablehook = lambda _unraisable: None
