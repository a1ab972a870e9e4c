"""The gateway against the loopback OpenRouter server: real HTTP through litellm, no mocks."""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path

import pytest

from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.types import GatewayError
from audit.testing.replies import chat_reply, completion_reply, context_length_reply, error_reply, garbage, slow
from audit.testing.server import FakeOpenRouter
from tests.timing import scaled

KEY = "sk-or-v1-fake-test-key-do-not-leak-0123"
DEEPSEEK_PROMPT = "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>天安门广场 1989 \"quoted\"\n"


def make_gateway(server: FakeOpenRouter, tmp_path: Path, **overrides) -> Gateway:
    usage_path = overrides.pop("usage_path", tmp_path / "usage.json")
    settings = GatewaySettings(api_base=server.base_url, timeout_s=overrides.pop("timeout_s", 5.0),
                               max_retries=overrides.pop("max_retries", 3), backoff_initial_s=0.01,
                               backoff_max_s=0.05, cache_path=tmp_path / "cache.sqlite", **overrides)
    return Gateway(settings, KEY, usage_path=usage_path, rng=random.Random(0))


@pytest.fixture
def gateway(fake_openrouter: FakeOpenRouter, tmp_path: Path):
    gw = make_gateway(fake_openrouter, tmp_path)
    yield gw
    gw.close()


def test_raw_prompt_arrives_byte_for_byte_at_completions(gateway, fake_openrouter):
    fake_openrouter.push_completion(completion_reply("I was a student then<｜Assistant｜>Sure"))
    reply = gateway.complete("deepseek/deepseek-chat", DEEPSEEK_PROMPT,
                             stop=["<｜Assistant｜>", "<｜end▁of▁sentence｜>"], max_tokens=50, temperature=0.7,
                             provider={"order": ["DeepInfra"], "allow_fallbacks": False})
    (request,) = fake_openrouter.requests
    assert request.path == "/api/v1/completions"
    assert request.json["prompt"] == DEEPSEEK_PROMPT
    # the JSON string literal on the wire is the prompt, escaped only as JSON requires
    assert json.dumps(DEEPSEEK_PROMPT, ensure_ascii=False).encode("utf-8") in request.body
    assert request.json["model"] == "deepseek/deepseek-chat"
    assert request.json["stop"] == ["<｜Assistant｜>", "<｜end▁of▁sentence｜>"]
    assert request.json["provider"] == {"order": ["DeepInfra"], "allow_fallbacks": False}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["x-title"] == "audit"
    # the server ignored the stop; the gateway cuts at it anyway
    assert reply.text == "I was a student then"
    assert reply.finish_reason == "stop"


def test_chat_arrives_at_chat_completions(gateway, fake_openrouter):
    fake_openrouter.push_chat(chat_reply('{"next_prompt": "hi"}'))
    messages = [{"role": "system", "content": "You audit."}, {"role": "user", "content": "Begin."}]
    reply = gateway.chat("anthropic/claude-sonnet-4", messages, response_format={"type": "json_object"},
                         temperature=0.3)
    (request,) = fake_openrouter.requests
    assert request.path == "/api/v1/chat/completions"
    assert request.json["messages"] == messages
    assert request.json["response_format"] == {"type": "json_object"}
    assert request.json["model"] == "anthropic/claude-sonnet-4"
    assert reply.text == '{"next_prompt": "hi"}'


def test_429_with_retry_after_waits_then_succeeds(gateway, fake_openrouter):
    fake_openrouter.push(error_reply(429, "rate limited", headers={"Retry-After": "0.4"}), completion_reply("ok"))
    started = time.perf_counter()
    reply = gateway.complete("m/x", "p")
    assert time.perf_counter() - started >= 0.4
    assert reply.text == "ok" and reply.retries == 1
    assert len(fake_openrouter.requests) == 2


def test_500_is_retried(gateway, fake_openrouter):
    fake_openrouter.push(error_reply(500, "upstream"), error_reply(502, "bad gateway"), garbage(), completion_reply("ok"))
    reply = gateway.complete("m/x", "p")
    assert reply.text == "ok" and reply.retries == 3
    assert gateway.ledger.totals().retries == 3


@pytest.mark.parametrize(("reply", "kind"), [
    (error_reply(400, "invalid parameter 'stop'"), "bad_request"),
    (error_reply(401, "No auth credentials found"), "auth"),
    (error_reply(404, "No endpoints found for x/unknown"), "not_found"),
    (context_length_reply(), "context_length"),
])
def test_client_errors_are_not_retried_and_reported(gateway, fake_openrouter, reply, kind):
    fake_openrouter.push(reply, completion_reply("never sent"))
    with pytest.raises(GatewayError) as info:
        gateway.complete("x/unknown", "p")
    assert info.value.kind == kind
    assert "x/unknown" in str(info.value)
    assert len(fake_openrouter.requests) == 1
    assert gateway.ledger.totals().errors == 1


