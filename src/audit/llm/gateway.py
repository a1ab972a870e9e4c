"""The model gateway: every model call in the project goes through :class:`Gateway`.

Two verbs: ``chat`` (auditor, judge, LLM systems; ``/chat/completions``) and ``complete``
(raw ``/completions`` with the prompt sent verbatim, for user-persona sampling). Each has
an async form (``achat``/``acomplete``) and a sync convenience. The gateway owns what
litellm does unreliably: retries (backoff with jitter, Retry-After), a persistent cache,
bounded concurrency and the cost ledger; litellm only moves the bytes (``backend.py``).
Identical requests in flight at once (same cache key) are sent once: the others await that
reply (single-flight; the ledger counts them as ``shared``); one in flight in another process
sharing the response cache (a sweep's jobs at once) is waited for and replayed from the cache.
A :class:`~audit.llm.budget.Budget` refuses new calls once a sweep's spending cap is reached.

:class:`Gateway` is the one gateway (named endpoints are configuration) and runs one call's steps
in order: cache, single flight, a slot, the attempts and their retries. Each job it hands off has
its own module: what a call sends and its cache key (``request``), the endpoints' keys and their
redactor (``keys``), pools and slots per event loop (``connections``), sharing identical requests
(``single_flight``), the ledger and the budget (``bookkeeping``), the reply as its caller gets it
(``caller_reply``) and the loop behind the sync verbs (``sync_loop``).
"""

from __future__ import annotations

import asyncio
import sys
import random
import time
from dataclasses import replace
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from audit.errors import drop_abandoned_call_warnings
from audit.llm import backend, prices, replies
from audit.llm import budget as budgets
from audit.llm.bookkeeping import Bookkeeper
from audit.llm.cache import ResponseCache
from audit.llm.caller_reply import caller_reply
from audit.llm.connections import Connections
from audit.llm.keys import EndpointKeys
from audit.llm.ledger import Ledger
from audit.llm.price_list import PriceList
from audit.llm.prices import Price
from audit.llm.prompt_cache import with_breakpoints
from audit.llm.request import attribution_headers, request_key, sampling, streams
from audit.llm.retry import RetryPolicy, is_retryable
from audit.llm.settings import DEFAULT_ENDPOINT, GatewaySettings
from audit.llm.single_flight import SingleFlight
from audit.llm.streamed import Received
from audit.llm.structured import check_mode
from audit.llm.sync_loop import SyncLoop
from audit.llm.types import Blocked, GatewayError, LLMResponse

T = TypeVar("T")
MESSAGE_CHARS = 500
"""A server's error text is kept to this many characters (after redaction)."""
CANCELLED = "cancelled: stopped in flight; the server had the request and may bill it"
"""The ledger's error for a call cut off by a stop (before, such calls were sent but never recorded)."""
PRICE_LOOKUP_S = 10.0
"""How long a call waits for the endpoint's model list (``GET /models``, its prices) before it is
recorded unpriced."""



async def within(seconds: float, call: Awaitable[T]) -> T:
    """``await call`` with a wall-clock deadline (``asyncio.TimeoutError`` past it).

    ``asyncio.timeout`` where Python has it (3.11+): ``asyncio.wait_for`` before 3.12 can swallow
    a cancellation that lands as the call finishes, so a Ctrl-C or SIGTERM during a run's last
    calls was lost and the run went on to finish.
    """
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await call
    return await asyncio.wait_for(call, seconds)

