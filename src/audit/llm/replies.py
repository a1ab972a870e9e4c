"""The one place that decides what a server's reply means, for both routes.

A reply is either a generation (text, finish reason, usage) or a :class:`GatewayError` of
a kind the retry policy understands. Shapes that look like success but are not become
errors here, never an empty answer: an error object inside an HTTP 200 (OpenRouter's shape
when a provider fails mid-generation, ``{"error": {"code": 502, ...}}``), a choice with
``finish_reason: "error"`` and partial text (``error_finish``), ``choices: []``, a body without
any text or finish reason ("no content generated": ``empty``), an empty or non-UTF-8 body. A
generation also gets its :func:`outcome_of` (an answer, or an empty, reasoning-only or filtered
draw), and a failure the kind OpenRouter's body tells (:func:`refine_kind`: ``model_not_found``,
``payment``, ``moderation``, ``region``, ``routing``; :func:`refuses_schema`). Every text that
leaves this module is sanitised (lone UTF-16 surrogates replaced, so no JSON writer, cache
or report chokes on half an emoji) and fully decoded (the server's JSON parsed, its escapes
resolved). Redaction is not done here but by the gateway, on the text that leaves it: a
key the server echoed JSON-escaped only becomes the key after this module decodes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from audit import model_json
from audit.llm.retry import parse_retry_after
from audit.llm.types import BLOCKING_KINDS, Blocked, GatewayError, MalformedEvent, ReplyTooLarge, Usage

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")

def sanitize(text: str) -> tuple[str, int]:
    """``text`` with lone UTF-16 surrogates replaced by U+FFFD, and how many were replaced.

    JSON allows ``"\\ud83d"`` on its own (an emoji cut in half by a token boundary); Python
    decodes it to a str that cannot be encoded as UTF-8, so it is replaced where it enters.
    """
    count = len(_SURROGATE.findall(text))
    return (_SURROGATE.sub(REPLACEMENT, text), count) if count else (text, 0)


@dataclass(frozen=True)
class Generation:
    """A reply the model actually produced; ``replaced`` counts lone surrogates replaced in it.

    ``reasoning`` is the text of OpenRouter's ``reasoning`` field (chat route), kept only to tell
    a reasoning-only reply from an empty one; the rest is where the draw came from.
    """

    text: str
    finish_reason: str | None
    usage: Usage
    model: str
    provider: str | None
    replaced: int = 0
    native_finish_reason: str | None = None
    reasoning: str = ""
    reasoning_tokens: int = 0
    generation_id: str | None = None
    routing: dict[str, Any] | None = None


def field_of(obj: Any, name: str) -> Any:
    """``obj.name`` or ``obj[name]``: litellm gives objects, with OpenRouter's extra fields as
    attributes or (after a round trip) plain dicts."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _choice_field(choice: Any, name: str) -> Any:
    """An OpenRouter field of a choice: litellm keeps it on the choice (raw route) or moves it
    into ``provider_specific_fields`` (chat route: ``error``, ``native_finish_reason``)."""
    value = field_of(choice, name)
    return value if value is not None else field_of(field_of(choice, "provider_specific_fields") or {}, name)


