"""Every reply shape, both routes, through the real gateway against the loopback server.

A fault must become a retryable error of the right kind (never a successful empty answer),
model text must be storable whatever the server sends, and server text must never carry the
key. The pure helpers (sanitize, Redactor) are checked directly first.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from audit.llm.gateway import Gateway
from audit.llm.redact import MASK, Redactor
from audit.llm.replies import REPLACEMENT, sanitize
from audit.llm.settings import GatewaySettings
from audit.llm.types import GatewayError
from audit.testing.replies import BROKEN_EMOJI, CHAT, COMPLETION, KEY_ENCODINGS, Reply, chat_reply, completion_reply, error_in_200, garbage, key_echo, no_choices
from audit.testing.server import FakeOpenRouter

KEY = "sk-or-v1-replies-test-key-0123456789"
ROUTES = [CHAT, COMPLETION]


def test_sanitize_replaces_lone_surrogates_only():
    assert sanitize("ok 🙂") == ("ok 🙂", 0)
    assert sanitize(f"a{BROKEN_EMOJI}b\udc00") == (f"a{REPLACEMENT}b{REPLACEMENT}", 2)


@pytest.mark.parametrize("text", [
    f"Invalid header Bearer {KEY}",
    f'{{"headers": {{"authorization": "Bearer {KEY}"}}}}',
    "{'Authorization': 'Basic dXNlcjpwYXNz', 'x': 1}",
    f"key {KEY[:-1]}X? no, this key: {KEY}.",
    "Authorization: someone-elses-token\n",
])
def test_redactor_removes_key_and_authorization_values(text):
    out = Redactor([KEY])(text)
    assert KEY not in out and "dXNlcjpwYXNz" not in out and "someone-elses-token" not in out
    assert MASK in out and "]]" not in out


@pytest.mark.parametrize(("secret", "text", "expected"), [
    ("x", "OpenrouterException: bad key x", "OpenrouterException: bad key [REDACTED]"),
    ("x", "key=x; next", "key=[REDACTED]; next"),
    ("local", "localhost refused local-model", "localhost refused local-model"),
])
def test_a_short_placeholder_key_is_masked_as_a_token_not_inside_words(secret, text, expected):
    assert Redactor([secret])(text) == expected


@pytest.mark.parametrize("encoding", list(KEY_ENCODINGS))
def test_the_key_is_masked_in_every_encoding_a_server_echoes_it(encoding):
    echoed = KEY_ENCODINGS[encoding](KEY)
    decoded = json.loads(f'"{echoed}"')  # what the message reads after the server's JSON is parsed
    for text in (echoed, decoded, f"prefix {decoded} suffix", " ".join(decoded.split())):
        out = Redactor([KEY]).keys(text)
        assert MASK in out and KEY not in json.loads(f'"{out}"'.replace("\n", " ")), out


def test_base64_is_masked_at_every_alignment_and_prose_is_left_alone():
    import base64
    for prefix in (b"", b"u:", b"Bearer ", b"Basic user:"):
        out = Redactor([KEY]).keys(base64.b64encode(prefix + KEY.encode() + b" tail").decode())
        assert MASK in out
    prose = "Bearer bonds and the authorization of 1989"
    assert Redactor([KEY]).keys(prose) == prose


def _gateway(server: FakeOpenRouter, tmp_path: Path, max_retries: int = 2) -> Gateway:
    settings = GatewaySettings(api_base=server.base_url, timeout_s=5.0, max_retries=max_retries,
                               backoff_initial_s=0.01, backoff_max_s=0.02, cache_path=tmp_path / "cache.sqlite")
    return Gateway(settings, KEY, usage_path=tmp_path / "usage.json", rng=random.Random(0))


def _call(gateway: Gateway, route: str):
    if route == CHAT:
        return gateway.chat("m/x", [{"role": "user", "content": "q"}])
    return gateway.complete("m/x", "q")


def _failure(gateway: Gateway, route: str) -> GatewayError:
    """The error one call raises (the call must fail); the gateway is closed either way."""
    try:
        with pytest.raises(GatewayError) as info:
            _call(gateway, route)
    finally:
        gateway.close()
    return info.value


def _answer(route: str, text: str) -> Reply:
    return chat_reply(text) if route == CHAT else completion_reply(text)


@pytest.mark.parametrize("route", ROUTES)
def test_broken_emoji_is_replaced_recorded_cached_and_written(fake_openrouter, tmp_path, route):
    fake_openrouter.push(_answer(route, f"hi {BROKEN_EMOJI} there"))
    gateway = _gateway(fake_openrouter, tmp_path)
    try:
        reply = _call(gateway, route)
        assert reply.text == f"hi {REPLACEMENT} there" and reply.surrogates_replaced == 1
        (tmp_path / "reply.json").write_text(json.dumps(reply.record(), ensure_ascii=False), encoding="utf-8")
        assert _call(gateway, route).cached  # the cache stored it
        gateway.write_usage()
        usage = json.loads((tmp_path / "usage.json").read_text(encoding="utf-8"))
        assert usage["calls"][0]["surrogates_replaced"] == 1 and usage["totals"]["surrogates_replaced"] == 2
    finally:
        gateway.close()


FAULTS = {
    "error object in a 200": (lambda route: error_in_200(502, "Provider returned error"), "server", 502),
    "empty body": (lambda route: Reply(body=b""), "bad_response", None),
    "invalid UTF-8": (lambda route: Reply(body=b'{"choices": [{"text": "\xff\xfe"}]}'), "bad_response", None),
    "choices: []": (lambda route: no_choices(route), "bad_response", None),
    "HTML from a proxy": (lambda route: garbage(200), "bad_response", None),
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("fault", FAULTS)
def test_fault_shapes_are_retried_then_reported_with_their_kind(fake_openrouter, tmp_path, route, fault):
    make, kind, status = FAULTS[fault]
    fake_openrouter.handler = lambda request: make(route)
    gateway = _gateway(fake_openrouter, tmp_path, max_retries=2)
    error = _failure(gateway, route)
    assert (error.kind, error.status) == (kind, status), str(error)
    assert len(fake_openrouter.requests) == 3  # retried: 1 + max_retries, every one the gateway's
    totals = gateway.ledger.totals().as_dict()
    assert totals["errors"] == 1 and totals["retries"] == 2


@pytest.mark.parametrize("route", ROUTES)
def test_an_html_page_says_so_on_both_routes(fake_openrouter, tmp_path, route):
    """A proxy's page in a 200: on /completions litellm raised "'str' object has no attribute
    'model_dump'", which told the user nothing; both routes now name what came back."""
    fake_openrouter.handler = lambda request: garbage(200)
    error = _failure(_gateway(fake_openrouter, tmp_path, max_retries=0), route)
    assert "not an OpenAI-compatible JSON body" in str(error) and "model_dump" not in str(error)


