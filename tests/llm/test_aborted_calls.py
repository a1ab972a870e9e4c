"""Long calls streamed, and calls cut off in flight kept in the ledger and the budget (issue 24, finding 9).

OpenRouter bills a call the client stops waiting for: "For non-streaming requests or unsupported
providers, the model will continue processing and you will be billed for the complete response";
a streamed one cut off at a provider on its "Supported" list stops billing at once (API reference,
"Streaming", "Stream Cancellation"). Before, such a call was in the ledger at $0 (or, past the
deadline, only as the failure after its retries, each re-send billed again): a budget never saw it.
The loopback server plays both and bills as documented (``server.bills``); these tests hold the
gateway's estimate against that bill, over real HTTP through litellm.
"""

from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from audit.llm import aborted
from audit.llm.budget import Budget
from audit.llm.gateway import Gateway
from audit.llm.prices import Price
from audit.llm.settings import GatewaySettings
from audit.llm.stream_cancel import stops_billing
from audit.llm.types import GatewayError
from audit.testing.documented import error_finish
from audit.testing.replies import CHAT, chat_reply, slow
from audit.testing.server import FakeOpenRouter

KEY = "sk-or-v1-fake-test-key-aborted-0123"
LONG = " ".join(f"w{i}" for i in range(400))
MESSAGES = [{"role": "system", "content": "You audit."}, {"role": "user", "content": "Begin the audit now."}]


def make_gateway(server: FakeOpenRouter, tmp_path: Path, **overrides) -> Gateway:
    budget = overrides.pop("budget", None)
    settings = GatewaySettings(api_base=server.base_url, timeout_s=overrides.pop("timeout_s", 30.0),
                               stream_timeout_s=overrides.pop("stream_timeout_s", 30.0),
                               max_retries=overrides.pop("max_retries", 0), backoff_initial_s=0.01,
                               backoff_max_s=0.02, cache_enabled=False, stream_min_tokens=1000, **overrides)
    return Gateway(settings, KEY, usage_path=tmp_path / "usage.json", rng=random.Random(0), budget=budget)


def bills(server: FakeOpenRouter, n: int) -> list:
    """The server's first ``n`` bills, once its handler threads have written them (a stream cut off by
    the client is billed when the server sees the hang-up, at its next write)."""
    deadline = time.monotonic() + 30
    while len(server.bills) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.bills


def warm_up(tmp_path: Path) -> None:
    """One streamed call on a server of its own: litellm loads its provider modules during a process's
    first call, inside that attempt's deadline (18 s on a loaded machine), and a request not yet written
    when the deadline comes is not estimated as billed; these tests time the stream, not the import."""
    (tmp_path / "warm").mkdir()
    with FakeOpenRouter() as server:
        server.push_chat(chat_reply("warm"))
        gateway = make_gateway(server, tmp_path / "warm")
        try:
            gateway.chat("a/b", MESSAGES, max_tokens=2000)
        finally:
            gateway.close()


# -- the estimate (pure) ---------------------------------------------------------------------

def test_the_documented_providers_stop_billing_on_cancellation_and_the_rest_do_not() -> None:
    assert all(stops_billing(p) for p in ("DeepSeek", "Together", "DeepInfra", "Novita", "Fireworks", "Anthropic"))
    assert not any(stops_billing(p) for p in ("Google", "Google AI Studio", "Minimax", "Groq", "Alibaba", None, ""))


@pytest.mark.parametrize(("streamed", "provider", "completion"), [
    (False, None, 4000),           # not streamed: the provider finishes and bills it all
    (True, "Google", 4000),        # streamed, but Google is on the "not currently supported" list
    (True, "DeepSeek", 5),         # streamed and stopped: what was received (12 bytes / 3) and one in flight
])
def test_the_estimate_bills_a_cut_off_call_as_openrouter_documents(streamed, provider, completion) -> None:
    payload = {"messages": [{"role": "user", "content": "x" * 30}, {"role": "user", "content": "天安门"}]}
    guess = aborted.estimate(payload, max_tokens=4000, streamed=streamed, received="twelve bytes",
                             provider=provider, price=Price(1e-6, 2e-6))
    assert guess.prompt_tokens == 14  # 30 + 1 + 9 bytes, / 3 rounded up: over English's ~4 characters a token
    assert guess.completion_tokens == completion
    assert guess.cost == pytest.approx(14e-6 + completion * 2e-6)
    assert guess.basis.startswith("estimated")


