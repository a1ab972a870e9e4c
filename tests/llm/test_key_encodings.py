"""The key in every encoding, on both routes, as a server's error and as model text: masked before the
gateway hands the text on, so it reaches no ledger, no response cache and no later prompt.

One case per (encoding, route, place). The server (loopback, over HTTP) quotes the key it was sent,
encoded; the error body has OpenRouter's documented shape ``{"error": {"code", "message",
"metadata"}}`` (docs: api-reference/errors), the model text the documented completion shapes.
The check is :func:`tests.test_key_leak.leaks`, which decodes by itself rather than trusting the redactor.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.types import GatewayError
from audit.testing.replies import CHAT, COMPLETION, KEY_ENCODINGS, REAL_SHAPED_KEY, encoded_key_echo, encoded_key_in_text
from audit.testing.server import FakeOpenRouter
from tests.test_key_leak import leaks

ROUTES = [CHAT, COMPLETION]


def _gateway(server: FakeOpenRouter, tmp_path: Path) -> Gateway:
    settings = GatewaySettings(api_base=server.base_url, timeout_s=10.0, max_retries=0,
                               cache_path=tmp_path / "responses.sqlite")
    return Gateway(settings, REAL_SHAPED_KEY, usage_path=tmp_path / "usage.json", rng=random.Random(0))


def _call(gateway: Gateway, route: str):
    if route == CHAT:
        return gateway.chat("m/x", [{"role": "user", "content": "hi"}], tag="t")
    return gateway.complete("m/x", "<|user|>", tag="t")


def _files_leak(tmp_path: Path) -> list[str]:
    return [p.name for p in tmp_path.rglob("*") if p.is_file() and leaks(p.read_bytes().decode("utf-8", "replace"))]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("encoding", list(KEY_ENCODINGS))
def test_a_server_error_echoing_the_key_is_masked(fake_openrouter, tmp_path, encoding, route):
    fake_openrouter.handler = encoded_key_echo(encoding, 401)
    gateway = _gateway(fake_openrouter, tmp_path)
    try:
        with pytest.raises(GatewayError) as info:
            _call(gateway, route)
        gateway.write_usage()
    finally:
        gateway.close()
    assert leaks(fake_openrouter.requests[0].headers["authorization"])  # the key went out, as it must
    assert "REDACTED" in str(info.value) and not leaks(str(info.value)), str(info.value)  # litellm masks a plain one itself
    assert not _files_leak(tmp_path)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("encoding", list(KEY_ENCODINGS))
def test_model_text_quoting_the_key_is_masked_before_it_is_cached_or_passed_on(fake_openrouter, tmp_path,
                                                                                encoding, route):
    fake_openrouter.handler = encoded_key_in_text(encoding, route)
    gateway = _gateway(fake_openrouter, tmp_path)
    try:
        reply = _call(gateway, route)
        again = _call(gateway, route)  # from the response cache
        gateway.write_usage()
    finally:
        gateway.close()
    assert again.cached and again.text == reply.text
    assert "[REDACTED]" in reply.text and not leaks(reply.text), reply.text  # what the next model would read
    assert (tmp_path / "responses.sqlite").is_file() and not _files_leak(tmp_path)