def read_reply(route_is_chat: bool, response: Any) -> Generation:
    """The generation in a parsed response object, or the retryable error it really is.

    Shapes OpenRouter documents (API reference, "Responses"; errors guide, "Error Handling"):
    an error before generation is an HTTP error; one after generation started is HTTP 200 with
    ``{"error": {...}}`` at the top, or with ``finish_reason: "error"`` and ``choices[0].error``
    beside the partial text: both are ``error_finish``/``server`` failures, never an answer.
    A body with no text and no finish reason is "no content generated" (the guide: retry).
    """
    error = field_of(response, "error")
    if error:
        status = field_of(error, "code")
        status = status if isinstance(status, int) else field_of(error, "http_status")  # availability errors
        message = field_of(error, "message") or error
        status = status if isinstance(status, int) else None
        body = error if isinstance(error, dict) else None
        kind = refine_kind(_kind_of_status(status) if status else "server", str(message), body)
        blocked = block_of(kind, sanitize(str(message))[0], body)
        raise GatewayError(kind, f"error object in a 200 reply: {blocked or sanitize(str(message))[0]}"
                                 f"{availability_note(body)}", status=status, blocked=blocked)
    try:
        choice = response.choices[0]
        text = choice.message.content if route_is_chat else choice.text
    except (AttributeError, IndexError, TypeError, KeyError):
        raise GatewayError("bad_response", "reply has no choices (empty \"choices\" or none at all)") from None
    # litellm reports OpenRouter's finish_reason "error" as "stop"; the native reason and the
    # choice's error object survive it.
    finish = field_of(choice, "finish_reason")
    native = _choice_field(choice, "native_finish_reason")
    choice_error = _choice_field(choice, "error")
    if finish == "error" or native == "error" or choice_error:
        said = field_of(choice_error, "message") if choice_error else None
        raise GatewayError("error_finish", f"finish_reason \"error\" after {len(text or '')} characters of text"
                           + (f": {sanitize(str(said))[0]}" if said else ""))
    reasoning = (field_of(choice.message, "reasoning_content") or _choice_field(choice.message, "reasoning")
                 if route_is_chat else _choice_field(choice, "reasoning"))
    # On the chat route litellm reports a null finish reason as "stop"; OpenRouter's native one
    # (on every choice it sends) still says the provider gave none.
    stated = finish if not route_is_chat or native is not None else None
    if not text and not reasoning and stated is None:
        raise GatewayError("empty", "no content generated (empty text, no finish reason)")
    text, replaced = sanitize(text or "")
    usage = field_of(response, "usage")
    cost = float(field_of(usage, "cost") or 0.0) if usage is not None else 0.0
    upstream = _byok_upstream_cost(usage)
    details = field_of(usage, "completion_tokens_details") if usage is not None else None
    prompt_details = field_of(usage, "prompt_tokens_details") if usage is not None else None
    return Generation(
        text=text,
        finish_reason=finish,
        usage=Usage(
            prompt_tokens=int(field_of(usage, "prompt_tokens") or 0) if usage is not None else 0,
            completion_tokens=int(field_of(usage, "completion_tokens") or 0) if usage is not None else 0,
            cost=cost + upstream if upstream is not None else cost,
            upstream_cost=upstream or 0.0,
            byok_calls=int(upstream is not None),
            # OpenRouter's prompt-cache counts (guides/best-practices/prompt-caching.mdx, "Usage object fields")
            cached_prompt_tokens=int(field_of(prompt_details, "cached_tokens") or 0),
            cache_write_tokens=int(field_of(prompt_details, "cache_write_tokens") or 0),
        ),
        model=sanitize(str(field_of(response, "model") or ""))[0],
        provider=field_of(response, "provider"),
        replaced=replaced,
        native_finish_reason=str(native) if native is not None else None,
        reasoning=sanitize(str(reasoning or ""))[0],
        reasoning_tokens=int(field_of(details, "reasoning_tokens") or 0) if details is not None else 0,
        generation_id=str(field_of(response, "id")) if field_of(response, "id") else None,
        routing=_routing(response),
    )


def _byok_upstream_cost(usage: Any) -> float | None:
    """What the provider billed on the user's own key, when the call was BYOK; None otherwise.

    OpenRouter's usage-accounting guide ("Cost Breakdown"): ``cost`` is what OpenRouter charged,
    ``cost_details.upstream_inference_cost`` what the upstream provider charged, a field that applies
    to BYOK requests only (0 or null for the others); the usage object says ``is_byok``. A reply that
    says ``is_byok: false`` is not BYOK whatever the field holds: its ``cost`` is the whole bill.
    """
    if usage is None:
        return None
    is_byok = field_of(usage, "is_byok")
    details = field_of(usage, "cost_details")
    upstream = field_of(details, "upstream_inference_cost") if details is not None else None
    try:
        upstream = float(upstream) if upstream is not None else None
    except (TypeError, ValueError):
        upstream = None
    if is_byok is True:
        return max(upstream or 0.0, 0.0)
    if is_byok is None and upstream:
        return max(upstream, 0.0)
    return None


