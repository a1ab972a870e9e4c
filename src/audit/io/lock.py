"""An exclusive, process-lifetime lock on a directory, saying who holds it.

Two processes writing one run dir (a resume started twice, a resume of a run still going)
would interleave files and pay for every call twice. ``flock`` on a file inside the
directory is released by the kernel when the holder exits, SIGKILL included, so a killed
run never leaves a stale lock behind for the user to delete.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

from audit.errors import UserError

LOCK_NAME = ".lock"


def hold_lock(directory: Path, command: str) -> IO[str]:
    """Lock ``directory`` for this process's lifetime and record who holds it.

    Returns the open lock file; keep it referenced (closing it releases the lock). If
    another process holds it, raise a one-line :class:`UserError` naming that process.
    """
    path = Path(directory) / LOCK_NAME
    try:  # never through a link: the lock file is truncated below, and a received run dir may link it anywhere
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise UserError(f"{path} is a link; a run dir's lock is a file of its own: remove the link and run "
                        f"{command} again") from None
    handle = os.fdopen(fd, "a+", encoding="utf-8")  # held open for the process's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise UserError(f"{directory} is in use by {holder}; wait for it to end (or stop it) "
                        f"before running {command} again") from None
    handle.seek(0)
    handle.truncate()
    started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {started}\n")
    handle.flush()
    return handle


def lock_holder(directory: Path) -> str | None:
    """Who holds ``directory``'s lock right now (the line :func:`hold_lock` wrote), or None.

    A run whose summary still says ``running`` while nobody holds its lock was killed: this
    is how a comparison tells the two apart without trusting a pid from another host.
    """
    try:
        handle = open(Path(directory) / LOCK_NAME, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or "another process"
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None