def test_without_a_list_price_the_tokens_are_kept_and_the_cost_says_so() -> None:
    guess = aborted.estimate({"prompt": "abc"}, max_tokens=10, streamed=False, received="", provider=None, price=None)
    assert (guess.prompt_tokens, guess.completion_tokens, guess.cost) == (1, 10, 0.0)
    assert "no price known" in guess.basis


def test_the_end_line_names_the_calls_cut_off_and_their_estimate() -> None:
    assert aborted.note({"aborted_calls": 0}) == ""
    assert aborted.note({"aborted_calls": 1, "estimated_cost": 0.0123}) == \
        "; 1 call cut off in flight (may be billed: estimated $0.0123, in the cost)"
    assert aborted.note({"aborted_calls": 2, "estimated_cost": 0.5}).startswith("; 2 calls cut off")


# -- the gateway over real HTTP ------------------------------------------------------------------

def test_a_long_call_is_streamed_and_reads_as_the_same_reply(fake_openrouter: FakeOpenRouter, tmp_path: Path) -> None:
    """A call allowed ``stream.min_tokens`` or more goes with ``stream: true``; the SSE reply (usage and
    cost in its last event) gives the text, finish reasons, usage, reasoning tokens, cost, provider and
    generation id a non-streamed reply gives. The reasoning tokens are in
    ``usage.completion_tokens_details.reasoning_tokens`` (reasoning tokens guide), in the streamed
    reply's last event with the rest of its usage. Routing metadata is not compared: litellm's stream
    parser drops it (docs/openrouter.md)."""
    fake_openrouter.push_chat(*[chat_reply("The answer.", provider="DeepSeek", reasoning="Let me think.",
                                           reasoning_tokens=7) for _ in range(2)])
    gateway = make_gateway(fake_openrouter, tmp_path)
    try:
        whole = gateway.chat("a/b", MESSAGES, max_tokens=500)
        streamed = gateway.chat("a/b", MESSAGES, max_tokens=2000, sample_index=1)
    finally:
        gateway.close()
    plain, sse = fake_openrouter.chat_requests()
    assert "stream" not in plain.json and sse.json["stream"] is True
    same = ("text", "finish_reason", "native_finish_reason", "usage", "reasoning_tokens", "provider", "outcome")
    assert {f: getattr(streamed, f) for f in same} == {f: getattr(whole, f) for f in same}
    assert whole.reasoning_tokens == 7
    assert streamed.usage.cost > 0 and streamed.generation_id and streamed.generation_id.startswith("gen-")
    assert [b.streamed for b in fake_openrouter.bills] == [False, True]


@pytest.mark.parametrize(("provider", "stops"), [("DeepSeek", True), ("Google", False)])
def test_a_stream_cut_off_at_its_deadline_is_in_the_ledger_and_the_budget(
        fake_openrouter: FakeOpenRouter, tmp_path: Path, provider: str, stops: bool) -> None:
    """The deadline ends a long stream; the ledger records that attempt with an estimate at least the
    loopback server's bill, and the budget is charged it. A provider that stops on cancellation
    stopped generating (billed for part of the reply); one that does not billed the whole."""
    warm_up(tmp_path)
    fake_openrouter.push_chat(replace(chat_reply(LONG, provider=provider), stream_interval_s=0.02))
    budget = Budget(1.0)
    gateway = make_gateway(fake_openrouter, tmp_path, stream_timeout_s=1.5, budget=budget)
    try:
        with pytest.raises(GatewayError) as failure:
            gateway.chat("a/b", MESSAGES, max_tokens=2000)
        records = gateway.ledger.records
        totals = gateway.ledger.totals().as_dict()
    finally:
        gateway.close()
    assert failure.value.kind == "timeout"
    (cut,) = [r for r in records if r.estimated]
    (bill,) = bills(fake_openrouter, 1)
    assert bill.aborted and bill.streamed
    assert bill.completion_tokens < 400 if stops else bill.completion_tokens >= 400
    assert cut.usage.provider == provider and "gateway.stream.timeout_s" in cut.error and "estimated" in cut.error
    assert cut.usage.completion_tokens >= bill.completion_tokens and cut.usage.prompt_tokens >= bill.prompt_tokens
    assert cut.usage.cost >= bill.cost > 0
    if not stops:
        assert cut.usage.completion_tokens == 2000  # up to max_tokens: the provider went on generating
    assert budget.spent() == pytest.approx(cut.usage.cost)
    assert totals["aborted_calls"] == 1 and totals["estimated_cost"] == pytest.approx(cut.usage.cost)
    assert totals["errors"] == 1 and totals["cost"] == pytest.approx(cut.usage.cost)  # the failure after its retries
    assert fake_openrouter.listings == 1  # the list price, looked up once


