"""User-facing errors: one line naming the problem and the fix, then a non-zero exit.

Anything the user can fix (a missing key, a bad file, an unknown option) raises
:class:`UserError`; entrypoints run their job under :func:`exit_on_user_error` so the user
sees that line instead of a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from difflib import get_close_matches
from typing import TypeVar

T = TypeVar("T")


class UserError(Exception):
    """A problem the user can fix; its message is a single line that says how."""

    exit_code = 1


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


def exit_on_user_error(job: Callable[[], T]) -> T:
    """Run ``job``; on a :class:`UserError` print its line to stderr and exit non-zero."""
    try:
        return job()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
