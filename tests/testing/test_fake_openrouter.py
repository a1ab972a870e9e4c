"""The loopback OpenRouter, driven with plain httpx (no litellm, no gateway)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest

from audit.errors import UserError
from audit.testing import documented
from audit.testing.fake_openrouter import main
from audit.testing.replies import COMPLETION, FAKE_PROVIDER, TEST_API_KEY, Hold, chat_reply, completion_reply, context_length_reply, error_reply, estimate_tokens, fake_cost, garbage, json_reply, slow, truncated
from audit.testing.server import FakeOpenRouter

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What happened in 1989?"}]


def chat(server: FakeOpenRouter, model: str = "deepseek/deepseek-chat", **kwargs) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", json={"model": model, "messages": MESSAGES}, **kwargs)


def complete(server: FakeOpenRouter, prompt: str = "<|User|>hi<|Assistant|>", model: str = "m/target") -> httpx.Response:
    return httpx.post(f"{server.base_url}/completions", json={"model": model, "prompt": prompt})


# -- reply kinds -----------------------------------------------------------------------------


def test_chat_reply_has_openrouter_shape_with_estimated_usage(fake_openrouter):
    fake_openrouter.push(chat_reply("It was a year of protests."))
    data = chat(fake_openrouter).json()

    assert data["object"] == "chat.completion"
    assert data["model"] == "deepseek/deepseek-chat"
    assert data["provider"] == FAKE_PROVIDER
    assert data["id"].startswith("gen-")
    assert isinstance(data["created"], int)
    (choice,) = data["choices"]
    assert choice["message"] == {"role": "assistant", "content": "It was a year of protests."}
    assert choice["finish_reason"] == "stop" and choice["index"] == 0
    prompt_tokens = estimate_tokens("Be brief.\nWhat happened in 1989?")
    completion_tokens = estimate_tokens("It was a year of protests.")
    assert data["usage"] == {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "cost": pytest.approx(fake_cost(prompt_tokens, completion_tokens)),
    }
    assert data["usage"]["cost"] > 0


@pytest.mark.parametrize("opted_in", [True, False])
def test_a_stream_carries_the_routing_metadata_on_its_final_chunk_when_asked(fake_openrouter, opted_in):
    """Router metadata guide: "For streaming responses, ``openrouter_metadata`` is delivered on the
    final chunk before ``data: [DONE]``", only when the request sends ``X-OpenRouter-Metadata: enabled``."""
    fake_openrouter.push(chat_reply("It was a year of protests.", provider="DeepInfra"))
    headers = {"X-OpenRouter-Metadata": "enabled"} if opted_in else {}
    body = {"model": "deepseek/deepseek-chat", "messages": MESSAGES, "stream": True}
    lines = httpx.post(f"{fake_openrouter.base_url}/chat/completions", json=body, headers=headers).text.splitlines()
    events = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    final = chunks[-1]
    assert final["usage"]["cost"] > 0 and all(c["provider"] == "DeepInfra" for c in chunks)
    assert not any("openrouter_metadata" in c for c in chunks[:-1])
    if opted_in:
        assert final["openrouter_metadata"]["summary"] == "available=1, selected=DeepInfra"
    else:
        assert "openrouter_metadata" not in final