def test_timeout_is_retried_then_reported(fake_openrouter, tmp_path):
    # the deadline scales with the load: the retry opens a new connection, which at load 7-10 on 2 cores
    # sometimes took longer than a fixed 0.3 s, so the retry was cut off before the server saw it
    deadline = scaled(0.3)
    gw = make_gateway(fake_openrouter, tmp_path, timeout_s=deadline, max_retries=1)
    fake_openrouter.push(slow(5 * deadline, completion_reply("late")), slow(5 * deadline, completion_reply("late")))
    try:
        with pytest.raises(GatewayError) as info:
            gw.complete("m/x", "p")
    finally:
        gw.close()
    assert info.value.kind == "timeout"
    assert info.value.retries == 1
    assert len(fake_openrouter.requests) == 2


def test_cache_hit_sends_no_request_and_costs_nothing(fake_openrouter, tmp_path):
    fake_openrouter.push(completion_reply("first"))
    gw = make_gateway(fake_openrouter, tmp_path)
    first = gw.complete("m/x", "p", temperature=0.7, max_tokens=10)
    gw.close()
    # another run (its own ledger) in a new process would see the same cache file
    again = make_gateway(fake_openrouter, tmp_path, usage_path=tmp_path / "other" / "usage.json")
    second = again.complete("m/x", "p", temperature=0.7, max_tokens=10)
    again.close()
    assert len(fake_openrouter.requests) == 1
    assert second.cached and second.text == first.text == "first"
    assert again.ledger.totals().cost == 0 and again.ledger.totals().cached_calls == 1


def test_two_sample_indices_are_two_requests(gateway, fake_openrouter):
    fake_openrouter.push(completion_reply("a"), completion_reply("b"))
    replies = [gateway.complete("m/x", "p", temperature=0.7, sample_index=i) for i in (0, 1)]
    assert [r.text for r in replies] == ["a", "b"]
    assert len(fake_openrouter.requests) == 2


def test_cache_can_be_switched_off(fake_openrouter, tmp_path):
    gw = make_gateway(fake_openrouter, tmp_path, cache_enabled=False)
    fake_openrouter.push(completion_reply("a"), completion_reply("b"))
    assert [gw.complete("m/x", "p").text for _ in range(2)] == ["a", "b"]
    gw.close()


def test_cost_totals_add_up(gateway, fake_openrouter, tmp_path):
    costs = [0.0012, 0.00034, 0.5]
    for i, cost in enumerate(costs):
        fake_openrouter.push(completion_reply(f"r{i}", usage={"prompt_tokens": 10 + i, "completion_tokens": 5, "cost": cost}))
    for i in range(3):
        gateway.complete("m/x", f"prompt {i}")
    totals = gateway.ledger.totals().as_dict()
    assert totals["cost"] == pytest.approx(sum(costs))
    assert totals["prompt_tokens"] == 33 and totals["completion_tokens"] == 15 and totals["calls"] == 3
    gateway.write_usage()
    saved = json.loads((tmp_path / "usage.json").read_text())
    assert saved["totals"]["cost"] == pytest.approx(sum(costs))
    assert len(saved["calls"]) == 3


def test_concurrency_is_bounded(fake_openrouter, tmp_path):
    gw = make_gateway(fake_openrouter, tmp_path, max_concurrency=4, cache_enabled=False)
    fake_openrouter.latency_s = 0.2
    fake_openrouter.default_reply = completion_reply("x")

    async def burst() -> None:
        await asyncio.gather(*(gw.acomplete("m/x", f"p{i}") for i in range(8)))
        await gw.aclose()

    started = time.perf_counter()
    asyncio.run(burst())
    elapsed = time.perf_counter() - started
    assert 0.4 <= elapsed < 1.6  # two waves of four, never eight at once


def test_key_appears_in_no_written_file(fake_openrouter, tmp_path):
    gw = make_gateway(fake_openrouter, tmp_path)
    fake_openrouter.push(completion_reply("ok"), error_reply(401, "bad key"))
    gw.complete("m/x", "p")
    with pytest.raises(GatewayError) as info:
        gw.complete("m/x", "other")
    gw.write_usage()
    gw.close()
    assert KEY not in str(info.value) and KEY not in repr(gw)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_completions_reuse_one_connection(gateway, fake_openrouter):
    fake_openrouter.default_reply = completion_reply("ok")
    for i in range(5):
        gateway.complete("m/x", f"prompt {i}")
    assert len({r.client_port for r in fake_openrouter.requests}) == 1