def test_every_retried_attempt_past_the_deadline_is_counted_and_stops_the_budget(
        fake_openrouter: FakeOpenRouter, tmp_path: Path) -> None:
    """A short call (not streamed) past ``timeout_s``: billed whole by the provider each time it is
    re-sent. Each attempt is in the ledger at up to max_tokens; once they spend the budget, the next
    call is refused before it is sent (before, the ledger said $0 and the budget never moved)."""
    fake_openrouter.default_reply = slow(2.5, chat_reply("late", provider="Google"))
    budget = Budget(0.0015)  # one estimate is 2 + 500 tokens at $1/$2 per million: about $0.001
    gateway = make_gateway(fake_openrouter, tmp_path, timeout_s=1.0, max_retries=1, budget=budget)
    try:
        with pytest.raises(GatewayError):
            gateway.chat("a/b", MESSAGES, max_tokens=500)
        with pytest.raises(GatewayError) as refused:
            gateway.chat("a/b", MESSAGES, max_tokens=500, sample_index=1)
        totals = gateway.ledger.totals().as_dict()
    finally:
        gateway.close()
    assert refused.value.kind == "budget"
    assert len(fake_openrouter.chat_requests()) == 2  # both attempts of the first call; the second never sent
    assert totals["aborted_calls"] == 2 and budget.spent() == pytest.approx(totals["estimated_cost"])
    assert budget.spent() > 0.0015


def assert_retried_once_into_the_whole_answer(fake_openrouter: FakeOpenRouter, tmp_path: Path) -> None:
    """One chat call with one retry allowed: the broken first reply queued on the server is retried,
    and the reply is the second one's ("Whole answer."), never the broken one's partial text."""
    gateway = make_gateway(fake_openrouter, tmp_path, max_retries=1)
    try:
        reply = gateway.chat("a/b", MESSAGES, max_tokens=2000)
    finally:
        gateway.close()
    assert reply.text == "Whole answer." and reply.retries == 1


def test_an_error_event_mid_stream_is_retried_never_an_answer(fake_openrouter: FakeOpenRouter,
                                                                tmp_path: Path) -> None:
    """OpenRouter's mid-stream error (one event with ``error`` and ``finish_reason: "error"``, then the
    stream ends) is the streamed error finish: retried, and the partial text is never the reply."""
    fake_openrouter.push_chat(error_finish(CHAT, partial="The square was"), chat_reply("Whole answer.",
                                                                                       provider="DeepSeek"))
    assert_retried_once_into_the_whole_answer(fake_openrouter, tmp_path)
    assert all(r.json.get("stream") is True for r in fake_openrouter.chat_requests())


def test_a_stream_whose_finish_and_usage_arrived_is_kept_without_done(fake_openrouter: FakeOpenRouter,
                                                                       tmp_path: Path) -> None:
    """A server that sends the last chunk (finish reason and usage) but never ``data: [DONE]``: the
    reply is whole (usage comes "exactly once in the final chunk before the [DONE] message", API
    overview). Before, it waited for the deadline, threw the reply away and billed an estimate."""
    fake_openrouter.push_chat(replace(chat_reply("The square was cleared.", provider="DeepSeek"),
                                      stream_done=False))
    gateway = make_gateway(fake_openrouter, tmp_path, stream_timeout_s=30.0)
    try:
        reply = gateway.chat("a/b", MESSAGES, max_tokens=2000)
        records = gateway.ledger.records
    finally:
        gateway.close()
    assert reply.text == "The square was cleared." and reply.finish_reason == "stop" and reply.usage.cost > 0
    assert not any(r.estimated for r in records) and len(fake_openrouter.chat_requests()) == 1


