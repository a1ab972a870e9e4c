"""What the loopback OpenRouter answers with: recorded requests and the replies a test scripts.

Replies are data (:class:`Reply`) and handlers are functions of a :class:`RecordedRequest`,
so a test composes normal answers, faults (429, 5xx, truncated or garbage bodies) and hostile
ones (the key echoed in any encoding, JSON nested thousands deep, trickled or endless bodies)
without touching the server (:mod:`audit.testing.server`). Stdlib only.

Defaults a test can assert on: ``prompt_tokens``/``completion_tokens`` are
:func:`estimate_tokens` of the prompt (messages joined by newlines) and of the reply, and
``cost`` is :func:`fake_cost` of those tokens, unless the reply's ``usage`` overrides them.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

FAKE_PROVIDER = "FakeProvider"
PROMPT_PRICE_PER_TOKEN = 1e-6
COMPLETION_PRICE_PER_TOKEN = 2e-6
CACHE_READ_PRICE_PER_TOKEN = 1e-7
"""The model list's prompt-cache prices (a tenth and 1.25x the prompt price, as Anthropic's); the
fake bills every prompt token at the prompt price all the same (:func:`fake_cost`)."""
CACHE_WRITE_PRICE_PER_TOKEN = 1.25e-6
TEST_API_KEY = "test-key-123"

CHAT = "chat"
COMPLETION = "completion"
# The "/v1" spellings are what a vLLM-style base URL produces; accepting them is free.
_ENDPOINTS = {
    "/api/v1/chat/completions": CHAT,
    "/api/v1/completions": COMPLETION,
    "/v1/chat/completions": CHAT,
    "/v1/completions": COMPLETION,
}
_generation_ids = itertools.count(1)
STATS_PATH = "/_fake/stats"
MODELS_PATHS = ("/api/v1/models", "/v1/models")


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate (one token per 4 characters, rounded up)."""
    return (len(text) + 3) // 4


def fake_cost(prompt_tokens: int, completion_tokens: int) -> float:
    """The fake price list, so tests can check that the ledger sums ``usage.cost``."""
    return prompt_tokens * PROMPT_PRICE_PER_TOKEN + completion_tokens * COMPLETION_PRICE_PER_TOKEN


class Headers(Mapping[str, str]):
    """Read-only request headers with case-insensitive names (as HTTP defines them).

    Keys are stored lower-cased; a repeated header is joined with ", " (RFC 9110).
    """

    def __init__(self, items: Iterable[tuple[str, str]]):
        merged: dict[str, str] = {}
        for name, value in items:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
        self._items = merged

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it; ``body`` is the exact bytes sent.

    ``received_at`` is ``time.monotonic()``, for measuring gaps (backoff, concurrency);
    ``client_port`` identifies the TCP connection, for asserting keep-alive reuse.
    """

    method: str
    path: str
    headers: Headers
    body: bytes
    json: dict[str, Any] | None
    received_at: float
    client_port: int

    @property
    def endpoint(self) -> str | None:
        """``"chat"``, ``"completion"`` or ``None`` for a path the server does not serve."""
        return _ENDPOINTS.get(urlsplit(self.path).path.rstrip("/"))


def content_text(content: Any) -> str:
    """Text of a chat message's content, whether a string or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def prompt_text(request: RecordedRequest) -> str:
    """The text a request asks the model to continue: the prompt, or the joined messages."""
    body = request.json or {}
    if request.endpoint == COMPLETION:
        prompt = body.get("prompt", "")
        return prompt if isinstance(prompt, str) else "".join(p for p in prompt if isinstance(p, str))
    messages = body.get("messages") or []
    return "\n".join(content_text(m.get("content")) for m in messages if isinstance(m, dict))