def test_a_streamed_completion_is_documented_sse_that_the_openai_client_reads_back_whole(fake_openrouter):
    """``stream: true`` on /completions. API reference "Create a completion": "Supports both streaming
    and non-streaming modes", each choice with ``text``, ``logprobs``, ``finish_reason``,
    ``native_finish_reason`` and ``reasoning``; API overview, "CompletionsResponse format": "When
    streaming, usage is returned exactly once in the final chunk before the [DONE] message, with an
    empty choices array"; "Streaming" page: ``: OPENROUTER PROCESSING`` comments, which a client skips."""
    prompt = "<|User|>What happened in 1989?<|Assistant|>"
    text = "It was a year of protests, and of a crackdown."
    reply = completion_reply(text, finish_reason="length", native_finish_reason="max_tokens", provider="Novita",
                             reasoning="The user asks about 1989.", reasoning_tokens=7)
    fake_openrouter.push_completion(reply, reply)
    client = openai.OpenAI(api_key=TEST_API_KEY, base_url=fake_openrouter.base_url, max_retries=0)
    chunks = list(client.completions.create(model="m/target", prompt=prompt, stream=True))

    *parts, last = chunks
    assert {c.object for c in chunks} == {"text_completion"} and len({c.id for c in chunks}) == 1
    assert {c.provider for c in chunks} == {"Novita"} and {c.model for c in chunks} == {"m/target"}
    assert "".join(c.choices[0].text for c in parts) == text and len(parts) > 3  # a piece per chunk
    assert "".join(getattr(c.choices[0], "reasoning", None) or "" for c in parts) == "The user asks about 1989."
    assert all(c.choices[0].logprobs is None and c.usage is None for c in parts)
    assert [(c.choices[0].finish_reason, c.choices[0].native_finish_reason) for c in parts
            if c.choices[0].finish_reason] == [("length", "max_tokens")]
    assert last.choices == [] and last.usage.prompt_tokens == estimate_tokens(prompt)
    assert last.usage.completion_tokens == estimate_tokens(text) + 7 and last.usage.cost > 0
    assert last.usage.completion_tokens_details.reasoning_tokens == 7
    deadline = time.monotonic() + 30  # the server bills after its last write, which can follow the client's read
    while not fake_openrouter.bills and time.monotonic() < deadline:
        time.sleep(0.02)
    (bill,) = fake_openrouter.bills
    assert bill.streamed and not bill.aborted and bill.completion_tokens == last.usage.completion_tokens

    # on the wire: the keep-alive comment first, then data events only, [DONE] last
    body = {"model": "m/target", "prompt": prompt, "stream": True}
    raw = httpx.post(f"{fake_openrouter.base_url}/completions", json=body)
    assert raw.headers["content-type"] == "text/event-stream"
    events = [e for e in raw.text.split("\n\n") if e]
    assert events[0] == ": OPENROUTER PROCESSING" and events[-1] == "data: [DONE]"
    assert all(e.startswith("data: {") for e in events[1:-1]) and len(events) == len(chunks) + 2
    choices = [json.loads(e.removeprefix("data: "))["choices"] for e in events[1:-1]]
    assert all(c[0]["logprobs"] is None for c in choices[:-1]) and choices[-1] == []  # logprobs: required, null


def test_a_completion_stream_that_fails_midway_ends_with_the_documented_error_event(fake_openrouter):
    """"Streaming" page, "Errors After Tokens Have Been Sent": the error at the top level beside the
    chunk fields, ``finish_reason: "error"``, then the stream ends (no usage event, no ``[DONE]``)."""
    failing = documented.error_finish(COMPLETION, message="Provider disconnected")
    fake_openrouter.push_completion(failing, failing)
    client = openai.OpenAI(api_key=TEST_API_KEY, base_url=fake_openrouter.base_url, max_retries=0)
    received = []
    with pytest.raises(openai.APIError, match="Provider disconnected"):
        for chunk in client.completions.create(model="m/target", prompt="<|User|>hi<|Assistant|>", stream=True):
            received.append(chunk.choices[0].text)
    assert "".join(received) == "The square was cleared on the night of"
    raw = httpx.post(f"{fake_openrouter.base_url}/completions",
                     json={"model": "m/target", "prompt": "hi", "stream": True}).text
    last = json.loads(raw.strip().split("\n\n")[-1].removeprefix("data: "))
    assert last["error"] == {"code": "server_error", "message": "Provider disconnected"}
    assert last["choices"] == [{"index": 0, "finish_reason": "error", "native_finish_reason": "error", "text": "",
                                "logprobs": None}]
    assert "[DONE]" not in raw and '"usage"' not in raw


def test_completion_reply_has_text_and_counts_the_prompt(fake_openrouter):
    prompt = "<｜begin▁of▁sentence｜><｜User｜>天安门<｜Assistant｜>"
    fake_openrouter.push(completion_reply("I cannot", finish_reason="length", provider="Novita"))
    data = complete(fake_openrouter, prompt).json()

    assert data["object"] == "text_completion"
    assert data["model"] == "m/target" and data["provider"] == "Novita"
    assert data["choices"][0]["text"] == "I cannot"
    assert data["choices"][0]["finish_reason"] == "length"
    assert "message" not in data["choices"][0]
    assert data["usage"]["prompt_tokens"] == estimate_tokens(prompt)


