"""Append-only JSON Lines journals: each record on disk as soon as it exists.

A run that may be killed at any moment (SIGKILL, a preempted Slurm job) records work it
has paid for (model calls, answered cards) one line at a time, handed to the OS at once, so a
kill loses at most the record being written. A line cut short that way is skipped on reading,
and the next session ends it before appending, so it never corrupts the line after it.

A full disk cuts a line short too, and the process lives on: the writer then takes the part
that fit back off the file and raises the OS error naming the file. Writes are unbuffered for
the same reason: a buffered line the disk refused would stay in the buffer and fail again at
``close()``, with no file name, replacing the error the run is reporting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from audit.io import confine
from audit.io.atomic import name_in_os_error
from audit.io.safe_read import parse_json


class Journal:
    """Appends records to ``path`` (created with its directory on the first append).

    Not thread-safe: callers that append from several threads hold their own lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._torn = False
        """The file ends in a line a killed session cut short: the next append ends it first."""

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record as one line; on an OS error (a full disk) the file is left holding
        whole lines only, as before the call, and the error names the file."""
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        try:
            if self._fd is None:
                confine.check(self.path)  # a link out of the run dir: refused before the file is opened
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._torn = self.path.exists() and self.path.stat().st_size > 0 and not _ends_a_line(self.path)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            _append_whole(self._fd, b"\n" + line if self._torn else line)
            self._torn = False
        except OSError as exc:
            name_in_os_error(exc, self.path)
            raise

    def close(self) -> None:
        """Close the file (reopened by the next :meth:`append`)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _append_whole(fd: int, data: bytes) -> None:
    """Write all of ``data`` at the end of ``fd``, or none of it: a write the disk refuses part of
    is cut back off (``ftruncate``), so the journal never ends in a line a live process cut."""
    start = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass  # the line stays cut, which a reader skips and the next session ends
        raise


def _ends_a_line(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records in a journal (none if it does not exist, or no longer: a reader may race a run dir's
    removal); a line cut short by a kill is skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    records = []
    for line in text.splitlines():
        try:
            data = parse_json(line, path)
        except ValueError:  # a cut line, or one nested too deep to read: skipped alike
            continue
        if isinstance(data, dict):
            records.append(data)
    return records