@dataclass(frozen=True)
class _Generation:
    """A successful model answer; its JSON depends on the request (model echo, token counts)."""

    kind: str
    text: str
    usage: Mapping[str, Any] | None
    finish_reason: str | None
    provider: str | None
    native_finish_reason: str | None = None
    """What the provider said (OpenRouter normalises ``finish_reason``); default: ``finish_reason``."""
    reasoning: str | None = None
    """The ``reasoning`` field of a reasoning model's reply (chat: beside ``content``)."""
    reasoning_tokens: int = 0
    choice_error: Mapping[str, Any] | None = None
    """``choices[0].error``: OpenRouter's shape for a provider failing after generation started."""
    prompt_tokens_of: Callable[[RecordedRequest], int] | None = None
    """How many prompt tokens the request is billed (default: :func:`estimate_tokens` of its text)."""
    pipeline: tuple[Mapping[str, Any], ...] = ()
    """Stages of OpenRouter's pipeline that altered the request, in the routing metadata (router metadata guide)."""
    attempts: tuple[Mapping[str, Any], ...] = ()
    """The router's attempts before this reply, in the routing metadata when it fell back (router metadata guide)."""

    def payload(self, request: RecordedRequest) -> dict[str, Any]:
        override = dict(self.usage or {})
        billed = self.prompt_tokens_of(request) if self.prompt_tokens_of else estimate_tokens(prompt_text(request))
        prompt_tokens = override.get("prompt_tokens", billed)
        completion_tokens = override.get("completion_tokens",
                                         estimate_tokens(self.text) + self.reasoning_tokens)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": override.get("total_tokens", prompt_tokens + completion_tokens),
            "cost": override.get("cost", fake_cost(prompt_tokens, completion_tokens)),
        }
        for byok in ("is_byok", "cost_details"):  # BYOK usage (cookbook/administration/usage-accounting.mdx)
            if byok in override:
                usage[byok] = override[byok]
        if "prompt_tokens_details" in override:  # the prompt-cache counts (audit.testing.prompt_cache)
            usage["prompt_tokens_details"] = dict(override["prompt_tokens_details"])
        if self.reasoning_tokens:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": self.finish_reason,
            "native_finish_reason": self.native_finish_reason or self.finish_reason,
            "logprobs": None,
        }
        if self.choice_error is not None:
            choice["error"] = dict(self.choice_error)
        if self.kind == CHAT:
            choice["message"] = {"role": "assistant", "content": self.text}
            if self.reasoning is not None:
                choice["message"]["reasoning"] = self.reasoning
        else:
            choice["text"] = self.text
            if self.reasoning is not None:
                choice["reasoning"] = self.reasoning
        return {
            "id": f"gen-fake-{next(_generation_ids)}",
            "object": "chat.completion" if self.kind == CHAT else "text_completion",
            "created": int(time.time()),
            "model": (request.json or {}).get("model", ""),
            "provider": self.provider or FAKE_PROVIDER,
            "choices": [choice],
            "usage": usage,
            **({"openrouter_metadata": routing_metadata(request, self.provider or FAKE_PROVIDER, self.pipeline,
                                                        self.attempts)}
               if request.headers.get("x-openrouter-metadata", "").lower() == "enabled" else {}),
        }


def routing_metadata(request: RecordedRequest, provider: str, pipeline: tuple[Mapping[str, Any], ...] = (),
                     attempts: tuple[Mapping[str, Any], ...] = ()) -> dict[str, Any]:
    """``openrouter_metadata`` as OpenRouter adds it to a successful reply when the request sends
    ``X-OpenRouter-Metadata: enabled`` (docs: guides/features/router-metadata.mdx; fields as
    the SDK's ``OpenRouterMetadata``: attempt, endpoints, requested, strategy, summary, ``attempts``
    only when the router fell back, ``pipeline`` only when a stage altered the request)."""
    model = str((request.json or {}).get("model", ""))
    tried = [str(a.get("provider")) for a in attempts if a.get("provider") != provider]
    return {"attempt": max(1, len(attempts)),
            "endpoints": {"available": [*({"model": model, "provider": p, "selected": False} for p in tried),
                                        {"model": model, "provider": provider, "selected": True}],
                          "total": len(tried) + 1},
            "is_byok": False, "region": "iad", "requested": model, "strategy": "direct",
            "summary": f"available={len(tried) + 1}, selected={provider}",
            **({"attempts": [dict(a) for a in attempts]} if attempts else {}),
            **({"pipeline": [dict(stage) for stage in pipeline]} if pipeline else {})}