def test_both_routes_share_one_pool_no_wider_than_the_concurrency(fake_openrouter, tmp_path):
    """60 calls on two routes, 8 in flight: at most 8 connections, all of them reused (litellm's
    default client opened one per call above 20 in flight)."""
    fake_openrouter.latency_s = 0.02
    fake_openrouter.handler = lambda request: (chat_reply("c") if request.endpoint == "chat"
                                               else completion_reply("t"))
    gw = make_gateway(fake_openrouter, tmp_path, max_concurrency=8, cache_enabled=False)

    async def burst() -> int:
        calls = [gw.achat("m/x", [{"role": "user", "content": f"q{i}"}]) for i in range(30)]
        calls += [gw.acomplete("m/x", f"p{i}") for i in range(30)]
        replies = await asyncio.gather(*calls)
        assert sorted({r.text for r in replies}) == ["c", "t"]
        opened = gw.connections_opened  # read before aclose forgets the pools
        await gw.aclose()
        return opened

    opened = asyncio.run(burst())
    ports = {r.client_port for r in fake_openrouter.requests}
    assert len(fake_openrouter.requests) == 60
    assert len(ports) == fake_openrouter.connections_opened == opened
    assert 1 < opened <= 8


def test_error_line_carries_the_servers_words_and_a_hint(gateway, fake_openrouter):
    fake_openrouter.push(error_reply(401, "No auth credentials found"))
    with pytest.raises(GatewayError) as info:
        gateway.complete("x/y", "p")
    line = str(info.value)
    assert line.startswith("auth 401: x/y via ")
    assert "No auth credentials found" in line and "OPENROUTER_API_KEY" in line
    assert "litellm" not in line and "{" not in line and "\n" not in line


def test_chat_error_line_is_clean_too(gateway, fake_openrouter):
    fake_openrouter.push(error_reply(404, "No endpoints found for x/unknown."))
    with pytest.raises(GatewayError) as info:
        gateway.chat("x/unknown", [{"role": "user", "content": "hi"}])
    line = str(info.value)
    assert line.startswith("not_found 404: x/unknown via ") and "No endpoints found for x/unknown." in line
    assert "litellm" not in line and "{" not in line


@pytest.mark.parametrize("cache_enabled", [True, False])
def test_identical_concurrent_calls_make_one_request(fake_openrouter, tmp_path, cache_enabled):
    """Single-flight: the first of five identical calls goes out, the others await its reply."""
    gw = make_gateway(fake_openrouter, tmp_path, cache_enabled=cache_enabled)
    fake_openrouter.latency_s = 0.2
    fake_openrouter.default_reply = completion_reply("one answer")

    async def burst() -> list:
        replies = await asyncio.gather(*(gw.acomplete("m/x", "same prompt") for _ in range(5)),
                                       gw.acomplete("m/x", "another prompt"))
        await gw.aclose()
        return replies

    replies = asyncio.run(burst())
    assert [r.text for r in replies] == ["one answer"] * 6
    assert sorted(r.json["prompt"] for r in fake_openrouter.requests) == ["another prompt", "same prompt"]
    totals = gw.ledger.totals().as_dict()
    assert totals["calls"] == 6 and totals["shared_calls"] == 4
    # disjoint: a shared reply is not counted as cached; calls - cached - shared = requests sent
    assert totals["cached_calls"] == 0
    assert totals["calls"] - totals["cached_calls"] - totals["shared_calls"] == len(fake_openrouter.requests)


BYOK_USAGE = {"prompt_tokens": 12, "completion_tokens": 4, "cost": 0.000001, "is_byok": True,
              "cost_details": {"upstream_inference_cost": 0.00002}}


@pytest.mark.parametrize("route", ["completion", "chat"])
def test_a_byok_call_costs_the_fee_plus_the_providers_charge(fake_openrouter, tmp_path, route):
    """Under BYOK ``usage.cost`` is OpenRouter's fee only; the provider bills the key's owner
    ``cost_details.upstream_inference_cost`` (cookbook/administration/usage-accounting.mdx, "Cost
    Breakdown"). The ledger and the budget count both; ``is_byok: false`` keeps ``cost`` alone."""
    from audit.llm.budget import Budget

    push = fake_openrouter.push_completion if route == "completion" else fake_openrouter.push_chat
    reply = completion_reply if route == "completion" else chat_reply
    push(reply("paid on my key", usage=BYOK_USAGE))
    push(reply("paid by OpenRouter", usage={**BYOK_USAGE, "is_byok": False}))
    budget = Budget(0.0000215)
    settings = GatewaySettings(api_base=fake_openrouter.base_url, timeout_s=5.0, max_retries=0,
                               cache_path=tmp_path / "cache.sqlite")
    gw = Gateway(settings, KEY, usage_path=tmp_path / "usage.json", rng=random.Random(0), budget=budget)
    try:
        call = gw.complete if route == "completion" else (lambda m, p: gw.chat(m, [{"role": "user", "content": p}]))
        call("m/x", "first")
        call("m/x", "second")
        totals = gw.ledger.totals()
    finally:
        gw.close()
    assert totals.cost == pytest.approx(0.000021 + 0.000001)
    assert totals.upstream_cost == pytest.approx(0.00002) and totals.byok_calls == 1
    assert budget.spent() == pytest.approx(0.000022) and budget.exhausted
    assert totals.byok_line() == ("; 1 of 2 calls BYOK: $0.000020 of the total billed on your provider key, "
                                  "the rest by OpenRouter")