def test_usage_override_keeps_cost_consistent_with_the_tokens_given(fake_openrouter):
    fake_openrouter.push(
        chat_reply("a", usage={"prompt_tokens": 1000, "completion_tokens": 10}),
        chat_reply("b", usage={"prompt_tokens": 3, "completion_tokens": 4, "cost": 0.5}),
    )
    first, second = chat(fake_openrouter).json()["usage"], chat(fake_openrouter).json()["usage"]

    assert first["total_tokens"] == 1010
    assert first["cost"] == pytest.approx(fake_cost(1000, 10))
    assert second == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7, "cost": 0.5}


def test_estimate_and_price_are_monotonic_and_nonzero():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 < estimate_tokens("abcde") == 2
    assert fake_cost(10, 0) < fake_cost(0, 10)  # output dearer than input, as on real price lists


@pytest.mark.parametrize("status", [400, 401, 404, 500, 502, 503])
def test_error_reply_uses_openrouter_error_shape(fake_openrouter, status):
    fake_openrouter.push(error_reply(status, "boom", metadata={"provider_name": "X"}))
    response = chat(fake_openrouter)

    assert response.status_code == status
    assert response.json() == {"error": {"code": status, "message": "boom", "metadata": {"provider_name": "X"}}}


def test_rate_limit_carries_retry_after_and_custom_code(fake_openrouter):
    fake_openrouter.push(
        error_reply(429, retry_after=2, code="rate_limited"),
        error_reply(429, headers={"X-RateLimit-Remaining": "0"}),
    )
    first, second = chat(fake_openrouter), chat(fake_openrouter)

    assert first.status_code == 429
    assert first.headers["retry-after"] == "2"
    assert first.json()["error"]["code"] == "rate_limited"
    assert first.json()["error"]["message"] == "Too Many Requests"
    assert "retry-after" not in second.headers
    assert second.headers["x-ratelimit-remaining"] == "0"


def test_context_length_reply_reads_like_openrouter(fake_openrouter):
    fake_openrouter.push(context_length_reply(limit=1000, requested=1500))
    response = chat(fake_openrouter)

    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "maximum context length is 1000 tokens" in message and "1500" in message


def test_slow_reply_trips_a_client_timeout_and_otherwise_arrives_late(fake_openrouter):
    fake_openrouter.push(slow(2.0, chat_reply("late")), slow(0.3, chat_reply("on time")))
    with pytest.raises(httpx.ReadTimeout):
        chat(fake_openrouter, timeout=0.2)

    started = time.monotonic()
    response = chat(fake_openrouter, timeout=5)
    assert time.monotonic() - started >= 0.3
    assert response.json()["choices"][0]["message"]["content"] == "on time"


def test_hold_keeps_chosen_requests_unanswered_until_released(fake_openrouter):
    hold = Hold(lambda request: chat_reply(request.json["model"]), lambda request: "held" in request.json["model"],
                skip=1)
    fake_openrouter.handler = hold
    assert chat(fake_openrouter, "a/held").json()["choices"][0]["message"]["content"] == "a/held"  # skipped
    answers: list[str] = []
    waiting = threading.Thread(target=lambda: answers.append(chat(fake_openrouter, "b/held", timeout=30).text))
    waiting.start()
    assert hold.wait(timeout_s=10) and [r.json["model"] for r in hold.held] == ["b/held"]
    assert chat(fake_openrouter, "c/free").status_code == 200  # others pass meanwhile
    assert waiting.is_alive() and not answers
    hold.release()
    waiting.join(timeout=10)
    assert "b/held" in answers[0]
    assert chat(fake_openrouter, "d/held").status_code == 200 and len(hold.held) == 1  # released: no more holds


def test_truncated_reply_breaks_the_read_then_the_server_still_serves(fake_openrouter):
    fake_openrouter.push(truncated(chat_reply("cut")), chat_reply("whole"))
    with httpx.Client() as client:
        url = f"{fake_openrouter.base_url}/chat/completions"
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(url, json={"model": "m", "messages": MESSAGES})
        assert client.post(url, json={"model": "m", "messages": MESSAGES}).json()["choices"][0]["message"]["content"] == "whole"
    first, second = fake_openrouter.requests
    assert first.client_port != second.client_port  # the cut connection was not reused


