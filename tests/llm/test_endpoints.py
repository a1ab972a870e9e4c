"""Named endpoints and structured outputs in the gateway, over real HTTP to two loopback servers."""

import json
import random
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from audit.errors import UserError
from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.structured import json_schema_format
from audit.llm.types import GatewayError
from audit.testing.documented import payment_required, transient_400
from audit.testing.replies import chat_reply, completion_reply, error_reply
from audit.testing.server import FakeOpenRouter

KEY = "sk-or-v1-fake-test-key-do-not-leak-0123"
SCHEMA = json_schema_format("answer", {"type": "object", "properties": {"answer": {"type": "string"}},
                                       "required": ["answer"], "additionalProperties": False})


def node(openrouter: str, local: str, cache: dict | None = None, **extra) -> dict:
    return {"api_base": openrouter, "endpoints": {"local": {"api_base": local, "key_env": None}, **extra},
            "max_retries": 0, "backoff_initial_s": 0.01, "cache": cache or {"enabled": False}}


@pytest.fixture
def local_server():
    with FakeOpenRouter() as server:
        yield server


def test_each_endpoint_gets_its_own_calls_and_the_run_records_where(fake_openrouter, local_server, tmp_path,
                                                                    monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_BASE", raising=False)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    cfg = node(fake_openrouter.base_url, local_server.base_url, cache={"path": str(tmp_path / "c.sqlite")})
    gateway = Gateway.from_config(OmegaConf.create(cfg), usage_path=tmp_path / "usage.json",
                                  endpoints=["openrouter", "local"])
    fake_openrouter.push_chat(chat_reply("from openrouter"))
    local_server.push_completion(completion_reply("from local"))
    try:
        assert gateway.chat("a/auditor", [{"role": "user", "content": "hi"}]).text == "from openrouter"
        reply = gateway.complete("smollm2", "<|im_start|>user\n", endpoint="local")
        assert (reply.text, reply.endpoint, reply.api_base) == ("from local", "local", local_server.base_url)
        # an identical call to the other endpoint is not the cached one
        local_server.push_chat(chat_reply("local chat"))
        assert gateway.chat("a/auditor", [{"role": "user", "content": "hi"}], endpoint="local").text == "local chat"
    finally:
        gateway.write_usage()
        gateway.close()
    assert [r.path for r in fake_openrouter.requests] == ["/api/v1/chat/completions"]
    assert [r.path for r in local_server.requests] == ["/api/v1/completions", "/api/v1/chat/completions"]
    assert local_server.requests[0].headers.get("authorization") != f"Bearer {KEY}"  # no key leaks to a keyless server
    calls = json.loads((tmp_path / "usage.json").read_text())["calls"]
    assert [(c["endpoint"], c["api_base"]) for c in calls] == [
        ("openrouter", fake_openrouter.base_url), ("local", local_server.base_url), ("local", local_server.base_url)]


def test_key_only_required_for_endpoints_in_use(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("GPU_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    cfg = OmegaConf.create(node("https://example.invalid/api/v1", "http://127.0.0.1:9/v1",
                                gpu={"api_base": "http://127.0.0.1:8001/v1", "key_env": "GPU_KEY"}))
    Gateway.from_config(cfg, endpoints=["local"]).close()  # no key needed at all
    for endpoints, variable in ((["local", "openrouter"], "OPENROUTER_API_KEY"), (["gpu"], "GPU_KEY")):
        with pytest.raises(UserError, match=f"^{variable} is not set") as refused:
            Gateway.from_config(cfg, endpoints=endpoints)
        # the OpenRouter key's line names the two routes that need no key; another endpoint's does not
        no_key_routes = "local=true" in str(refused.value) and "audit.testing.fake_openrouter" in str(refused.value)
        assert no_key_routes == (variable == "OPENROUTER_API_KEY") and "\n" not in str(refused.value)


def test_unknown_endpoint_lists_the_configured_ones(monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_BASE", raising=False)
    settings = GatewaySettings.from_config(OmegaConf.create(node("https://example.invalid/api/v1", "http://127.0.0.1:8000/v1")))
    with pytest.raises(UserError, match=r"Unknown endpoint 'locl'\. Did you mean 'local'\?.*local, openrouter"):
        settings.endpoint("locl")
    with pytest.raises(UserError, match="not an http"):
        GatewaySettings.from_config(OmegaConf.create(node("https://example.invalid/api/v1", "127.0.0.1:8000")))


def test_local_server_down_names_url_and_fix(tmp_path):
    settings = GatewaySettings.from_config(OmegaConf.create(node("https://example.invalid/api/v1", "http://127.0.0.1:9/v1")))
    gateway = Gateway(GatewaySettings(**{**settings.__dict__, "max_retries": 0, "cache_enabled": False}), None)
    try:
        with pytest.raises(Exception) as info:
            gateway.complete("m", "p", endpoint="local")
    finally:
        gateway.close()
    message = str(info.value)
    assert "onnection" in message and "http://127.0.0.1:9/v1" in message and "local=true" in message


@pytest.mark.parametrize("mode,replies,sent", [
    ("auto", [chat_reply('{"answer": "x"}')], [True]),
    ("auto", [error_reply(400, "response_format is not supported"), chat_reply('{"answer": "x"}')], [True, False]),
    ("off", [chat_reply('{"answer": "x"}')], [False]),
])
def test_structured_output_modes(fake_openrouter, tmp_path, mode, replies, sent):
    settings = GatewaySettings(api_base=fake_openrouter.base_url, max_retries=0, cache_path=tmp_path / "c.sqlite")
    gateway = Gateway(settings, KEY, usage_path=tmp_path / "usage.json", rng=random.Random(0))
    fake_openrouter.push_chat(*replies)
    try:
        reply = gateway.chat("m", [{"role": "user", "content": "q"}], response_format=SCHEMA, structured=mode)
    finally:
        gateway.write_usage()
        gateway.close()
    assert reply.text == '{"answer": "x"}'
    assert ["response_format" in r.json for r in fake_openrouter.chat_requests()] == sent
    if sent[0]:
        assert fake_openrouter.chat_requests()[0].json["response_format"] == SCHEMA
    expected = {(True,): "json_schema", (True, False): "rejected", (False,): None}[tuple(sent)]
    calls = json.loads(Path(tmp_path / "usage.json").read_text())["calls"]
    assert calls[-1]["structured_output"] == reply.structured_output == expected


def test_a_rejection_drops_the_schema_for_that_call_only(fake_openrouter, tmp_path):
    """A 400 naming a schema feature drops response_format for the call it answered; the next call
    sends it again (one provider's refusal says nothing about the one that serves the next call)."""
    settings = GatewaySettings(api_base=fake_openrouter.base_url, max_retries=0, cache_enabled=False)
    gateway = Gateway(settings, KEY)
    fake_openrouter.push_chat(error_reply(400, "maxItems is not supported"), chat_reply("1"), chat_reply("2"))
    try:
        first = gateway.chat("m", [{"role": "user", "content": "q1"}], response_format=SCHEMA)
        second = gateway.chat("m", [{"role": "user", "content": "q2"}], response_format=SCHEMA)
    finally:
        gateway.close()
    assert (first.structured_output, second.structured_output) == ("rejected", "json_schema")
    assert ["response_format" in r.json for r in fake_openrouter.chat_requests()] == [True, False, True]


@pytest.mark.parametrize("refusal", [transient_400(), payment_required()], ids=["provider_returned_error", "402"])
def test_a_400_that_names_no_schema_keeps_it(fake_openrouter, tmp_path, refusal):
    """"Provider returned error" (a 400 naming no parameter) or a 402 is no schema refusal: the call
    fails as it is and every later call still sends response_format (OpenRouter errors guide)."""
    settings = GatewaySettings(api_base=fake_openrouter.base_url, max_retries=0, cache_enabled=False)
    gateway = Gateway(settings, KEY)
    fake_openrouter.push_chat(refusal, chat_reply("2"))
    try:
        with pytest.raises(GatewayError):
            gateway.chat("m", [{"role": "user", "content": "q1"}], response_format=SCHEMA)
        assert gateway.chat("m", [{"role": "user", "content": "q2"}], response_format=SCHEMA).structured_output \
            == "json_schema"
    finally:
        gateway.close()
    assert ["response_format" in r.json for r in fake_openrouter.chat_requests()] == [True, True]


def test_structured_on_does_not_retry_a_rejection(fake_openrouter, tmp_path):
    settings = GatewaySettings(api_base=fake_openrouter.base_url, max_retries=0, cache_enabled=False)
    gateway = Gateway(settings, KEY)
    fake_openrouter.push_chat(error_reply(400, "response_format is not supported"))
    try:
        with pytest.raises(Exception, match="bad_request"):
            gateway.chat("m", [{"role": "user", "content": "q"}], response_format=SCHEMA, structured="on")
        with pytest.raises(UserError, match="structured_output must be one of auto, on, off"):
            gateway.chat("m", [{"role": "user", "content": "q"}], response_format=SCHEMA, structured="yes")
    finally:
        gateway.close()
    assert len(fake_openrouter.chat_requests()) == 1