def test_a_malformed_event_mid_stream_is_an_error_finish_retried(fake_openrouter: FakeOpenRouter,
                                                                  tmp_path: Path) -> None:
    """A ``data:`` line that is not JSON, after the first piece of text: litellm's handler would pass it
    on as an empty chunk and the reply would be read past the gap. It is an error finish: retried, and
    the failure, when retries run out, names the event in the ledger."""
    broken = replace(chat_reply("The square was cleared.", provider="DeepSeek"), stream_malformed=True)
    fake_openrouter.push_chat(broken, chat_reply("Whole answer.", provider="DeepSeek"))
    assert_retried_once_into_the_whole_answer(fake_openrouter, tmp_path)

    fake_openrouter.push_chat(broken)
    gateway = make_gateway(fake_openrouter, tmp_path)
    try:
        with pytest.raises(GatewayError) as failed:
            gateway.chat("a/b", MESSAGES, max_tokens=2000)
        records = gateway.ledger.records
    finally:
        gateway.close()
    assert failed.value.kind == "error_finish" and "not a JSON object" in str(failed.value)
    assert "not a JSON object" in (records[-1].error or "")


@pytest.mark.parametrize("reaches_server", [True, False])
def test_only_an_attempt_whose_request_was_written_is_billed_when_cut_off(
        fake_openrouter: FakeOpenRouter, tmp_path: Path, reaches_server: bool) -> None:
    """A stop (Ctrl-C, SIGTERM, a spent budget) cuts off one call. When its request reached the server
    the ledger estimates the bill; when it never did (here: a server whose accept queue is full, so the
    connection never completes) nothing was sent and nothing is billed (before, an estimate was
    recorded for every attempt, sent or not: 4 estimated calls against 1 request received)."""
    fake_openrouter.default_reply = slow(30, chat_reply("late", provider="Google"))
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        with socket.create_connection(listener.getsockname()):  # fills the queue: the next connect hangs
            full = f"http://127.0.0.1:{listener.getsockname()[1]}/api/v1"
            settings = GatewaySettings(api_base=fake_openrouter.base_url if reaches_server else full,
                                       timeout_s=60, cache_enabled=False)
            gateway = Gateway(settings, KEY, usage_path=tmp_path / "usage.json", rng=random.Random(0))

            async def cut_off() -> None:
                call = asyncio.ensure_future(gateway.achat("a/b", MESSAGES, max_tokens=100))
                deadline = time.monotonic() + 20
                while not fake_openrouter.chat_requests() and reaches_server and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.5)
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
                await gateway.aclose()

            asyncio.run(cut_off())
    estimated = [r for r in gateway.ledger.records if r.estimated]
    assert len(estimated) == (1 if reaches_server else 0)
    assert len(fake_openrouter.chat_requests()) == (1 if reaches_server else 0)


CUT_IN_THE_THREAD = """
import asyncio, random, sys
from pathlib import Path
from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.types import GatewayError

async def main():
    for deadline in (0.001, 0.003, 0.01):
        settings = GatewaySettings(api_base=sys.argv[1], cache_enabled=False, timeout_s=deadline, max_retries=0,
                                   stream_timeout_s=deadline, stream_min_tokens=100)
        gateway = Gateway(settings, sys.argv[2], rng=random.Random(0))
        async def one(call):
            try:
                await call
            except GatewayError:
                pass
        await asyncio.gather(*[one(gateway.achat("a/b", [{"role": "user", "content": str(i)}],
                                                 max_tokens=200 if i % 2 else 10)) for i in range(40)])
        await gateway.aclose()

asyncio.run(main())
"""


def test_calls_cut_off_before_litellm_sent_them_leave_no_warning_on_stderr(fake_openrouter: FakeOpenRouter) -> None:
    """Deadlines so short that most attempts are cut off while litellm builds their request in its worker
    thread: the request coroutine it hands back is never awaited, and Python printed "coroutine
    'BaseLLMHTTPHandler.async_completion' was never awaited" (and a tracemalloc hint) on stderr for some,
    warnings shown or not. The gateway's litellm setup silences exactly those."""
    done = subprocess.run([sys.executable, "-W", "always::RuntimeWarning", "-c", CUT_IN_THE_THREAD,
                           fake_openrouter.base_url, KEY], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "never awaited" not in done.stderr and "tracemalloc" not in done.stderr
