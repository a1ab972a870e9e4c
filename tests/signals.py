"""Children of the tests that signal them start with SIGINT's default disposition.

A process started with SIGINT ignored (``pytest ... &`` in a non-interactive shell, ``nohup``-style
CI runners) passes the ignore on to its children, and a Python child whose SIGINT is ignored at
start never installs its KeyboardInterrupt handler: a test's Ctrl-C would then do nothing. Each
such child restores the default before it runs (Python then installs its own handler), so the
suite passes however it was started.
"""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn`` for a child a test will interrupt: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ignore_sigint() -> None:
    """``preexec_fn`` for a child started as ``cmd &`` in a script starts it: SIGINT ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
