"""A loopback HTTP server that speaks OpenRouter's wire protocol, scripted per test.

Why a real server: the gateway's behaviour that matters (retries on 429 with
``Retry-After``, timeouts, keep-alive pooling, bodies sent byte-for-byte, cost taken from
``usage.cost``) lives in the HTTP stack, so tests drive it over a socket rather than
patching litellm. Stdlib only, so it runs anywhere the package does.

Choosing the reply for a request (first match wins):

1. unknown path -> 404, non-POST -> 405, body not a JSON object -> 400 (never consumes a
   scripted reply, so client bugs surface instead of shifting the script);
2. ``server.handler(request)`` if set and it returns a :class:`Reply` (``None`` falls
   through, so a handler can inject faults and leave the rest to the queues);
3. the endpoint's own queue (``push_chat`` / ``push_completion``), then the shared
   ``push`` queue, both FIFO: "chat for the auditor, completions for the target" is two
   independent scripts;
4. ``server.default_reply``;
5. a 500 whose message says "no scripted reply", so a test that under-scripts sees why.

``GET /_fake/stats`` (not recorded, never scripted) answers ``{"connections_opened": n,
"requests": m}``: how many TCP connections clients opened and requests they sent so far,
so a benchmark can tell a client that reuses its connections from one that opens one per
call while the server runs in a process of its own.

Defaults a test can assert on: ``prompt_tokens``/``completion_tokens`` are
:func:`estimate_tokens` of the prompt (messages joined by newlines) and of the reply, and
``cost`` is :func:`fake_cost` of those tokens, unless the reply's ``usage`` overrides them.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import random
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from audit.errors import UserError, exit_on_user_error

FAKE_PROVIDER = "FakeProvider"
PROMPT_PRICE_PER_TOKEN = 1e-6
COMPLETION_PRICE_PER_TOKEN = 2e-6
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


def _content_text(content: Any) -> str:
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
    return "\n".join(_content_text(m.get("content")) for m in messages if isinstance(m, dict))


@dataclass(frozen=True)
class _Generation:
    """A successful model answer; its JSON depends on the request (model echo, token counts)."""

    kind: str
    text: str
    usage: Mapping[str, Any] | None
    finish_reason: str | None
    provider: str | None

    def payload(self, request: RecordedRequest) -> dict[str, Any]:
        override = dict(self.usage or {})
        prompt_tokens = override.get("prompt_tokens", estimate_tokens(prompt_text(request)))
        completion_tokens = override.get("completion_tokens", estimate_tokens(self.text))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": override.get("total_tokens", prompt_tokens + completion_tokens),
            "cost": override.get("cost", fake_cost(prompt_tokens, completion_tokens)),
        }
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": self.finish_reason,
            "native_finish_reason": self.finish_reason,
            "logprobs": None,
        }
        if self.kind == CHAT:
            choice["message"] = {"role": "assistant", "content": self.text}
        else:
            choice["text"] = self.text
        return {
            "id": f"gen-fake-{next(_generation_ids)}",
            "object": "chat.completion" if self.kind == CHAT else "text_completion",
            "created": int(time.time()),
            "model": (request.json or {}).get("model", ""),
            "provider": self.provider or FAKE_PROVIDER,
            "choices": [choice],
            "usage": usage,
        }


@dataclass(frozen=True)
class Reply:
    """What the server sends back; build one with the functions below rather than directly.

    ``body`` is a generated answer, a JSON object, or raw bytes sent as is. ``delay_s`` is
    waited before answering (on top of the server's ``latency_s``). ``truncate`` declares
    the full Content-Length, sends half the body and closes the connection. ``trickle_s``
    sends the body one byte at a time, that many seconds apart (a server that never stalls
    long enough for a read timeout). ``endless`` sends a chunked body that never ends, until
    the client hangs up.
    """

    status: int = 200
    body: _Generation | dict[str, Any] | bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/json"
    delay_s: float = 0.0
    truncate: bool = False
    trickle_s: float = 0.0
    endless: bool = False

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
) -> Reply:
    """A ``chat.completion`` answer; ``usage`` keys override the estimated counts and cost."""
    return Reply(body=_Generation(CHAT, content, usage, finish_reason, provider))


def completion_reply(
    text: str,
    *,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = "stop",
    provider: str | None = None,
) -> Reply:
    """A ``text_completion`` answer (``choices[0].text``), as /completions returns."""
    return Reply(body=_Generation(COMPLETION, text, usage, finish_reason, provider))


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
}
"""How a hostile or careless server can echo the key, as it appears inside a JSON string in the
raw body (``\\u002d`` is JSON's escape for ``-``; ``\\n`` a line break once decoded)."""


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
    return chat_reply(_content_text(last.get("content")))


def fixed_reply(text: str) -> Handler:
    """A handler answering every request with ``text`` in the shape of its endpoint."""
    return lambda request: completion_reply(text) if request.endpoint == COMPLETION else chat_reply(text)


Handler = Callable[[RecordedRequest], Reply | None]


class FakeOpenRouter:
    """The server; see the module docstring for how a reply is chosen.

    Use as a context manager (or ``start()``/``stop()``). Attributes a test may set at any
    time: ``handler``, ``default_reply``, ``latency_s`` (added before every reply).
    """

    def __init__(
        self,
        *,
        port: int = 0,
        latency_s: float = 0.0,
        handler: Handler | None = None,
        default_reply: Reply | None = None,
    ):
        self.handler = handler
        self.default_reply = default_reply
        self.latency_s = latency_s
        self._requested_port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._queues: dict[str | None, deque[Reply]] = {None: deque(), CHAT: deque(), COMPLETION: deque()}
        self._stopping = threading.Event()
        self.streamed_bytes = 0
        """Body bytes sent by ``endless`` replies so far (how much a client read before hanging up)."""
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeOpenRouter:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server(("127.0.0.1", self._requested_port), self)
        # stop() waits up to one poll interval; short, because every test starts and stops one.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-openrouter", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut open keep-alive connections so no handler thread lingers."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> FakeOpenRouter:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenRouter is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def env(self, api_key: str = TEST_API_KEY) -> dict[str, str]:
        """The variables that point a subprocess (``python -m audit ...``) at this server."""
        return {"OPENROUTER_API_KEY": api_key, "OPENROUTER_API_BASE": self.base_url}

    # -- scripting -------------------------------------------------------------------------
    def push(self, *replies: Reply) -> None:
        """Queue replies for any endpoint, used in order after the endpoint's own queue."""
        self._enqueue(None, replies)

    def push_chat(self, *replies: Reply) -> None:
        """Queue replies for /chat/completions only (e.g. the auditor's turns)."""
        self._enqueue(CHAT, replies)

    def push_completion(self, *replies: Reply) -> None:
        """Queue replies for /completions only (e.g. the audited model's samples)."""
        self._enqueue(COMPLETION, replies)

    def _enqueue(self, endpoint: str | None, replies: tuple[Reply, ...]) -> None:
        for reply in replies:
            if not isinstance(reply, Reply):
                raise TypeError(f"push() takes Reply objects (use chat_reply(...) etc.), got {type(reply).__name__}")
        with self._lock:
            self._queues[endpoint].extend(replies)

    @property
    def pending(self) -> int:
        """Queued replies not yet sent: lets a test assert its whole script was used."""
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def reset(self) -> None:
        """Forget recorded requests and all scripting (queues, handler, default, latency)."""
        with self._lock:
            self._requests.clear()
            for queue in self._queues.values():
                queue.clear()
        self.handler = None
        self.default_reply = None
        self.latency_s = 0.0

    # -- recording -------------------------------------------------------------------------
    @property
    def connections_opened(self) -> int:
        """TCP connections accepted since the server started (``reset`` keeps it)."""
        return self._httpd.connections_opened if self._httpd is not None else 0

    def stats(self) -> dict[str, int]:
        """What ``GET /_fake/stats`` answers."""
        with self._lock:
            requests = len(self._requests)
        return {"connections_opened": self.connections_opened, "requests": requests}

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.endpoint == CHAT]

    def completion_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.endpoint == COMPLETION]

    # -- serving (called from handler threads) ---------------------------------------------
    def _receive(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
        return self._choose(request)

    def _choose(self, request: RecordedRequest) -> Reply:
        if request.endpoint is None:
            return error_reply(404, f"No route for {request.method} {request.path}")
        if request.method != "POST":
            return error_reply(405, f"{request.path} only accepts POST, got {request.method}")
        if request.json is None:
            return error_reply(400, "Request body is not a JSON object")
        handler = self.handler
        if handler is not None:
            try:
                reply = handler(request)
            except Exception as exc:  # a test's handler bug must reach the test as a 500, not kill the thread
                return error_reply(500, f"fake_openrouter handler raised {type(exc).__name__}: {exc}")
            if isinstance(reply, Reply):
                return reply
            if reply is not None:
                return error_reply(500, f"fake_openrouter handler returned {type(reply).__name__}, not Reply or None")
        with self._lock:
            for key in (request.endpoint, None):
                if self._queues[key]:
                    return self._queues[key].popleft()
        if self.default_reply is not None:
            return self.default_reply
        return error_reply(
            500,
            f"fake_openrouter: no scripted reply for {request.method} {request.path} "
            "(push() a reply, or set handler or default_reply)",
        )

    def _wait(self, seconds: float) -> bool:
        """Sleep that ``stop()`` interrupts, so a slow reply never delays teardown.

        Returns whether the server is stopping.
        """
        if seconds > 0:
            return self._stopping.wait(seconds)
        return self._stopping.is_set()


class _Server(ThreadingHTTPServer):
    """Thread per connection, with a listen backlog large enough for benchmark bursts."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], fake: FakeOpenRouter):
        self.fake = fake
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        self.connections_opened = 0
        super().__init__(address, _RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
            self.connections_opened += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client hangs up (timeouts are a tested case); report the rest."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, which pooled clients (httpx, aiohttp) rely on
    disable_nagle_algorithm = True  # headers and body are two writes; avoid the 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silent: a line per request on stderr would dominate benchmark time."""

    def do_POST(self) -> None:
        self._serve()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_POST

    def _serve(self) -> None:
        fake = self.server.fake
        body = self._read_body()
        if self.path == STATS_PATH and self.command == "GET":
            self._write(200, "application/json", json.dumps(fake.stats()).encode(), ())
            return
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers=Headers(self.headers.items()),
            body=body,
            json=parsed if isinstance(parsed, dict) else None,
            received_at=time.monotonic(),
            client_port=self.client_address[1],
        )
        reply = fake._receive(request)
        if fake._wait(fake.latency_s + reply.delay_s):
            self.close_connection = True  # stopping: hang up rather than answer late
            return
        if reply.endless or reply.trickle_s:
            self._stream(reply, reply.render(request))
            return
        self._write(reply.status, reply.content_type, reply.render(request), reply.headers, truncate=reply.truncate)

    def _write(self, status: int, content_type: str, payload: bytes, headers: Iterable[tuple[str, str]], *,
               truncate: bool = False) -> None:
        self._head(status, content_type, headers, len(payload))
        if truncate:
            payload = payload[: len(payload) // 2]
            self.close_connection = True
        self.wfile.write(payload)

    def _head(self, status: int, content_type: str, headers: Iterable[tuple[str, str]], length: int | None) -> None:
        """Status line and headers; ``length`` None sends a chunked body."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def _stream(self, reply: Reply, payload: bytes) -> None:
        """A trickled or endless body, until it is sent, the client hangs up or the server stops."""
        fake = self.server.fake
        self.close_connection = True
        try:
            if reply.trickle_s:
                self._head(reply.status, reply.content_type, reply.headers, len(payload))
                for i in range(len(payload)):
                    self.wfile.write(payload[i:i + 1])
                    self.wfile.flush()
                    if fake._wait(reply.trickle_s):
                        return
                return
            self._head(reply.status, reply.content_type, reply.headers, None)
            filler = b" " * 65536
            for chunk in itertools.chain([payload], itertools.repeat(filler)):
                if fake._stopping.is_set():
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                with fake._lock:
                    fake.streamed_bytes += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            return

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes:
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # trailer fields, unused
        return b"".join(chunks)


def main(argv: list[str] | None = None) -> None:
    """Serve until Ctrl-C, for runs started by hand: by default it plays a whole scripted audit
    (auditor JSON, target text, judge labels) and answers epistemic cards YES/NO/UNKNOWN, so
    ``python -m audit`` and ``python -m audit.epistemic system=raw_llm`` complete against it;
    ``--echo`` answers every request with its own text, ``--reply TEXT`` with one fixed text
    (for poking at clients and for benchmarks)."""
    parser = argparse.ArgumentParser(prog="python -m audit.testing.fake_openrouter", description=main.__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before every reply")
    replies = parser.add_mutually_exclusive_group()
    replies.add_argument("--echo", action="store_true", help="echo requests instead of playing the scripted audit")
    replies.add_argument("--reply", help="answer every request with this text instead of playing the scripted audit")
    args = parser.parse_args(argv)
    if args.echo:
        handler: Handler = echo_reply
    elif args.reply is not None:
        handler = fixed_reply(args.reply)
    else:
        # Imported here: the script needs Hydra and the audit's prompts, this module only the stdlib.
        from audit.testing.scripted_audit import Script

        handler = Script().handler
    server = FakeOpenRouter(port=args.port, latency_s=args.latency, handler=handler)
    try:
        server.start()
    except OSError as exc:
        raise UserError(f"Cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); pick another --port, or 0.") from None
    print(server.base_url, flush=True)  # first line of stdout: scripts read the URL from it
    print(f"point a run at it: OPENROUTER_API_BASE={server.base_url} OPENROUTER_API_KEY={TEST_API_KEY} "
          "python -m audit max_iterations=3", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    # Run the importable module's main, not this __main__ copy: the script's replies are built with
    # the importable module's classes, which a second copy of this file would not recognise.
    from audit.testing import fake_openrouter

    exit_on_user_error(fake_openrouter.main)