def test_garbage_reply_is_not_json(fake_openrouter):
    fake_openrouter.push(garbage(), garbage(status=502))
    ok, bad = chat(fake_openrouter), chat(fake_openrouter)

    assert ok.status_code == 200 and bad.status_code == 502
    assert ok.headers["content-type"].startswith("text/html")
    with pytest.raises(json.JSONDecodeError):
        json.loads(ok.content)


def test_json_reply_is_sent_verbatim(fake_openrouter):
    fake_openrouter.push(json_reply({"choices": []}, status=200, headers={"X-Test": "1"}))
    response = chat(fake_openrouter)
    assert response.json() == {"choices": []}
    assert response.headers["x-test"] == "1"


def test_latency_applies_to_every_reply(fake_openrouter):
    fake_openrouter.latency_s = 0.25
    fake_openrouter.push(chat_reply("a"))
    started = time.monotonic()
    assert httpx.get(f"{fake_openrouter.base_url}/embeddings").status_code == 404
    chat(fake_openrouter)
    assert time.monotonic() - started >= 0.5


# -- routing and scripting -------------------------------------------------------------------


def test_unknown_path_is_a_404_error_that_keeps_the_script(fake_openrouter):
    fake_openrouter.push(chat_reply("kept"))
    response = httpx.post(f"{fake_openrouter.base_url}/chat/completion", json={"model": "m"})

    assert response.status_code == 404
    assert response.json()["error"]["code"] == 404
    assert "/api/v1/chat/completion" in response.json()["error"]["message"]
    assert fake_openrouter.pending == 1
    assert [r.path for r in fake_openrouter.requests] == ["/api/v1/chat/completion"]


def test_client_mistakes_are_rejected_without_consuming_the_script(fake_openrouter):
    fake_openrouter.push(chat_reply("kept"))
    url = f"{fake_openrouter.base_url}/chat/completions"

    assert httpx.get(url).status_code == 405
    assert httpx.post(url, content=b"{not json").status_code == 400
    assert httpx.post(url, json=["a", "list"]).status_code == 400
    assert fake_openrouter.pending == 1


def test_v1_paths_without_api_prefix_are_served(fake_openrouter):
    fake_openrouter.push(completion_reply("ok"))
    url = f"http://127.0.0.1:{fake_openrouter.port}/v1/completions"
    assert httpx.post(url, json={"model": "m", "prompt": "p"}).json()["choices"][0]["text"] == "ok"


def test_unscripted_request_gets_a_500_naming_the_cause(fake_openrouter):
    response = chat(fake_openrouter)
    assert response.status_code == 500
    assert "no scripted reply" in response.json()["error"]["message"]


def test_default_reply_answers_whenever_the_queue_is_empty(fake_openrouter):
    fake_openrouter.default_reply = chat_reply("default")
    fake_openrouter.push(chat_reply("queued"))
    contents = [chat(fake_openrouter).json()["choices"][0]["message"]["content"] for _ in range(3)]
    assert contents == ["queued", "default", "default"]


def test_queue_is_fifo_and_endpoint_queues_come_first(fake_openrouter):
    fake_openrouter.push(chat_reply("shared-1"), chat_reply("shared-2"))
    fake_openrouter.push_chat(chat_reply("auditor-1"))
    fake_openrouter.push_completion(completion_reply("target-1"), completion_reply("target-2"))
    assert fake_openrouter.pending == 5

    def text(response: httpx.Response) -> str:
        choice = response.json()["choices"][0]
        return choice["message"]["content"] if "message" in choice else choice["text"]

    order = [
        text(complete(fake_openrouter)),
        text(chat(fake_openrouter)),
        text(chat(fake_openrouter)),
        text(complete(fake_openrouter)),
        text(chat(fake_openrouter)),
    ]
    assert order == ["target-1", "auditor-1", "shared-1", "target-2", "shared-2"]
    assert fake_openrouter.pending == 0


def test_push_rejects_non_replies(fake_openrouter):
    with pytest.raises(TypeError, match="chat_reply"):
        fake_openrouter.push({"choices": []})