@dataclass(frozen=True)
class Reply:
    """What the server sends back; build one with the functions below rather than directly.

    ``body`` is a generated answer, a JSON object, or raw bytes sent as is. ``delay_s`` is
    waited before answering (on top of the server's ``latency_s``). ``truncate`` declares
    the full Content-Length, sends half the body and closes the connection. ``trickle_s``
    sends the body one byte at a time, that many seconds apart (a server that never stalls
    long enough for a read timeout). ``endless`` sends a chunked body that never ends, until
    the client hangs up. ``stream_interval_s`` is the pause between the events of a generation
    sent to a request with ``stream: true`` (:mod:`audit.testing.streaming`): a long generation.
    """

    status: int = 200
    body: _Generation | dict[str, Any] | bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/json"
    delay_s: float = 0.0
    truncate: bool = False
    trickle_s: float = 0.0
    endless: bool = False
    stream_interval_s: float = 0.0
    stream_done: bool = True
    """Whether a streamed generation ends with ``data: [DONE]``; False: after its last chunk (finish and
    usage sent) the stream stays open, sending nothing more, until the client hangs up."""
    stream_malformed: bool = False
    """Whether a streamed generation's second event is a ``data:`` line that is not JSON (a broken
    proxy or a cut-off write): every ``data:`` line OpenRouter sends is a JSON chunk or ``[DONE]``
    (API reference, "Streaming"), so a client must not read past it as if nothing was sent."""

    @property
    def generation(self) -> bool:
        """A model's answer (its JSON built per request, billable, streamable), not a fixed body."""
        return isinstance(self.body, _Generation) and self.status == 200

    def render(self, request: RecordedRequest) -> bytes:
        if isinstance(self.body, _Generation):
            return json.dumps(self.body.payload(request)).encode()
        if isinstance(self.body, dict):
            return json.dumps(self.body).encode()
        return self.body


def chat_reply(
    content: str,
    *,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = "stop",
    provider: str | None = None,
    **shape: Any,
) -> Reply:
    """A ``chat.completion`` answer; ``usage`` keys override the estimated counts and cost; ``shape``
    sets the other documented fields (``native_finish_reason``, ``reasoning``, ``choice_error`` ...)."""
    return Reply(body=_Generation(CHAT, content, usage, finish_reason, provider, **shape))


def completion_reply(
    text: str,
    *,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = "stop",
    provider: str | None = None,
    **shape: Any,
) -> Reply:
    """A ``text_completion`` answer (``choices[0].text``), as /completions returns (``shape`` as in
    :func:`chat_reply`)."""
    return Reply(body=_Generation(COMPLETION, text, usage, finish_reason, provider, **shape))


