"""Append-only JSON Lines journals: each record on disk as soon as it exists.

A run that may be killed at any moment (SIGKILL, a preempted Slurm job) records work it
has paid for (model calls, answered cards) one line at a time, flushed to the OS, so a kill
loses at most the record being written. A line cut short that way is skipped on reading,
and the next session ends it before appending, so it never corrupts the line after it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from audit.io.atomic import name_in_os_error


class Journal:
    """Appends records to ``path`` (created with its directory on the first append).

    Not thread-safe: callers that append from several threads hold their own lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None

    def append(self, record: Mapping[str, Any]) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            torn = self.path.exists() and self.path.stat().st_size > 0 and not _ends_a_line(self.path)
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - open until close()
            if torn:
                self._file.write("\n")  # end the line a killed session left half-written
        # One write and a flush per record: the OS holds it even if the process is killed next.
        try:
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()
        except OSError as exc:  # a full disk: say which file
            name_in_os_error(exc, self.path)
            raise

    def close(self) -> None:
        """Close the file (reopened by the next :meth:`append`)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def _ends_a_line(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records in a journal (none if it does not exist); a line cut short by a kill is skipped."""
    if not Path(path).exists():
        return []
    records = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            records.append(data)
    return records