def test_handler_scripts_logic_and_none_falls_through_to_the_queue(fake_openrouter):
    def handler(request):
        if request.json["model"] == "judge":
            return chat_reply(f"judged {len(request.json['messages'])} messages")
        return None

    fake_openrouter.handler = handler
    fake_openrouter.push(chat_reply("from queue"))

    assert chat(fake_openrouter, model="judge").json()["choices"][0]["message"]["content"] == "judged 2 messages"
    assert chat(fake_openrouter, model="other").json()["choices"][0]["message"]["content"] == "from queue"


def test_handler_bugs_reach_the_test_as_500s(fake_openrouter):
    fake_openrouter.handler = lambda request: request.json["missing"]
    response = chat(fake_openrouter)
    assert response.status_code == 500
    assert "KeyError" in response.json()["error"]["message"]

    fake_openrouter.handler = lambda request: {"not": "a Reply"}
    assert "not Reply" in chat(fake_openrouter).json()["error"]["message"]


# -- recording -------------------------------------------------------------------------------


def test_requests_are_recorded_byte_for_byte(fake_openrouter):
    prompt = "<｜begin▁of▁sentence｜><｜User｜>六四事件是什么？<｜Assistant｜>"
    body = json.dumps({"model": "deepseek/deepseek-r1", "prompt": prompt, "stop": ["<｜User｜>"]}, ensure_ascii=False)
    fake_openrouter.push(completion_reply("x"))
    before = time.monotonic()
    httpx.post(
        f"{fake_openrouter.base_url}/completions",
        content=body.encode("utf-8"),
        headers={"Authorization": "Bearer test-key-123", "Content-Type": "application/json"},
    )

    (request,) = fake_openrouter.requests
    assert request.method == "POST" and request.path == "/api/v1/completions"
    assert request.body == body.encode("utf-8")
    assert request.json["prompt"] == prompt
    assert request.headers["authorization"] == request.headers["AUTHORIZATION"] == "Bearer test-key-123"
    assert "Content-Type" in request.headers
    assert before <= request.received_at <= time.monotonic()
    assert request.endpoint == "completion"


def test_chunked_request_bodies_are_reassembled(fake_openrouter):
    fake_openrouter.push(chat_reply("ok"))
    payload = json.dumps({"model": "m", "messages": MESSAGES}).encode()
    parts = (payload[i : i + 7] for i in range(0, len(payload), 7))
    response = httpx.post(f"{fake_openrouter.base_url}/chat/completions", content=parts)

    assert response.status_code == 200
    assert fake_openrouter.requests[0].headers["transfer-encoding"] == "chunked"
    assert fake_openrouter.requests[0].body == payload


def test_requests_split_by_endpoint_and_reset_forgets_everything(fake_openrouter):
    fake_openrouter.default_reply = chat_reply("d")
    fake_openrouter.push(chat_reply("left over"))
    complete(fake_openrouter)
    chat(fake_openrouter, model="a")
    chat(fake_openrouter, model="b")

    assert [r.json["model"] for r in fake_openrouter.chat_requests()] == ["a", "b"]
    assert [r.json["model"] for r in fake_openrouter.completion_requests()] == ["m/target"]

    fake_openrouter.push(chat_reply("never sent"))
    fake_openrouter.latency_s = 5
    fake_openrouter.reset()
    assert fake_openrouter.requests == [] and fake_openrouter.pending == 0
    assert "no scripted reply" in chat(fake_openrouter, timeout=2).json()["error"]["message"]


# -- connections and lifecycle ---------------------------------------------------------------


def test_keep_alive_reuses_one_connection(fake_openrouter):
    fake_openrouter.default_reply = chat_reply("same")
    with httpx.Client(base_url=fake_openrouter.base_url) as client:
        for _ in range(5):
            assert client.post("/chat/completions", json={"model": "m", "messages": MESSAGES}).status_code == 200
    assert len({r.client_port for r in fake_openrouter.requests}) == 1