def json_reply(payload: dict[str, Any], *, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
    """Any JSON object verbatim, for shapes the builders do not cover (a missing ``usage``...)."""
    return Reply(status=status, body=payload, headers=tuple((headers or {}).items()))


def error_reply(
    status: int,
    message: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    code: int | str | None = None,
    metadata: Mapping[str, Any] | None = None,
    retry_after: float | None = None,
) -> Reply:
    """An error in OpenRouter's shape ``{"error": {"code", "message", "metadata"}}``.

    ``retry_after`` adds a ``Retry-After`` header (seconds), as OpenRouter sends with 429.
    """
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["Retry-After"] = f"{retry_after:g}"
    error = {
        "code": status if code is None else code,
        "message": message if message is not None else HTTPStatus(status).phrase,
        "metadata": dict(metadata or {}),
    }
    return json_reply({"error": error}, status=status, headers=all_headers)


def context_length_reply(limit: int = 163840, requested: int = 200000) -> Reply:
    """The 400 OpenRouter sends when prompt plus ``max_tokens`` exceed the model's window."""
    return error_reply(
        400,
        f"This endpoint's maximum context length is {limit} tokens. However, you requested "
        f"about {requested} tokens. Please reduce the length of either one, or use the "
        '"middle-out" transform to compress your prompt automatically.',
    )


def error_in_200(code: int = 502, message: str = "Provider returned error") -> Reply:
    """HTTP 200 whose body is an error object: OpenRouter's shape when a provider fails mid-generation."""
    return json_reply({"error": {"code": code, "message": message, "metadata": {}}}, status=200)


def no_choices(kind: str = CHAT) -> Reply:
    """A well-formed 200 with ``choices: []`` (a provider that returned nothing)."""
    return json_reply({"id": "gen-fake-empty", "object": "chat.completion" if kind == CHAT else "text_completion",
                       "created": int(time.time()), "model": "", "choices": []})


def key_echo(request: RecordedRequest, status: int = 401) -> Reply:
    """An error quoting the request's Authorization header back, as some proxies do."""
    return error_reply(status, f"Invalid credentials in header Authorization: {request.headers.get('authorization', '')}")


KEY_ENCODINGS: dict[str, Callable[[str], str]] = {
    "plain": lambda key: key,
    "json_escaped_dash": lambda key: key.replace("-", "\\u002d"),
    "json_escaped": lambda key: "".join(f"\\u{ord(c):04x}" for c in key),
    "json_escaped_upper": lambda key: "".join(f"\\u{ord(c):04X}" for c in key),
    "url": lambda key: "".join(f"%{b:02X}" for b in key.encode()),
    "html_entities": lambda key: "".join(f"&#{ord(c)};" for c in key),
    "base64_bearer": lambda key: base64.b64encode(f"Bearer {key}".encode()).decode(),
    "base64_key": lambda key: base64.b64encode(key.encode()).decode(),
    "split_across_lines": lambda key: key[: len(key) // 2] + "\\n  " + key[len(key) // 2:],
    "hex": lambda key: key.encode().hex(),
    "hex_bearer": lambda key: f"Bearer {key}".encode().hex().upper(),
    "url_double": lambda key: "".join(f"%25{b:02X}" for b in key.encode()),
    "backslash_x": lambda key: "".join(f"\\\\x{b:02x}" for b in key.encode()),
    "zero_width": lambda key: "\u200b".join(key),
    "bidi": lambda key: key[: len(key) // 2] + "\u202e\u2066" + key[len(key) // 2:],
    "fullwidth": lambda key: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in key),
    "reversed": lambda key: key[::-1],
    "half_masked": lambda key: "*" * (len(key) // 2) + key[len(key) // 2:],
    "hex_0x_list": lambda key: ", ".join(f"0x{b:02x}" for b in key.encode()),
    "base32": lambda key: base64.b32encode(key.encode()).decode(),
    "octal_escapes": lambda key: "".join(f"\\\\{b:03o}" for b in key.encode()),
    "unicode_braces": lambda key: "".join(f"\\\\u{{{ord(c):x}}}" for c in key),
    "utf16_hex": lambda key: key.encode("utf-16-be").hex(),
    "gzip_base64": lambda key: base64.b64encode(gzip.compress(key.encode(), mtime=0)).decode(),
}
"""How a hostile or careless server can echo the key, as it appears inside a JSON string in the
raw body (``\\u002d`` is JSON's escape for ``-``; ``\\n`` a line break once decoded; ``\\\\x74``
reads ``\\x74`` once decoded; ``\\\\164`` and ``\\\\u{74}`` read as an octal and a braced escape).
``half_masked`` is what is left when a proxy (or litellm) stars out the first half: the rest of a real
key is still a secret. The last six (a ``0x`` list, base32, octal and ``\\u{...}`` escapes, UTF-16 hex,
gzip in base64) are issue 39's: each gives the key back in one standard decoding step."""
REAL_SHAPED_KEY = "sk-or-v1-" + "0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b"
"""A key of OpenRouter's shape (``sk-or-v1-`` and 64 hex digits), for the echo tests: a piece of it
is as secret as the whole."""


def encoded_key_echo(encoding: str, status: int = 401) -> Callable[[RecordedRequest], Reply]:
    """A handler quoting the request's key back in an error, encoded as ``KEY_ENCODINGS[encoding]``.

    The body is built by hand: ``json.dumps`` would decode nothing and escape nothing the
    way a server's own serializer might, and the point is the exact bytes on the wire.
    """
    encode = KEY_ENCODINGS[encoding]

    def answer(request: RecordedRequest) -> Reply:
        key = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        body = (f'{{"error": {{"code": {status}, "message": "Invalid credentials ({encoding}): {encode(key)}", '
                '"metadata": {}}}')
        return Reply(status=status, body=body.encode())

    return answer


def encoded_key_in_text(encoding: str, kind: str) -> Callable[[RecordedRequest], Reply]:
    """A handler whose *model text* quotes the request's key (``KEY_ENCODINGS[encoding]``): a model
    that read it somewhere, whose words are cached, stored and shown to the next model."""
    encode = KEY_ENCODINGS[encoding]

    def answer(request: RecordedRequest) -> Reply:
        key = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        text = json.loads(f'"{encode(key)}"')  # the characters the model wrote
        return chat_reply(f"My notes say {text} here.") if kind == CHAT else completion_reply(f"see {text} ok")

    return answer


def nested_json(depth: int = 5000) -> str:
    """A model reply holding JSON nested ``depth`` levels deep (``json.loads`` recurses once per level)."""
    return '{"answer": ' + "[" * depth + "]" * depth + "}"


BROKEN_EMOJI = "\ud83d"
"""Half of an emoji: JSON ``"\ud83d"`` (a lone UTF-16 surrogate). ``chat_reply``/``completion_reply``
send any text containing it as exactly that escape."""


def faulty(handler: Handler, rate: float, faults: Iterable[Callable[[RecordedRequest], Reply]], *,
           seed: int = 0) -> Handler:
    """``handler`` with a share ``rate`` of requests answered by a fault instead, chosen by a seeded RNG.

    Faults rotate through ``faults`` (each called with the request), so a run meets every one.
    """
    rng = random.Random(seed)
    lock = threading.Lock()
    choices = itertools.cycle(list(faults))

    def answer(request: RecordedRequest) -> Reply | None:
        with lock:
            fault = next(choices) if rng.random() < rate else None
        return fault(request) if fault is not None else handler(request)

    return answer


class Hold:
    """``handler``, except that chosen requests stay unanswered until :meth:`release`.

    A test that must stop its client at an exact point (a SIGKILL between two steps, Ctrl-C
    with some answers saved) holds the request that follows that point: the client then
    waits right there with the held requests in flight, and :meth:`wait` says when that
    moment has come, with no sleeps. Requests matching ``matches`` are held from the one
    after the first ``skip`` of them on.
    """

    def __init__(self, handler: Handler, matches: Callable[[RecordedRequest], bool] = lambda request: True, *,
                 skip: int = 0):
        self.handler, self.matches, self.skip = handler, matches, skip
        self.held: list[RecordedRequest] = []
        self._seen = 0
        self._lock = threading.Lock()
        self._reached = threading.Event()
        self._released = threading.Event()

    def __call__(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            hit = self.matches(request)
            if hit:
                self._seen += 1
                hit = self._seen > self.skip and not self._released.is_set()
                if hit:
                    self.held.append(request)
        if hit:
            self._reached.set()
            self._released.wait()
        return self.handler(request)

    def wait(self, timeout_s: float = 60.0) -> bool:
        """Block until a request is held (False if none came within ``timeout_s``)."""
        return self._reached.wait(timeout_s)

    def release(self) -> None:
        """Answer the held requests and hold no more."""
        self._released.set()


def slow(seconds: float, reply: Reply) -> Reply:
    """``reply`` sent after ``seconds`` more delay (for client timeouts)."""
    return replace(reply, delay_s=reply.delay_s + seconds)


def truncated(reply: Reply) -> Reply:
    """``reply`` cut off mid-body: the connection closes before Content-Length bytes arrive."""
    return replace(reply, truncate=True)


def trickle(reply: Reply, interval_s: float = 1.0) -> Reply:
    """``reply`` with its body sent one byte every ``interval_s`` seconds."""
    return replace(reply, trickle_s=interval_s)


def endless_body() -> Reply:
    """A 200 whose chunked body starts like a reply and never ends (the server streams until the client hangs up)."""
    return Reply(body=b'{"id": "gen-endless", "choices": [{"message": {"content": "', endless=True)


def garbage(status: int = 200, body: bytes = b"<html><body>502 Bad Gateway</body></html>") -> Reply:
    """A non-JSON body, as a misbehaving proxy returns."""
    return Reply(status=status, body=body, content_type="text/html")


def echo_reply(request: RecordedRequest) -> Reply:
    """Answer with the request's own text (last chat message, or the prompt): a handler
    for manual experiments where any well-formed answer will do."""
    if request.endpoint == COMPLETION:
        return completion_reply(prompt_text(request))
    messages = (request.json or {}).get("messages") or [{}]
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    return chat_reply(content_text(last.get("content")))


def fixed_reply(text: str) -> Handler:
    """A handler answering every request with ``text`` in the shape of its endpoint."""
    return lambda request: completion_reply(text) if request.endpoint == COMPLETION else chat_reply(text)


Handler = Callable[[RecordedRequest], Reply | None]
