"""A response cache that breaks after it was opened (damaged pages, a lock held past the busy
timeout) costs one warning line and the cache, never the run: before, each gave a ~70-100 line
``sqlite3`` traceback and a summary left ``running``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from audit.llm.cache import ResponseCache
from audit.testing.server import FakeOpenRouter
from tests.conftest import mount_small
from tests import entrypoints
from audit.testing.scripted_audit import AUDITOR_MODEL, Script


def damaged_cache(path: Path) -> Path:
    """A cache whose header and schema are intact but whose table pages are garbage."""
    cache = ResponseCache(path, wal=False)
    for k in range(300):
        cache.put(f"key-{k}", {"text": "x" * 200})
    cache.close()
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page:] = b"\xa5" * (len(data) - 2 * page)
    path.write_bytes(bytes(data))
    return path


def test_damaged_pages_turn_the_cache_off_with_one_warning(tmp_path, capsys):
    cache = ResponseCache(damaged_cache(tmp_path / "c.sqlite"))
    assert cache.get("key-7") is None  # a miss, not an exception
    cache.put("key-new", {"text": "y"})
    assert cache.get("key-new") is None  # off for the rest of the run
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("warning: response cache") and str(tmp_path / "c.sqlite") in line and "enabled=false" in line
    cache.close()


def test_a_lock_held_past_the_busy_timeout_turns_the_cache_off(tmp_path, capsys):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, busy_timeout_s=0.2)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        cache.put("k", {"text": "y"})  # waits 0.2 s for the lock, then gives the cache up
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert cache.failed is not None and "locked" in cache.failed
    assert "warning: response cache" in capsys.readouterr().err
    cache.close()


def test_an_audit_on_a_damaged_cache_completes_uncached(tmp_path, fake_openrouter: FakeOpenRouter):
    path = damaged_cache(tmp_path / "cache.sqlite")
    fake_openrouter.handler = Script(stop_at_turn=3).handler
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    proc = entrypoints.run([sys.executable, "-m", "audit", f"auditor.model={AUDITOR_MODEL}", "judge=off",
                           "gateway.max_retries=0", "gateway.cache.enabled=true", f"gateway.cache.path={path}",
                           "gateway.cache.wal=false", "max_iterations=4", "output_dir=out"],
                           cwd=tmp_path, env={**base, **fake_openrouter.env()}, capture_output=True, text=True,
                           timeout=180)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert [line for line in proc.stderr.splitlines() if line.startswith("warning: response cache")]
    (run_dir,) = (tmp_path / "out").iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "success"


def test_a_cache_short_of_room_stops_growing_but_still_serves(tmp_path, capsys):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("kept", {"text": "x"})
    cache.min_free_bytes = 10**18  # more than any disk has free
    cache.put("new", {"text": "y"})
    cache.put("newer", {"text": "z"})
    assert cache.get("kept") == {"text": "x"} and cache.get("new") is None
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"warning: response cache {tmp_path / 'c.sqlite'}: ") and "min_free_mb" in line
    cache.close()


@pytest.mark.parametrize("workers", [[], ["workers=2"]], ids=["default", "2"])
def test_an_epistemic_run_on_a_damaged_cache_completes_uncached_with_one_warning(tmp_path, workers,
                                                                                 fake_openrouter: FakeOpenRouter):
    """Each worker process finds the cache damaged (two lines before, with workers=2); the workers
    send the warning to the run's process, which says it once."""
    path = damaged_cache(tmp_path / "cache.sqlite")
    fake_openrouter.handler = Script().handler
    proc = run_epistemic(["system=raw_llm", "system.model=test/model", "cards.num_per_type=5", "output_dir=out",
                          *workers], fake_openrouter, tmp_path, path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (warning,) = proc.stderr.strip().splitlines()
    assert warning.startswith(f"warning: response cache {path}")
    (run_dir,) = (tmp_path / "out").iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "success"


def run_epistemic(args: list[str], server: FakeOpenRouter, cwd: Path, cache: Path,
                  *more: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    return entrypoints.run([sys.executable, "-m", "audit.epistemic", *args, "gateway.max_retries=0",
                           f"gateway.cache.path={cache}", *more],
                           cwd=cwd, env={**base, **server.env()}, capture_output=True, text=True, timeout=300)


def test_a_resume_after_the_disk_filled_is_not_refilled_by_the_cache(tmp_path, tmpfs, fake_openrouter: FakeOpenRouter):
    """The run dir and the cache on one disk (as with the default cache.dir under $HOME). Before
    the reserve, the cache's write-ahead log held what the full disk refused; the resume, on a disk
    given enough room for the whole run without a cache, failed again with the same full disk at
    95/360 answers as the log grew back from 205 KB to 868 KB (2 of 2 tries). Now the cache stops
    growing at ``min_free_mb`` and the resume finishes. The resume's disk is 1,600 KB: the whole run
    without a cache (1,204 KB since the pages carry their glossary and column tools) plus the
    0.3 MB reserve, and well short of the run plus the log's regrowth."""
    disk = tmpfs
    mount_small(disk, "500k")
    fake_openrouter.handler = Script().handler
    cache = disk / "cache.sqlite"
    first = run_epistemic(["system=raw_llm", "system.model=test/model", "cards.num_per_type=40",
                           f"output_dir={disk / 'out'}"], fake_openrouter, tmp_path, cache,
                          "gateway.cache.min_free_mb=0.3")
    (run_dir,) = (disk / "out").iterdir()
    assert first.returncode == 1 and "disk full" in first.stderr.splitlines()[-1], first.stderr
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "error"
    subprocess.run(["mount", "-o", "remount,size=1600k", str(disk)], check=True)
    again = run_epistemic([f"resume={run_dir}"], fake_openrouter, tmp_path, cache, "gateway.cache.min_free_mb=0.3")
    assert again.returncode == 0, again.stderr
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "success"
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == 360
