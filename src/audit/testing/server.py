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

``stream: true`` in a request makes a generation's reply Server-Sent Events, and every generation
served is billed in ``server.bills`` as OpenRouter bills it (:mod:`audit.testing.streaming`: a
streamed reply cut off by the client is billed for what was sent only at providers that stop on
cancellation; anything else whole). ``GET /api/v1/models`` (not recorded, never scripted) is
OpenRouter's "List available models": every model requested so far, priced as the fake price
list (:meth:`FakeOpenRouter.models_listing`: ``data[]`` with ``id``, ``pricing`` in USD per token
as strings, prompt-cache reads and writes included, ``context_length``, ``top_provider``).

``GET /_fake/stats`` (not recorded, never scripted) answers ``{"connections_opened": n,
"requests": m}``: how many TCP connections clients opened and requests they sent so far,
so a benchmark can tell a client that reuses its connections from one that opens one per
call while the server runs in a process of its own.
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
import time
from collections import deque
from urllib.parse import urlsplit
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from audit.testing import streaming
from audit.testing.replies import (
    CHAT,
    COMPLETION,
    CACHE_READ_PRICE_PER_TOKEN,
    CACHE_WRITE_PRICE_PER_TOKEN,
    COMPLETION_PRICE_PER_TOKEN,
    MODELS_PATHS,
    PROMPT_PRICE_PER_TOKEN,
    STATS_PATH,
    TEST_API_KEY,
    Handler,
    Headers,
    RecordedRequest,
    Reply,
    error_reply,
)


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
        self.bills: list[streaming.Bill] = []
        """What OpenRouter would charge for each generation served, in the order they ended."""
        self.listings = 0
        """``GET /models`` requests answered (the price list a client looks up)."""
        self.models_status = 200
        """The status ``GET /models`` answers with; any other than 200 is an error body (a failed list)."""
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
        """Forget recorded requests, bills and all scripting (queues, handler, default, latency)."""
        with self._lock:
            self._requests.clear()
            self.bills.clear()
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

    def models_listing(self) -> dict[str, Any]:
        """OpenRouter's model list as ``GET /models`` answers it: each model requested so far.

        The shape is OpenRouterTeam/docs ``guides/overview/models.mdx``, "Models API Standard": a root
        object with ``data``, ``total_count`` and ``links.next`` (null: not paginated), and per model a
        "Pricing Object" of USD per token as decimal strings (``prompt``, ``completion``, ``request``,
        ``image``, ``web_search``, ``internal_reasoning``, ``input_cache_read``, ``input_cache_write``).
        """
        with self._lock:
            self.listings += 1
            names = sorted({str(r.json.get("model")) for r in self._requests if r.json and r.json.get("model")})
        pricing = {"prompt": _decimal(PROMPT_PRICE_PER_TOKEN), "completion": _decimal(COMPLETION_PRICE_PER_TOKEN),
                   "request": "0", "image": "0", "web_search": "0", "internal_reasoning": "0",
                   "input_cache_read": _decimal(CACHE_READ_PRICE_PER_TOKEN),
                   "input_cache_write": _decimal(CACHE_WRITE_PRICE_PER_TOKEN)}
        return {"data": [{"id": name, "name": name, "created": 0, "context_length": 131072, "pricing": dict(pricing),
                          "top_provider": {"context_length": 131072, "max_completion_tokens": 16384,
                                           "is_moderated": False}} for name in names],
                "total_count": len(names), "links": {"next": None}}

    def _bill(self, bill: streaming.Bill) -> None:
        with self._lock:
            self.bills.append(bill)

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
        if urlsplit(self.path).path.rstrip("/") in MODELS_PATHS and self.command == "GET":
            if fake.models_status != 200:  # OpenRouter's error shape (API reference "Errors"), the key echoed back
                said = f"listing failed for {self.headers.get('Authorization', '')}"
                self._write(fake.models_status, "application/json",
                            json.dumps({"error": {"code": fake.models_status, "message": said}}).encode(), ())
                return
            self._write(200, "application/json", json.dumps(fake.models_listing()).encode(), ())
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
        if not reply.generation:
            self._write(reply.status, reply.content_type, reply.render(request), reply.headers,
                        truncate=reply.truncate)
            return
        payload = reply.body.payload(request)  # type: ignore[union-attr]
        if (request.json or {}).get("stream") is True:
            self._events(reply, payload, request.endpoint or CHAT)
            return
        # Generated whole before a byte is sent: billed whole, whether or not the client still listens.
        fake._bill(streaming.bill(payload, streamed=False, sent=None))
        self._write(reply.status, reply.content_type, json.dumps(payload).encode(), reply.headers,
                    truncate=reply.truncate)

    def _events(self, reply: Reply, payload: dict[str, Any], kind: str) -> None:
        """A generation as Server-Sent Events, ``reply.stream_interval_s`` apart, billed as sent."""
        fake = self.server.fake
        self.close_connection = True
        sent, whole, malformed = "", False, reply.stream_malformed
        try:
            self._head(200, "text/event-stream", reply.headers, None)
            self._chunk(streaming.KEEP_ALIVE)
            for event, piece in streaming.events(payload, kind):
                if fake._wait(reply.stream_interval_s):
                    break
                if event == streaming.DONE and not reply.stream_done:
                    whole = True  # every token and the usage were sent: billed whole
                    while not fake._wait(0.05):  # open and silent until the client or the server hangs up
                        self._chunk(streaming.KEEP_ALIVE_NOTHING)
                    break
                self._chunk(event)
                sent += piece
                if malformed and sent:  # after the first piece of text: the client has something to lose
                    self._chunk(streaming.MALFORMED)
                    malformed = False
            else:
                self._chunk(b"")
                whole = True
        except (BrokenPipeError, ConnectionResetError):
            pass
        fake._bill(streaming.bill(payload, streamed=True, sent=None if whole else sent))

    def _chunk(self, data: bytes) -> None:
        """One piece of a chunked body (an empty one ends it)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

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


def _decimal(price: float) -> str:
    """A per-token price as OpenRouter writes it: a plain decimal string (``"0.000001"``), no exponent."""
    return f"{price:.12f}".rstrip("0").rstrip(".")