@pytest.mark.parametrize("route", ROUTES)
def test_fault_then_answer_succeeds_and_is_not_cached_empty(fake_openrouter, tmp_path, route):
    fake_openrouter.push(error_in_200(), _answer(route, "the answer"))
    gateway = _gateway(fake_openrouter, tmp_path)
    try:
        assert _call(gateway, route).text == "the answer"
    finally:
        gateway.close()


def test_refused_connection_is_labelled_connection(tmp_path):
    with FakeOpenRouter() as server:
        settings_base = server.base_url
    for route in ROUTES:
        settings = GatewaySettings(api_base=settings_base, timeout_s=5.0, max_retries=0,
                                   cache_path=tmp_path / "cache.sqlite")
        error = _failure(Gateway(settings, KEY), route)
        assert error.kind == "connection" and error.status is None, str(error)


@pytest.mark.parametrize("route", ROUTES)
def test_echoed_key_is_redacted_everywhere(fake_openrouter, tmp_path, route):
    fake_openrouter.handler = key_echo
    gateway = _gateway(fake_openrouter, tmp_path)
    try:
        with pytest.raises(GatewayError) as info:
            _call(gateway, route)
        gateway.ledger.write(tmp_path / "usage.json")
    finally:
        gateway.close()
    assert KEY in fake_openrouter.requests[0].headers["authorization"]  # the server did echo it
    assert info.value.kind == "auth"
    assert KEY not in str(info.value) and KEY not in repr(info.value.args)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("route", ROUTES)
def test_a_dropped_connection_is_resent_only_by_the_gateway(fake_openrouter, tmp_path, route):
    from audit.testing.replies import truncated
    fake_openrouter.handler = lambda request: truncated(_answer(route, "never whole"))
    gateway = _gateway(fake_openrouter, tmp_path, max_retries=1)
    assert _failure(gateway, route).kind == "connection"
    assert len(fake_openrouter.requests) == 1 + gateway.ledger.totals().retries == 2


def _bounded_gateway(server: FakeOpenRouter, tmp_path: Path, **settings) -> Gateway:
    return Gateway(GatewaySettings(api_base=server.base_url, max_retries=0, cache_enabled=False,
                                   cache_path=tmp_path / "cache.sqlite", **settings), KEY, rng=random.Random(0))


@pytest.mark.parametrize("route", ROUTES)
def test_a_trickling_body_ends_at_the_attempts_deadline(fake_openrouter, tmp_path, route):
    """One byte every 0.2 s never stalls a read long enough for a read timeout; the deadline covers the body."""
    from audit.testing.replies import trickle
    fake_openrouter.handler = lambda request: trickle(_answer(route, "a slow answer " * 10), 0.2)
    error = _failure(_bounded_gateway(fake_openrouter, tmp_path, timeout_s=1.0), route)
    assert error.kind == "timeout" and "gateway.timeout_s" in str(error), str(error)
    assert time.monotonic() - fake_openrouter.requests[0].received_at < 4  # the whole body would take over 60 s


@pytest.mark.parametrize("route", ROUTES)
def test_an_endless_body_is_cut_off_at_the_size_limit(fake_openrouter, tmp_path, route):
    from audit.testing.replies import endless_body
    fake_openrouter.handler = lambda request: endless_body()
    gateway = _bounded_gateway(fake_openrouter, tmp_path, timeout_s=30.0, max_reply_bytes=1_000_000)
    error = _failure(gateway, route)
    assert error.kind == "too_large" and "gateway.max_reply_bytes" in str(error), str(error)
    assert time.monotonic() - fake_openrouter.requests[0].received_at < 10
    # The client hung up right after the limit: what the server got out is the limit plus socket buffers.
    assert fake_openrouter.streamed_bytes < 1_000_000 + 16_000_000
    (record,) = gateway.ledger.records
    assert record.error.startswith("too_large")


@pytest.mark.parametrize("route", ROUTES)
def test_a_declared_length_over_the_limit_is_refused_before_reading(fake_openrouter, tmp_path, route):
    fake_openrouter.handler = lambda request: _answer(route, "x" * 2_000)
    error = _failure(_bounded_gateway(fake_openrouter, tmp_path, max_reply_bytes=1_000), route)
    assert error.kind == "too_large" and "over 1,000" in str(error), str(error)
