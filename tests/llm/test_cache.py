import multiprocessing
from pathlib import Path

import pytest

from audit.llm.cache import ResponseCache, cache_key


def test_key_depends_on_every_field_but_not_on_order():
    base = {"route": "r", "model": "m", "prompt": "p", "temperature": 0.7, "sample_index": 0}
    assert cache_key(base) == cache_key(dict(reversed(list(base.items()))))
    for field, other in [("model", "m2"), ("prompt", "p2"), ("temperature", 0.0), ("sample_index", 1), ("route", "c")]:
        assert cache_key({**base, field: other}) != cache_key(base)


def test_roundtrip_persists_across_instances(tmp_path):
    path = tmp_path / "sub" / "c.sqlite"
    cache = ResponseCache(path)
    cache.put("k", {"text": "天安门 <｜User｜>", "n": 1})
    cache.close()
    again = ResponseCache(path)
    assert again.get("k") == {"text": "天安门 <｜User｜>", "n": 1}
    assert again.get("missing") is None
    again.close()


def _write_many(path: str, wal: bool, writer: int, count: int) -> None:
    """One process's share of the concurrent test: every put its own transaction, as the gateway does."""
    cache = ResponseCache(Path(path), wal=wal)
    for i in range(count):
        cache.put(f"w{writer}-{i}", {"writer": writer, "i": i, "text": "x" * 200})
        assert cache.get(f"w{writer}-{i}")["i"] == i
    cache.close()


@pytest.mark.parametrize("wal", [True, False])
def test_several_processes_write_one_cache_at_once(tmp_path, wal):
    """Sweep jobs share the cache root: writers in separate processes neither fail ("database is
    locked") nor lose each other's rows, with the write-ahead log and with the rollback journal."""
    path = tmp_path / "shared" / "responses.sqlite"
    writers, count = 4, 150
    context = multiprocessing.get_context("spawn")
    with context.Pool(writers) as pool:
        pool.starmap(_write_many, [(str(path), wal, w, count) for w in range(writers)])
    cache = ResponseCache(path, wal=wal)
    assert all(cache.get(f"w{w}-{i}") == {"writer": w, "i": i, "text": "x" * 200}
               for w in range(writers) for i in range(count))
    (mode,) = cache._db.execute("PRAGMA journal_mode").fetchone()
    assert mode == ("wal" if wal else "delete")
    cache.close()