def _routing(response: Any) -> dict[str, Any] | None:
    """OpenRouter's routing metadata of a reply, as plain JSON (None when the server sent none)."""
    value = field_of(response, "openrouter_metadata")
    if value is None:
        return None
    dump = getattr(value, "model_dump", None)
    value = dump() if dump is not None else value
    return value if isinstance(value, dict) else None


def outcome_of(text: str, finish_reason: str | None, reasoning: str, reasoning_tokens: int) -> str:
    """What a reply's text is, once cut at the caller's stops: an ``answer`` to judge or one of
    the outcomes that are no answer and must never be judged (an empty draw is not a refusal).

    ``content_filter`` (the provider's filter cut the text) is kept with its text: in a censorship
    audit the filter is what is being measured, and the words up to the cut are the model's. A
    ``content_filter`` finish with no text at all is ``blocked``, the 200 form of a
    filter's typed 400: the filter withheld the whole answer, and judging the empty text would count
    the filter as the model's refusal.
    """
    if finish_reason == "content_filter":
        return "content_filter" if text.strip() else "blocked"
    if text.strip():
        return "answer"
    return "reasoning_only" if (reasoning or reasoning_tokens) else "empty"


_CONTEXT_HINTS = ("context length", "context_length", "maximum context", "too many tokens", "context window")

_WRAPPING = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+Error:\s*)?(?:\w+Exception\s*-\s*)?(?:Error code: \d+\s*-\s*)?")


def error_body(text: str) -> tuple[str, dict[str, Any] | None]:
    """The exception text on one line without litellm's wrapping, and the server's ``error`` object in it.

    litellm wraps the server's words (``litellm.AuthenticationError: AuthenticationError:
    OpenrouterException - {"error": {"message": ...}}``; the raw-completion route, through the
    OpenAI SDK, shows a Python dict instead of JSON).
    """
    text = _WRAPPING.sub("", " ".join(text.split()))
    body = text[text.find("{"):] if "{" in text else ""
    for parse in (model_json.loads, model_json.python_literal):  # size and depth checked before decoding
        try:
            error = parse(body).get("error")
        except (ValueError, SyntaxError, AttributeError, MemoryError, RecursionError):
            continue
        return text, error if isinstance(error, dict) else None
    return text, None


def provider_message(text: str) -> str:
    """The server's own words from a litellm exception text, on one line, decoded (not yet redacted):
    the ``message`` and any ``metadata.raw`` the upstream provider sent, not litellm's wrapping."""
    text, error = error_body(text)
    if error is None or not error.get("message"):
        return text
    metadata = error.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    return str(error["message"]) + (f" ({raw})" if raw else "")


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it: litellm wraps the transport's error, which tells what happened."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _named(chain: list[BaseException], *names: str) -> bool:
    """Whether any exception in ``chain`` is (a subclass of) a class called one of ``names``."""
    return any(cls.__name__ in names for exc in chain for cls in type(exc).__mro__)


def _kind_of_status(status: int) -> str:
    if status == 429:
        return "rate_limit"
    if status == 408:  # errors guide: "Your request timed out" (also as an error object in a 200 body)
        return "timeout"
    if status == 402:
        return "payment"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if 400 <= status < 500:
        return "bad_request"
    return "server"


_REGION = ("region", "country", "location", "geograph")

TYPED_KINDS = {
    "authentication": "auth",
    "permission_denied": "permission",
    "payment_required": "payment",
    "rate_limit_exceeded": "rate_limit",
    "provider_overloaded": "server",
    "provider_unavailable": "server",
    "server": "server",
    "unmapped": "server",
    "timeout": "timeout",
    "context_length_exceeded": "context_length",
    "not_found": "not_found",
    "invalid_request": "bad_request",
    "invalid_prompt": "bad_request",
    "content_policy_violation": "content_policy",
    "refusal": "refusal",
}
"""OpenRouter's typed ``error.metadata.error_type`` (errors guide, "Typed Error Codes": "use this value,
not the HTTP status code alone") and the kind each is here. Types not listed keep the status's kind."""