class Gateway:
    """Routes model calls to OpenRouter (or any OpenAI-compatible server) via litellm."""

    def __init__(self, settings: GatewaySettings, api_key: str | None, *, usage_path: Path | None = None,
                 rng: random.Random | None = None, keys: Mapping[str, str] | None = None, repeat: int = 0,
                 budget: budgets.Budget | None = None):
        """``api_key`` is the ``openrouter`` endpoint's key; ``keys`` those of other endpoints (by name).

        ``repeat`` is the run's sample index (``samples=k``): it enters every cache key, so each
        repeat of a cell is a fresh sample while re-running the same sweep is served from the cache.
        ``budget`` defaults to the process's active one (set by the job runner).
        """
        self.repeat = int(repeat)
        self.settings = settings
        self._keys = EndpointKeys(settings, {**({DEFAULT_ENDPOINT: api_key} if api_key else {}), **(keys or {})})
        self._books = Bookkeeper(budget if budget is not None else budgets.active(), usage_path)
        self.cache = ResponseCache(settings.cache_path, wal=settings.cache_wal,
                                   min_free_bytes=int(settings.cache_min_free_mb * 1e6)) \
            if settings.cache_enabled else None
        self.policy = RetryPolicy(settings.max_retries, settings.backoff_initial_s, settings.backoff_max_s)
        self._rng = rng or random.Random()
        self._connections = Connections(settings, self._keys)
        """One connection pool per event loop and endpoint, for the life of the gateway (closed by aclose)."""
        self._flights = SingleFlight(self.cache.inflight_dir if self.cache is not None else None)
        self._prices = PriceList()
        """Prices by endpoint and model, for the cost split and the estimates of cut-off calls."""
        self._sync = SyncLoop()
        self._headers = attribution_headers(settings)

    @classmethod
    def from_config(cls, node: Any, *, usage_path: Path | None = None,
                    endpoints: Sequence[str] = (DEFAULT_ENDPOINT,), repeat: int = 0) -> Gateway:
        """Build from the ``gateway`` config node for a run that calls ``endpoints``.

        Fails with a one-line UserError for an unknown endpoint or a missing key, before any
        call: only the keys of the endpoints in use are required.
        """
        settings = GatewaySettings.from_config(node)
        return cls(settings, None, usage_path=usage_path, keys=settings.keys_for(endpoints), repeat=repeat)

    def __repr__(self) -> str:  # never show the key
        return f"Gateway(api_base={self.settings.api_base!r}, cache={self.cache is not None})"

    # -- the two verbs -------------------------------------------------------------------

    async def achat(self, model: str, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None,
                    temperature: float | None = None, response_format: Mapping[str, Any] | None = None,
                    provider: Mapping[str, Any] | None = None, stop: Sequence[str] | None = None,
                    sample_index: int = 0, tag: str = "", endpoint: str = DEFAULT_ENDPOINT,
                    structured: str = "auto", extra_body: Mapping[str, Any] | None = None,
                    draw: str = "", cache_prefix: Sequence[int] = ()) -> LLMResponse:
        """Chat completion; ``response_format`` passes through verbatim (callers still parse the JSON).

        ``extra_body`` (e.g. ``{"reasoning": {"effort": "low"}}``) is merged into the request body
        for models that take more than the standard fields; it is part of the cache key.

        ``structured`` says what to do with ``response_format``: ``on`` sends it, ``off`` drops it,
        ``auto`` sends it and, when the server rejects it (a 400 that names the schema), sends that
        one call once more without; the reply then records ``structured_output: "rejected"``. ``draw`` names whose
        sample this is (e.g. ``"user_persona run/baseline"``): it enters the cache key, so runs that
        send the same request for different purposes get distinct draws, not one shared reply.
        ``cache_prefix`` names the messages that end a prefix later requests repeat: a model whose
        provider caches only at breakpoints gets one there (:mod:`audit.llm.prompt_cache`); the
        response-cache key is of the request without them.
        """
        check_mode(structured)
        payload: dict[str, Any] = {"messages": [dict(m) for m in messages]}
        if extra_body:
            payload["extra_body"] = dict(extra_body)
        call = dict(max_tokens=max_tokens, temperature=temperature, stop=stop, provider=provider,
                    sample_index=sample_index, tag=tag, endpoint=endpoint, draw=draw, cache_prefix=cache_prefix)
        if response_format is None or structured == "off":
            return await self._call(backend.CHAT_ROUTE, model, payload, **call)
        try:
            return await self._call(backend.CHAT_ROUTE, model, {**payload, "response_format": dict(response_format)},
                                    **call)
        except GatewayError as error:
            if structured != "auto" or not replies.refuses_schema(error):
                raise
        # Only this call goes without: a 400 naming response_format says nothing about the next one.
        return await self._call(backend.CHAT_ROUTE, model, payload, structured_output="rejected", **call)

    async def acomplete(self, model: str, prompt: str, *, stop: Sequence[str] = (), max_tokens: int | None = None,
                        temperature: float | None = None, provider: Mapping[str, Any] | None = None,
                        sample_index: int = 0, tag: str = "", endpoint: str = DEFAULT_ENDPOINT,
                        draw: str = "", extra_body: Mapping[str, Any] | None = None) -> LLMResponse:
        """Raw completion: ``prompt`` reaches ``/completions`` byte for byte; the reply is cut at ``stop``
        (``draw`` and ``extra_body`` as in :meth:`achat`)."""
        payload: dict[str, Any] = {"prompt": prompt, **({"extra_body": dict(extra_body)} if extra_body else {})}
        return await self._call(backend.COMPLETION_ROUTE, model, payload, max_tokens=max_tokens,
                                temperature=temperature, stop=stop, provider=provider,
                                sample_index=sample_index, tag=tag, endpoint=endpoint, draw=draw)

    def chat(self, *args: Any, **kwargs: Any) -> LLMResponse:
        """Synchronous :meth:`achat`."""
        return self._sync.run(self.achat(*args, **kwargs))

    def complete(self, *args: Any, **kwargs: Any) -> LLMResponse:
        """Synchronous :meth:`acomplete`."""
        return self._sync.run(self.acomplete(*args, **kwargs))

    def forget(self, *responses: LLMResponse) -> None:
        """Drop replies their caller could not use from the cache, so the same request is sent
        afresh next time: a resume must not replay the reply that made its turn fail."""
        if self.cache is not None:
            for response in responses:
                if response.cache_key is not None:
                    self.cache.delete(response.cache_key)

    def redact(self, text: str) -> str:
        """``text`` with the run's keys masked (a gateway worker's failure line goes through it)."""
        return self._keys.redact(text)

    # -- bookkeeping (audit.llm.bookkeeping) ---------------------------------------------

    @property
    def ledger(self) -> Ledger:
        return self._books.ledger

    @property
    def budget(self) -> budgets.Budget | None:
        return self._books.budget

    @property
    def usage_path(self) -> Path | None:
        return self._books.usage_path

    def record_usage_in(self, usage_path: Path) -> None:
        """Keep the ledger in ``usage_path`` (and its journal ``usage.jsonl``) from now on."""
        self._books.record_usage_in(usage_path)

    def write_usage(self) -> Path | None:
        """Write the ledger to ``usage_path`` (if one was given)."""
        return self._books.write_usage()

    @property
    def connections_opened(self) -> int:
        """TCP connections opened by the pools still open, for benchmarks and diagnostics."""
        return self._connections.opened

    async def aclose(self) -> None:
        """Close connection pools and the cache; call once at the end of a job."""
        await self._connections.aclose()
        await backend.close()
        self.ledger.close()
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def close(self) -> None:
        """Synchronous :meth:`aclose`; also stops the private loop used by the sync verbs."""
        self._sync.run(self.aclose())
        self._sync.stop()

    # -- one call: cache, single flight, slot, attempts ----------------------------------

    async def _call(self, route: str, model: str, payload: dict[str, Any], *, max_tokens: int | None,
                    temperature: float | None, stop: Sequence[str] | None, provider: Mapping[str, Any] | None,
                    sample_index: int, tag: str, endpoint: str, structured_output: str | None = None,
                    draw: str = "", cache_prefix: Sequence[int] = ()) -> LLMResponse:
        where = self.settings.endpoint(endpoint)
        api_base = where.api_base
        if structured_output is None and "response_format" in payload:
            structured_output = str(payload["response_format"].get("type"))
        stops = [s for s in (stop or ()) if s]
        params = sampling(max_tokens, temperature, stops)
        key = request_key(route, endpoint, where.identity or api_base, model, provider, payload, params,
                          sample_index=sample_index, repeat=self.repeat, draw=draw)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            response = LLMResponse.from_record(hit, key=key)
            self._books.served(tag, route, response)
            return response
        if (flight := self._flights.joined(key)) is not None:  # the same request is on its way: share its reply
            leader = await asyncio.shield(flight)  # a leader another process's reply was replayed to: a replay too
            response = replace(leader, cached=True, shared=not leader.cached)
            self._books.served(tag, route, response)
            return response
        self._flights.lead(key)
        try:
            async with self._flights.across_processes(key):  # waits while another process sends it
                if self.cache is not None and (hit := self.cache.get(key)) is not None:
                    response = LLMResponse.from_record(hit, key=key)
                else:
                    async with self._connections.slot():
                        # Checked when the call really starts, not before it queues for a slot: calls
                        # waiting behind a full pool must see what the calls ahead of them were charged.
                        self._books.check(f"{tag or route} call to {model}")
                        sent = {**payload, "messages": with_breakpoints(model, payload["messages"], cache_prefix)} \
                            if cache_prefix else payload
                        response = replace(await self._send(route, model, {**sent, **params}, provider, stops, tag,
                                                            endpoint, api_base, structured_output), cache_key=key)
                        self._books.charge(response.usage.cost)
                    if self.cache is not None:
                        self.cache.put(key, response.record())
        except BaseException as exc:
            self._flights.fail(key, exc)
            raise
        self._flights.land(key, response)
        self._books.served(tag, route, response)
        return response

    async def _send(self, route: str, model: str, payload: dict[str, Any], provider: Mapping[str, Any] | None,
                    stops: Sequence[str], tag: str, endpoint: str, api_base: str,
                    structured_output: str | None) -> LLMResponse:
        started = time.perf_counter()
        retries = 0
        streamed = streams(self.settings, route, payload.get("max_tokens"))
        deadline = self.settings.deadline_s(endpoint, streamed=streamed)
        where = dict(endpoint=endpoint, api_base=api_base, structured_output=structured_output)
        cut_off = dict(tag=tag, route=route, model=model, payload=payload, **where)
        while True:
            received = Received() if streamed else None
            attempt = backend.Attempt()
            try:
                # The attempt's wall-clock deadline: litellm's timeout is per read, so a server
                # trickling a byte a second kept one attempt alive for as long as it liked.
                raw = await within(deadline, backend.post(
                    route, model, payload, api_base=api_base, api_key=self._keys(endpoint),
                    timeout_s=deadline, headers=self._headers,
                    provider=dict(provider) if provider else None,
                    client=self._connections.pool(endpoint, api_base).client(route), received=received,
                    attempt=attempt))
                reply = replies.read_reply(route == backend.CHAT_ROUTE, raw)
                break
            except GatewayError as error:
                failure, retry_after = error, None
            except asyncio.CancelledError:  # Ctrl-C, SIGTERM, a budget stop: the request reached the server
                # The run is stopping: litellm's coroutine for this call may be freed unawaited at any
                # moment from now on, before the entrypoint's one line (the warning it would print is noise).
                drop_abandoned_call_warnings()
                if attempt.sent:  # no await here (the task is being cancelled): priced only if already known
                    self._books.cut_off(received, self._prices.known(endpoint, model), CANCELLED, started,
                                        retries, **cut_off)
                raise
            except asyncio.TimeoutError:  # the deadline above (litellm's own timeouts are classified below)
                what = self.settings.deadline_setting(endpoint, streamed=streamed)
                failure, retry_after = GatewayError("timeout", f"no whole reply within {deadline:g} s ({what})"
                                                    + ("" if attempt.sent else "; the request was never sent")), None
                if attempt.sent:  # one never written reached no server: nothing to bill
                    self._books.cut_off(received, await self._price(endpoint, api_base, model),
                                        f"aborted: cut off at the deadline ({deadline:g} s, {what})", started,
                                        retries, **cut_off)
            except Exception as exc:  # litellm raises many types; classify maps them all
                failure, retry_after = replies.stream_failure(exc, len(received.so_far)) \
                    if received is not None and received.chunks else replies.classify_failure(exc)
            if not is_retryable(failure.kind) or retries >= self.settings.max_retries:
                # The server's words leave the gateway here: masked now that every decoding step
                # is done, and only then cut to length (a cut first could leave half a key).
                said = self._keys.redact(str(failure.args[0]))[:MESSAGE_CHARS]
                self._books.failed(tag, route, model, str(GatewayError(failure.kind, said, status=failure.status)),
                                   started, retries, **where)
                hint = (f"; is a server running at {api_base}? Start one (docs/audit.md, 'your own GPU') "
                        f"or run with local=true" if endpoint != DEFAULT_ENDPOINT and _unreachable(failure) else "")
                raise GatewayError(failure.kind, f"{model} via {endpoint} ({api_base}): {said}{hint}",
                                   status=failure.status, retries=retries,
                                   blocked=_redacted(failure.blocked, self._keys.redact)) from None
            retries += 1
            await asyncio.sleep(self.policy.delay(retries, retry_after, self._rng))
        response = caller_reply(reply, model=model, stops=stops, redact=self._keys.redact, started=started,
                                retries=retries, **where)
        if not reply.usage.cost:  # nothing billed, nothing to split (and no list to fetch)
            return response
        try:
            price = await self._price(endpoint, api_base, model, reply.model)
        except asyncio.CancelledError:  # a stop during the first price lookup: the reply is billed, keep it
            self._books.served(tag, route, response)
            self._books.charge(response.usage.cost)
            raise
        return replace(response, usage=prices.split(reply.usage, price))

    async def _price(self, endpoint: str, api_base: str, model: str, served: str | None = None) -> Price | None:
        """The model's price (:mod:`audit.llm.price_list`): litellm's map, else the endpoint's model
        list (OpenRouter's ``GET /models``), fetched once; None where neither prices it (a local
        server lists no price) or the list does not come in time."""
        return await self._prices.price(endpoint, model, lambda: within(
            PRICE_LOOKUP_S, self._connections.listing(endpoint, api_base)), served=served)


def _unreachable(error: GatewayError) -> bool:
    """No server answered (litellm reports a refused connection on the raw route as a 500 "Connection error")."""
    return error.kind == "connection" or "connection error" in str(error.args[0]).lower()


def _redacted(blocked: Blocked | None, redact: Callable[[str], str]) -> Blocked | None:
    """A filter's block with the server's words in it (provider, reason) masked, as every text leaving the gateway."""
    if blocked is None:
        return None
    return replace(blocked, provider=redact(blocked.provider) if blocked.provider else None,
                   reason=redact(blocked.reason) if blocked.reason else None)
