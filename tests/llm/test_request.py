"""What one call sends (audit.llm.request): the fields that enter the request and its cache key."""

from __future__ import annotations

from audit.llm import backend
from audit.llm.cache import cache_key
from audit.llm.request import attribution_headers, request_key, sampling, streams
from audit.llm.settings import GatewaySettings

PAYLOAD = {"messages": [{"role": "user", "content": "hi"}]}
SERVER = "http://127.0.0.1:9/api/v1"
"""A server URL the key is computed for (nothing is sent: the key is pure)."""


def key(route: str = backend.CHAT_ROUTE, endpoint: str = "openrouter", server: str = SERVER,
        model: str = "m/x", provider: dict | None = None, payload: dict = PAYLOAD, params: dict | None = None,
        sample_index: int = 0, repeat: int = 0, draw: str = "") -> str:
    """The key of one request, the default one changed in the fields named."""
    return request_key(route, endpoint, server, model, provider, payload,
                       sampling(10, 0.5, ["\n"]) if params is None else params,
                       sample_index=sample_index, repeat=repeat, draw=draw)


def test_unset_sampling_parameters_are_not_sent():
    assert sampling(None, None, []) == {}
    assert sampling(10.0, 1, ["a"]) == {"max_tokens": 10, "temperature": 1.0, "stop": ["a"]}


def test_every_field_that_makes_the_reply_or_names_the_draw_changes_the_key():
    base = key()
    changed = [key(route=backend.COMPLETION_ROUTE), key(endpoint="local"), key(server="http://127.0.0.1:8080/v1"),
               key(model="m/y"), key(provider={"order": ["A"]}), key(params=sampling(11, 0.5, ["\n"])),
               key(payload={"messages": [{"role": "user", "content": "hi!"}]}), key(sample_index=1),
               key(repeat=1), key(draw="user_persona run/baseline")]
    assert base not in changed and len(set(changed)) == len(changed)


def test_repeat_zero_and_no_draw_leave_the_key_as_older_caches_hold_it():
    """A key written before repeats and draws existed had neither field: a run at repeat 0 without a
    named draw must still find those replies (the key of the request alone)."""
    older = cache_key({"route": backend.CHAT_ROUTE, "endpoint": "openrouter", "api_base": SERVER,
                       "model": "m/x", "provider": None, **PAYLOAD, **sampling(10, 0.5, ["\n"]), "sample_index": 0})
    assert key() == older != key(repeat=1)


def test_only_a_long_chat_call_streams():
    settings = GatewaySettings(stream_min_tokens=100)
    assert streams(settings, backend.CHAT_ROUTE, 100) and not streams(settings, backend.CHAT_ROUTE, 99)
    assert not streams(settings, backend.COMPLETION_ROUTE, 10_000) and not streams(settings, backend.CHAT_ROUTE, None)
    assert not streams(GatewaySettings(stream_min_tokens=None), backend.CHAT_ROUTE, 10_000)


def test_the_referer_is_always_ours_and_the_title_and_metadata_only_when_set():
    assert attribution_headers(GatewaySettings(title="", referer=None, routing_metadata=False)) == {"HTTP-Referer": ""}
    assert attribution_headers(GatewaySettings(title="T", referer="https://r", routing_metadata=True)) == \
        {"X-Title": "T", "HTTP-Referer": "https://r", "X-OpenRouter-Metadata": "enabled"}