AVAILABILITY_KINDS = {
    "model_not_found": "model_not_found",
    "model_deprecated": "model_not_found",
    "free_variant_ended": "model_not_found",
    "wrong_endpoint": "wrong_endpoint",
    "no_endpoints": "routing",
    "privacy_restricted": "routing",
    "constraint_filtered": "routing",
    "model_unavailable_upstream": "not_found",
    "region_restricted": "region",
    "capacity_exhausted": "rate_limit",
    "temporarily_unavailable": "server",
}
"""OpenRouter's ``error.availability.code`` (errors guide, "Model Availability Errors": "use
``availability.code``, not the HTTP status or the message prose") and the kind each is here; the
two the guide calls retryable map to retried kinds. A code not listed falls back to its
``availability.retryable`` (the guide: treat an unrecognised code defensively)."""


def _availability(error: dict[str, Any] | None) -> dict[str, Any]:
    """The error's documented ``availability`` object ({} when the server sent none)."""
    value = error.get("availability") if isinstance(error, dict) else None
    return value if isinstance(value, dict) else {}


def _typed(error: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """The error's documented ``error_type`` (None when the server sent none) and its ``metadata``: in
    ``error.metadata`` on a provider error (errors guide, "Typed Error Codes"), beside ``availability``
    in ``error`` itself on an availability error (the guide's example payloads)."""
    metadata = error.get("metadata") if isinstance(error, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    typed = metadata.get("error_type") or (error.get("error_type") if isinstance(error, dict) else None)
    return (typed if isinstance(typed, str) else None), metadata


def availability_note(error: dict[str, Any] | None) -> str:
    """`` [availability: region_restricted; fallback models: a, b]``: the documented code and what the
    server suggests (``fallback_models``, ``excluded_by``, ``constraint.detail``), shown with the error;
    empty when the reply has no ``availability`` object."""
    found = _availability(error)
    if not isinstance(found.get("code"), str):
        return ""
    parts = [str(found["code"])]
    for key, label in (("fallback_models", "fallback models"), ("excluded_by", "excluded by")):
        if isinstance(found.get(key), list) and found[key]:
            parts.append(f"{label}: {', '.join(map(str, found[key]))}")
    constraint = found.get("constraint")
    if isinstance(constraint, dict) and constraint.get("detail"):
        parts.append(str(constraint["detail"]))
    return f" [availability: {'; '.join(parts)}]"


def availability_retry_after(error: dict[str, Any] | None) -> float | None:
    """``availability.retry_after`` (seconds): the body's copy of ``Retry-After``, for when the header is lost."""
    value = _availability(error).get("retry_after")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _guardrail(message: str, metadata: dict[str, Any]) -> bool:
    """A 403 from a guardrail on the key or account (errors guide, "Guardrail Errors"): the message
    says ``Request blocked: ...`` and the metadata names what matched (``patterns``)."""
    return message.lower().startswith("request blocked") or "patterns" in metadata


def refine_kind(kind: str, message: str, error: dict[str, Any] | None) -> str:
    """The kind a status alone cannot tell, from OpenRouter's documented bodies (errors guide).

    A documented ``availability.code`` decides first (:data:`AVAILABILITY_KINDS`: a 403
    ``region_restricted`` is typed ``permission_denied`` too, and is no missing permission), then
    the typed ``error_type`` (:data:`TYPED_KINDS`); a 403 that is a guardrail's block is
    ``guardrail`` whatever its type (``permission_denied`` covers both a key without the permission
    and a guardrail). Without a code or a type, the documented shapes:

    - 400 ``"<id> is not a valid model ID"`` (``model_not_found``): a mistyped or retired id;
    - 403 with ``metadata.reasons``/``flagged_input`` (``ModerationErrorMetadata``): input flagged
      by moderation; a 403 naming a region or country: the provider refuses the caller's region;
    - 404 ``"No endpoints found ..."`` (``that can handle the requested parameters`` under
      ``require_parameters``, ``matching your data policy``, ``that support ...``, naming the
      provider constraints): routing; "No endpoints found for <model>." names none: not_found.

    The message text is read only where no typed field says what happened.
    """
    lower = message.lower()
    available = _availability(error).get("code")
    if isinstance(available, str):
        if available in AVAILABILITY_KINDS:
            return AVAILABILITY_KINDS[available]
        if _availability(error).get("retryable") is True:
            return "server"
    typed, metadata = _typed(error)
    code = error.get("code") if isinstance(error, dict) else None
    if typed == "permission_denied" or (typed is None and kind == "auth"):
        if _guardrail(message, metadata):
            return "guardrail"
        if "reasons" in metadata or "flagged_input" in metadata:
            return "moderation"
    if typed in TYPED_KINDS:
        return TYPED_KINDS[typed]
    if kind == "bad_request" and ("not a valid model id" in lower or code == "model_not_found"):
        return "model_not_found"
    if kind == "auth" and ("moderation" in lower or "flagged" in lower):
        return "moderation"
    if kind == "auth" and any(word in lower for word in _REGION):
        return "region"
    if kind == "not_found" and ("no endpoints found that" in lower or "data policy" in lower
                                or "provider" in lower):
        return "routing"  # "No endpoints found for <model>." (no constraint named) stays not_found
    return kind


def block_of(kind: str, message: str, error: dict[str, Any] | None) -> Blocked | None:
    """The filter that stopped a request of a :data:`~audit.llm.types.BLOCKING_KINDS` kind (None for any
    other kind), from OpenRouter's documented bodies (errors guide): the typed ``error_type``
    ("Typed Error Codes": ``content_policy_violation``, ``refusal``, ``permission_denied`` for a
    guardrail) or the kind; the ``provider_name`` the metadata names ("Moderation Errors":
    ``ModerationErrorMetadata``; "Provider Errors"); and the reason: a moderation flag's ``reasons`` and
    ``flagged_input``, a guardrail's message and ``patterns`` ("Guardrail Errors"), the provider's
    ``raw`` words or ``provider_code``, else the message."""
    if kind not in BLOCKING_KINDS:
        return None
    typed, metadata = _typed(error)
    provider = metadata.get("provider_name")
    reasons = metadata.get("reasons")
    if kind == "moderation" and isinstance(reasons, list) and reasons:
        flagged = metadata.get("flagged_input")
        reason = ", ".join(map(str, reasons)) + (f" (flagged input: {flagged!r})" if flagged else "")
    elif kind == "guardrail":
        patterns = metadata.get("patterns")
        reason = message + (f" (patterns: {', '.join(map(str, patterns))})" if isinstance(patterns, list) and patterns
                            else "")
    else:
        reason = str(metadata.get("raw") or metadata.get("provider_code") or message)
    code = typed if typed and typed != "permission_denied" else kind
    return Blocked(code=code, provider=sanitize(str(provider))[0] if provider else None,
                   reason=sanitize(" ".join(reason.split()))[0] or None)


_SCHEMA_WORDS = ("response_format", "response format", "schema", "structured output", "structured_output",
                 "maxitems", "minitems", "additionalproperties", "anyof")
"""What a 400 refusing the schema names: the parameter, or a JSON Schema keyword the provider lacks."""


def refuses_schema(error: GatewayError) -> bool:
    """Whether a failed call was refused for its ``response_format`` (a 400 that names it), so the
    same call may be sent once without. Any other 400 ("Provider returned error", a transient
    upstream refusal) says nothing about the schema, and a 402 or 429 never does."""
    said = str(error.args[0]).lower() if error.args else ""
    return error.kind == "bad_request" and any(word in said for word in _SCHEMA_WORDS)


def stream_failure(exc: BaseException, received_chars: int) -> tuple[GatewayError, float | None]:
    """A failure while a stream was being read. OpenRouter ends a stream whose provider failed after
    tokens were sent with one event holding ``error`` and ``finish_reason: "error"`` (API
    reference, "Streaming", "Errors After Tokens Have Been Sent"); litellm raises it as an
    exception whose status is the error's code, a string such as ``"server_error"``. That is the
    streamed form of ``error_finish``: the partial text is no answer, and it is retried. So is a
    stream broken by an event that is no chunk (:class:`MalformedEvent`): what followed may be lost."""
    failure, retry_after = classify_failure(exc)
    if isinstance(getattr(exc, "status_code", None), int) or failure.kind in ("too_large", "connection", "timeout"):
        return failure, retry_after
    return GatewayError("error_finish", f"the stream ended with an error after {received_chars} characters: "
                        f"{failure.args[0]}"), None


def classify_failure(exc: BaseException) -> tuple[GatewayError, float | None]:
    """Map a litellm/openai/httpx exception to a GatewayError and the server's Retry-After.

    The cause chain decides before the status litellm reports: litellm labels a refused
    connection and an unreadable body (empty, not JSON, not UTF-8) ``500`` on the raw route,
    which would read as the server failing.
    """
    status = getattr(exc, "status_code", None)
    said = str(getattr(exc, "message", None) or exc)
    message = sanitize(provider_message(said))[0]
    headers = getattr(exc, "litellm_response_headers", None) or {}
    retry_after = parse_retry_after(headers.get("retry-after") if hasattr(headers, "get") else None)
    chain = _chain(exc)
    if too_large := [e for e in chain if isinstance(e, ReplyTooLarge)]:
        return GatewayError("too_large", str(too_large[0])), None
    if malformed := [e for e in chain if isinstance(e, MalformedEvent)]:  # a broken stream: retried
        return GatewayError("error_finish", str(malformed[0])), None
    if _named(chain, "ContextWindowExceededError") or (
        status == 400 and any(h in message.lower() for h in _CONTEXT_HINTS)
    ):
        kind = "context_length"
    elif _named(chain, "Timeout", "TimeoutError", "TimeoutException", "APITimeoutError"):
        kind = "timeout"
    elif _named(chain, "ConnectionError", "ConnectError", "RemoteProtocolError", "ReadError", "WriteError"):
        kind, status = "connection", None
    elif _named(chain, "JSONDecodeError", "UnicodeDecodeError") or isinstance(chain[-1], (AttributeError, TypeError)):
        # An unreadable body, or one litellm could not take apart (a proxy's HTML page): litellm's own
        # words ("'str' object has no attribute 'model_dump'") would only puzzle the user.
        kind, status = "bad_response", None
        message = _NOT_JSON + (f": {_shown_body(said)}" if _shown_body(said) else "")
    elif isinstance(status, int) and status >= 400:
        kind = _kind_of_status(status)
    elif _named(chain, "RateLimitError"):
        kind = "rate_limit"
    elif _named(chain, "AuthenticationError"):
        kind = "auth"
    elif _named(chain, "NotFoundError"):
        kind = "not_found"
    else:
        kind = "bad_response"
    body = error_body(said)[1] or _sdk_error_object(chain)
    kind = refine_kind(kind, message, body)
    if retry_after is None:
        retry_after = availability_retry_after(body)
    blocked = block_of(kind, message, body)
    return GatewayError(kind, (str(blocked) if blocked else message or type(exc).__name__) + availability_note(body),
                        status=status, blocked=blocked), retry_after


_NOT_JSON = "the reply is not an OpenAI-compatible JSON body (an HTML page from a proxy, portal or wrong base URL?)"
_ORIGINAL = "Original Response:"


def _shown_body(said: str) -> str:
    """The start of the body litellm quotes (``Original Response: ...``), on one line; empty when it quotes none."""
    at = said.find(_ORIGINAL)
    return " ".join(said[at + len(_ORIGINAL):].split())[:120] if at >= 0 else ""


def _sdk_error_object(chain: list[BaseException]) -> dict[str, Any] | None:
    """The server's ``error`` object as the OpenAI SDK parsed it (``APIStatusError.body``): on the raw
    completion route litellm's text keeps only the message, and the typed ``metadata`` lives there."""
    for exc in chain:
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            inner = body.get("error")
            return inner if isinstance(inner, dict) else body
    return None
