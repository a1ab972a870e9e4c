"""The litellm boundary: the only module that imports litellm.

It knows litellm's routes and nothing about caching, retries, ledgers or what a reply
means (``replies.py``). Facts (docs/design.md, "The model gateway"; checked against litellm 1.106 on a loopback server):
``openrouter/<id>`` posts to ``/chat/completions``; raw completions need
``text-completion-openai/<id>`` with an explicit ``api_base`` (``openrouter/`` would wrap
the prompt as a chat message and destroy user-persona sampling); without an explicit
key that route falls back to OPENAI_API_KEY, so the key is always passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import json
import logging
import os
import ssl
import sys
import warnings
from types import ModuleType
from typing import Any

from audit.llm import streamed
from audit.llm.streamed import Received
from audit.llm.types import MalformedEvent, ReplyTooLarge

CHAT_ROUTE = "openrouter/"
COMPLETION_ROUTE = "text-completion-openai/"

_litellm: ModuleType | None = None
ABANDONED = (r"coroutine '(BaseLLMHTTPHandler\.(async_completion|acompletion_stream_function)"
             r"|OpenAITextCompletion\.(acompletion|async_streaming))' was never awaited")
"""The request coroutines litellm builds in a worker thread (``acompletion`` runs ``completion`` through
``run_in_executor``) and hands back to the loop: an attempt cut off (its deadline, a stop) while that
thread runs never awaits it, so it never sent its request, and Python reports it at collection
(``RuntimeWarning ... was never awaited``, with a tracemalloc hint) on the run's stderr."""


class Attempt:
    """Whether one attempt's request reached the server: its headers were written to the connection.

    An attempt cut off before that (waiting for a connection, a connect that never completes, a
    refusal) cost nothing and is not estimated as billed. The pool's trace hook marks the attempt
    of the task that writes the request (:data:`_ATTEMPT`, set by :func:`post`).
    """

    def __init__(self) -> None:
        self.sent = False


_ATTEMPT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar("audit_llm_attempt", default=None)


def litellm() -> ModuleType:
    """Import litellm once, offline and quiet.

    Without LITELLM_LOCAL_MODEL_COST_MAP the import fetches a price map from the internet
    (and hangs for seconds offline); without LITELLM_MODE=PRODUCTION it loads ``.env``
    files on its own.
    """
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
        import litellm as module

        # litellm logs every call at INFO; the gateway prints its own progress instead.
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
            logging.getLogger(name).setLevel(logging.WARNING)
        module.suppress_debug_info = True
        warnings.filterwarnings("ignore", message=ABANDONED, category=RuntimeWarning)
        module.drop_params = False
        # Clients litellm builds by itself use httpx, which closes cleanly when a job ends; the
        # gateway's own calls go through a :class:`Pool` it closes itself.
        module.disable_aiohttp_transport = True
        # litellm's import leaves about 400,000 objects tracked by the garbage collector (its price
        # map, pydantic models, the OpenAI SDK's types) that live until the process exits. Every
        # full collection walked them all again: about 0.3 s of CPU each, one every ~500 calls of a
        # sweep at 128 in flight, 3x the young collections' cost. Frozen (Python's documented
        # ``gc.freeze``), collections skip them; nothing made after this point is affected.
        gc.freeze()
        _litellm = module
    return _litellm


class Pool:
    """One endpoint's connections on one event loop, shared by both routes and sized to the concurrency.

    aiohttp underneath: httpx's own pool spends CPU that grows with the connections in
    flight (at 128 most of a call's CPU), and litellm's default client keeps only 20 idle
    connections, so above 20 calls in flight most calls opened a new TCP (and TLS)
    connection. Here one ``aiohttp.ClientSession`` (limit = the concurrency) carries every
    call to the endpoint: litellm's own aiohttp transport (``create_aiohttp_transport``,
    public in litellm) adapts it to the httpx interface that both litellm's chat handler and
    the OpenAI SDK take, with the session shared, not owned, so only :meth:`close` ends it.
    """

    def __init__(self, api_base: str, api_key: str, timeout_s: float, max_connections: int, max_reply_bytes: int):
        litellm()  # first: importing a litellm submodule imports litellm, which must be set up offline
        import aiohttp
        import certifi
        import httpx
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler
        from openai import AsyncOpenAI

        self.connections_opened = 0
        """TCP connections this pool opened (aiohttp's trace hook): at most the concurrency plus reconnects."""
        trace = aiohttp.TraceConfig()
        trace.on_connection_create_end.append(self._count_connection)
        trace.on_request_headers_sent.append(_mark_sent)
        # Certificates from certifi's bundle (or SSL_CERT_FILE), as httpx and litellm verify them:
        # aiohttp's default is the OS store, which some Python installs lack.
        verify = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE") or certifi.where())
        # No cookies: a server's Set-Cookie must not ride along on later calls (litellm's own client does the same).
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max_connections, limit_per_host=max_connections, ssl=verify),
            cookie_jar=aiohttp.DummyCookieJar(), trace_configs=[trace])
        transport = _capped(AsyncHTTPHandler.create_aiohttp_transport(shared_session=self.session), max_reply_bytes)
        self.chat = _single_attempt_handler()(timeout=timeout_s, transport=transport)
        # The raw-completions route: litellm would build a fresh SDK client per call otherwise.
        self.completion = AsyncOpenAI(api_key=api_key, base_url=api_base, max_retries=0, timeout=timeout_s,
                                      http_client=httpx.AsyncClient(transport=transport, timeout=timeout_s))

    def client(self, route: str) -> Any:
        """What ``post`` takes as ``client`` for ``route``."""
        return self.chat if route == CHAT_ROUTE else self.completion

    async def _count_connection(self, *_: Any) -> None:
        self.connections_opened += 1

    async def close(self) -> None:
        """Close both clients (neither owns the session), then the session and its connections."""
        await self.completion.close()
        await self.chat.close()
        await self.session.close()


