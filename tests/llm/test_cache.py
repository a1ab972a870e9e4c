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
