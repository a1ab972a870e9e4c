"""On a disk with no free block, a short record still replaces a stale one (in its own blocks).

Needs a real full file system: a small tmpfs, mounted when the platform lets this user mount
(root, or a user namespace); otherwise skipped with the reason. RLIMIT_FSIZE (the bad-input
corpus's disk full) cannot show this: it limits one file's size, not the free blocks."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from audit.io.atomic import overwrite_in_place, write_json
from audit.io.journal import Journal, read_records
from tests.conftest import mount_small


@pytest.fixture
def full_disk(tmpfs: Path):
    """A 64 KiB tmpfs holding a 16 KiB file, then filled to the last byte."""
    mount_small(tmpfs, "64k")
    (tmpfs / "summary.json").write_text(json.dumps({"status": "started", "pad": "x" * 16000}))
    with open(tmpfs / "filler", "wb", buffering=0) as filler:
        with pytest.raises(OSError) as full:
            while True:
                filler.write(b"\0" * 4096)
        assert full.value.errno == errno.ENOSPC
    return tmpfs


def test_a_full_disk_refuses_the_atomic_write_but_takes_the_short_record_in_place(full_disk: Path):
    summary = full_disk / "summary.json"
    with pytest.raises(OSError) as refused:
        write_json(summary, {"status": "cancelled"})
    assert refused.value.errno == errno.ENOSPC and refused.value.filename == str(summary)
    overwrite_in_place(summary, json.dumps({"status": "cancelled", "total_iterations": 11}))
    assert json.loads(summary.read_text()) == {"status": "cancelled", "total_iterations": 11}
    assert not [p for p in full_disk.iterdir() if p.name.endswith(".tmp")]


def test_a_record_larger_than_the_freed_blocks_fails_naming_the_file(full_disk: Path):
    summary = full_disk / "summary.json"
    with pytest.raises(OSError) as refused:
        overwrite_in_place(summary, "y" * 200_000)
    assert refused.value.filename == str(summary)


def test_a_journal_line_the_disk_refuses_is_taken_back_whole(full_disk: Path):
    """Before, the cut line stayed in the file and in the buffer, whose flush failed again at
    close() with no file name (the run's one line said "cannot write a file")."""
    (full_disk / "filler").unlink()  # 16 KiB left beside the summary
    journal = Journal(full_disk / "usage.jsonl")
    with pytest.raises(OSError) as refused:
        for n in range(10_000):
            journal.append({"n": n, "pad": "z" * 300})
    assert refused.value.errno == errno.ENOSPC and refused.value.filename == str(full_disk / "usage.jsonl")
    journal.close()  # nothing left to flush
    text = (full_disk / "usage.jsonl").read_text()
    assert text.endswith("\n") and [r["n"] for r in read_records(full_disk / "usage.jsonl")] == list(range(n))