async def _mark_sent(*_: Any) -> None:
    """aiohttp's hook once a request's headers are written: the running attempt reached the server."""
    if (attempt := _ATTEMPT.get()) is not None:
        attempt.sent = True


def _capped(transport: Any, max_bytes: int) -> Any:
    """``transport`` (httpx interface) with every response body cut off past ``max_bytes``.

    The cap sits at the transport the gateway builds, under both routes' clients: the body is
    counted as it streams in and the read fails with :class:`ReplyTooLarge` the moment it
    crosses the limit (or at once when Content-Length says it will), so an endless body costs
    at most ``max_bytes`` of memory and the connection is dropped.
    """
    import httpx

    class CappedStream(httpx.AsyncByteStream):
        def __init__(self, inner: Any):
            self._inner = inner

        async def __aiter__(self) -> Any:
            read = 0
            async for chunk in self._inner:
                read += len(chunk)
                if read > max_bytes:
                    raise ReplyTooLarge(f"reply body over {max_bytes:,} bytes (gateway.max_reply_bytes); cut off")
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    class CappedTransport(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:
            response = await transport.handle_async_request(request)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                await response.aclose()
                raise ReplyTooLarge(f"reply body of {int(declared):,} bytes, over {max_bytes:,} "
                                    "(gateway.max_reply_bytes)")
            response.stream = CappedStream(response.stream)
            return response

        async def aclose(self) -> None:
            await transport.aclose()

    return CappedTransport()


def _single_attempt_handler() -> type:
    """litellm's chat HTTP handler, made to never re-send a request by itself.

    litellm's handler posts once more on a fresh connection after a dropped or refused one,
    unseen by the ledger; the gateway owns every re-send (counted, backed off), so this
    handler lets that first failure through unchanged.
    """
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    class SingleAttempt(AsyncHTTPHandler):
        async def single_connection_post_request(self, *args: Any, **kwargs: Any) -> Any:
            # Called only from inside litellm's ``except`` for the failed attempt: re-raise that one.
            failure = sys.exc_info()[1]
            raise failure if failure is not None else RuntimeError("litellm asked to re-send outside an error")

    return SingleAttempt


_declared: set[str] = set()


def _declare_unpriced(route: str, model: str) -> None:
    """Tell litellm a model is priced at zero, once per route and model.

    litellm prices every reply; for a model missing from its map (every OpenRouter id) it
    tries its capability rules for each name it derives, about 0.85 ms of CPU per raw call
    (litellm 1.109) that caps a concurrent sweep. Cost comes from OpenRouter's ``usage.cost``
    (the ledger) instead, so an explicit zero entry under our route-prefixed name ends the
    search at once without shadowing any of its real entries. On the raw route every name
    litellm prices by resolves to this key: the route-prefixed id, and the reply's ``model``
    under the provider ``text-completion-openai`` (``tests/llm/test_backend.py``). The chat
    route's replies carry their cost already (litellm's OpenRouter handler reads ``usage.cost``).
    """
    name = route + model
    if name in _declared:
        return
    _declared.add(name)
    litellm().model_cost.setdefault(name, {
        "input_cost_per_token": 0.0,
        "output_cost_per_token": 0.0,
        "litellm_provider": "openrouter" if route == CHAT_ROUTE else "text-completion-openai",
        "mode": "chat" if route == CHAT_ROUTE else "completion",
    })


async def post(route: str, model: str, payload: dict[str, Any], *, api_base: str, api_key: str,
               timeout_s: float, headers: dict[str, str], provider: dict[str, Any] | None,
               client: Any = None, received: Received | None = None, attempt: Attempt | None = None) -> Any:
    """Send one request through litellm with its own retries off; raise litellm's exceptions.

    With ``received`` (chat route only) the request is streamed: each chunk goes into ``received``
    as it arrives (so a call cut off knows what it got) and the whole stream is returned as one
    reply. The chunks are taken from litellm's OpenRouter stream handler, not from the wrapper
    around it, which drops the last chunk's usage and cost and the native finish reason; the event
    lines are read here (:mod:`audit.llm.streamed`), so an event that is no chunk fails the attempt
    (:class:`MalformedEvent`) instead of being dropped as an empty one. ``attempt`` is marked sent
    once the request is written (on the gateway's pools).
    """
    _ATTEMPT.set(attempt)  # this task's context: the pool's trace hook reads it
    lib = litellm()
    common: dict[str, Any] = {
        "api_base": api_base,
        "api_key": api_key,
        "timeout": timeout_s,
        "max_retries": 0,
        "num_retries": 0,
        "extra_headers": headers,
    }
    _declare_unpriced(route, model)
    extra = dict(payload.get("extra_body") or {})  # a caller's extra request fields (reasoning effort, ...)
    payload = {k: v for k, v in payload.items() if k != "extra_body"}
    if provider:
        extra["provider"] = provider
    if extra:
        common["extra_body"] = extra
    if route == CHAT_ROUTE and received is not None:
        stream = await lib.acompletion(model=CHAT_ROUTE + model, client=client, stream=True, **payload, **common)
        handler = stream.completion_stream
        try:
            # aclosing: the line generator is closed here when the reading stops early (finished, [DONE], a
            # malformed event, a deadline), which releases httpx's chain of generators under it at once, their
            # closing run on this loop while it runs. Held instead by the failure's traceback, they were closed
            # by the collector later, as tasks on a loop that may have stopped by then: "Task was destroyed but
            # it is pending!" on stderr at the process's end.
            async with contextlib.aclosing(handler.streaming_response) as lines:
                async for line in lines:
                    data = streamed.event_data(line)
                    if data is None:
                        continue
                    if data.strip() == streamed.DONE:
                        break
                    received.add(_chunk(handler, streamed.chunk_json(data)))
                    if received.finished:
                        break
        finally:
            await handler.aclose()  # hang up now, not when the generator is collected
        return received.whole()
    if route == CHAT_ROUTE:
        return await lib.acompletion(model=CHAT_ROUTE + model, client=client, **payload, **common)
    return await lib.atext_completion(model=COMPLETION_ROUTE + model, client=client, **payload, **common)


def _chunk(handler: Any, event: dict[str, Any]) -> Any:
    """One event as litellm's OpenRouter stream handler reads it. An event with ``error`` raises the
    server's error (the streamed error finish, :func:`audit.llm.replies.stream_failure`); any other the
    handler cannot read is a :class:`MalformedEvent`, not litellm's 400 (which would not be retried)."""
    try:
        return handler.chunk_parser(event)
    except Exception as exc:  # noqa: BLE001 - whatever the handler raises, the event is not a chunk
        if "error" in event:
            raise
        raise MalformedEvent(f"a streamed event that is not a chunk ({type(exc).__name__}): "
                             f"{json.dumps(event)[:streamed.SHOWN_CHARS]}") from None


async def listing(pool: Pool, api_base: str, api_key: str, max_bytes: int) -> Any:
    """OpenRouter's "List available models" (``GET <api_base>/models``) as parsed JSON, or None when
    the server has no such list or it is unreadable (a local server; a list over ``max_bytes``).
    Not a model call, so not litellm's: one GET on the endpoint's own connections."""
    async with pool.session.get(f"{api_base}/models", headers={"Authorization": f"Bearer {api_key}"}) as answer:
        if answer.status != 200:
            return None
        body = await answer.content.read(max_bytes + 1)
    try:
        return json.loads(body) if len(body) <= max_bytes else None
    except ValueError:
        return None


async def close() -> None:
    """Release litellm's per-event-loop state at the end of a job.

    litellm caches HTTP clients and runs a logging worker on the loop that first used
    them; left alone they leak ("Unclosed client session") and, worse, a later job on a
    new loop would reuse clients bound to a closed one. So: close the clients, forget
    them, and stop the worker. Each step is looked up defensively because these are
    litellm internals that move between releases.
    """
    if _litellm is None:
        return
    closer = getattr(_litellm, "close_litellm_async_clients", None)
    if closer is not None:
        await closer()
    client_cache = getattr(_litellm, "in_memory_llm_clients_cache", None)
    if client_cache is not None and hasattr(client_cache, "flush_cache"):
        client_cache.flush_cache()
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER
    except ImportError:
        return
    # Drain queued logging work on this loop first: what is left behind is carried onto the
    # next loop that calls litellm (a second job in the same process) and piles up there.
    try:
        await asyncio.wait_for(GLOBAL_LOGGING_WORKER.flush(), timeout=5)
    except asyncio.TimeoutError:
        pass
    await GLOBAL_LOGGING_WORKER.stop()