def test_connections_are_counted_per_tcp_connection_and_served_as_stats(fake_openrouter):
    fake_openrouter.default_reply = chat_reply("same")
    with httpx.Client(base_url=fake_openrouter.base_url) as client:
        for _ in range(3):
            client.post("/chat/completions", json={"model": "m", "messages": MESSAGES})
    for _ in range(2):  # a fresh connection each
        httpx.post(f"{fake_openrouter.base_url}/completions", json={"model": "m", "prompt": "p"})
    stats_url = f"http://127.0.0.1:{fake_openrouter.port}/_fake/stats"
    stats = httpx.get(stats_url).json()
    assert stats == {"connections_opened": 4, "requests": 5}  # the stats request's own connection counts, not its request
    assert fake_openrouter.connections_opened == 4 and len(fake_openrouter.requests) == 5


def test_64_concurrent_requests_overlap(fake_openrouter):
    fake_openrouter.latency_s = 0.2
    fake_openrouter.default_reply = chat_reply("parallel")

    async def burst() -> list[int]:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(base_url=fake_openrouter.base_url, limits=limits, timeout=10) as client:
            body = {"model": "m", "messages": MESSAGES}
            responses = await asyncio.gather(*(client.post("/chat/completions", json=body) for _ in range(64)))
        return [r.status_code for r in responses]

    started = time.monotonic()
    statuses = asyncio.run(burst())
    elapsed = time.monotonic() - started

    assert statuses == [200] * 64
    assert elapsed < 3.0  # serial would take 64 x 0.2 s = 12.8 s
    assert len({r.client_port for r in fake_openrouter.requests}) > 32  # genuinely parallel connections


def test_stop_is_prompt_with_idle_and_busy_connections():
    server = FakeOpenRouter().start()
    server.push(chat_reply("quick"), slow(30, chat_reply("never")))
    idle = httpx.Client(base_url=server.base_url)
    idle.post("/chat/completions", json={"model": "m", "messages": MESSAGES})  # leaves a keep-alive connection

    outcome: list[BaseException] = []

    def busy() -> None:
        try:
            httpx.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": MESSAGES}, timeout=60)
        except httpx.TransportError as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=busy)
    waiter.start()
    while len(server.requests) < 2:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    waiter.join(timeout=5)
    idle.close()

    assert time.monotonic() - started < 2
    assert not waiter.is_alive()
    assert len(outcome) == 1  # the slow request was hung up on, not answered
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url


def test_env_points_a_subprocess_at_the_server(fake_openrouter):
    env = fake_openrouter.env()
    assert env["OPENROUTER_API_BASE"] == fake_openrouter.base_url
    assert env["OPENROUTER_API_KEY"] == "test-key-123"
    assert fake_openrouter.base_url == f"http://127.0.0.1:{fake_openrouter.port}/api/v1"


def test_standalone_server_echoes_and_prints_its_base_url(tmp_path):
    command = [sys.executable, "-m", "audit.testing.fake_openrouter", "--latency", "0", "--echo"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=tmp_path) as process:
        try:
            base_url = process.stdout.readline().strip()
            assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/api/v1")
            chat_data = httpx.post(f"{base_url}/chat/completions", json={"model": "m", "messages": MESSAGES}).json()
            text_data = httpx.post(f"{base_url}/completions", json={"model": "m", "prompt": "echo me"}).json()
            stats = httpx.get(base_url.removesuffix("/api/v1") + "/_fake/stats").json()
        finally:
            process.terminate()
    assert chat_data["choices"][0]["message"]["content"] == "What happened in 1989?"
    assert text_data["choices"][0]["text"] == "echo me"
    assert stats == {"connections_opened": 3, "requests": 2}  # what a benchmark in another process reads


def test_standalone_server_can_answer_one_fixed_text_on_both_endpoints(tmp_path):
    command = [sys.executable, "-m", "audit.testing.fake_openrouter", "--reply", '{"answer": "YES"}']
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=tmp_path) as process:
        try:
            base_url = process.stdout.readline().strip()
            chat_data = httpx.post(f"{base_url}/chat/completions", json={"model": "m", "messages": MESSAGES}).json()
            text_data = httpx.post(f"{base_url}/completions", json={"model": "m", "prompt": "p"}).json()
        finally:
            process.terminate()
    assert chat_data["choices"][0]["message"]["content"] == text_data["choices"][0]["text"] == '{"answer": "YES"}'


def test_standalone_server_reports_a_busy_port_in_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(UserError, match="--port"):
            main(["--port", str(taken.getsockname()[1])])
