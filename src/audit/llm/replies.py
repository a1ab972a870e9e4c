"""The one place that decides what a server's reply means, for both routes.

A reply is either a generation (text, finish reason, usage) or a :class:`GatewayError` of
a kind the retry policy understands. Shapes that look like success but are not become
errors here, never an empty answer: an error object inside an HTTP 200 (OpenRouter's shape
when a provider fails mid-generation, ``{"error": {"code": 502, ...}}``), ``choices: []``,
a body without any text or finish reason, an empty or non-UTF-8 body. Every text that
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
from audit.llm.types import GatewayError, ReplyTooLarge, Usage

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
    """A reply the model actually produced; ``replaced`` counts lone surrogates replaced in it."""

    text: str
    finish_reason: str | None
    usage: Usage
    model: str
    provider: str | None
    replaced: int = 0


def read_reply(route_is_chat: bool, response: Any) -> Generation:
    """The generation in a parsed response object, or the retryable error it really is."""
    error = getattr(response, "error", None)
    if error:
        status = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        status = status if isinstance(status, int) else None
        kind = _kind_of_status(status) if status else "server"
        raise GatewayError(kind, f"error object in a 200 reply: {sanitize(str(message))[0]}", status=status)
    try:
        choice = response.choices[0]
        text = choice.message.content if route_is_chat else choice.text
    except (AttributeError, IndexError, TypeError, KeyError):
        raise GatewayError("bad_response", "reply has no choices (empty \"choices\" or none at all)") from None
    finish = getattr(choice, "finish_reason", None)
    if text is None and finish is None:
        raise GatewayError("bad_response", "reply has neither text nor a finish reason")
    text, replaced = sanitize(text or "")
    usage = getattr(response, "usage", None)
    cost = getattr(usage, "cost", None) if usage is not None else None
    details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
    return Generation(
        text=text,
        finish_reason=finish,
        usage=Usage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost=float(cost or 0.0),
            # OpenRouter's prompt-cache counts (guides/best-practices/prompt-caching.mdx, "Usage object fields")
            cached_prompt_tokens=int(_field(details, "cached_tokens") or 0),
            cache_write_tokens=int(_field(details, "cache_write_tokens") or 0),
        ),
        model=sanitize(str(getattr(response, "model", "") or ""))[0],
        provider=getattr(response, "provider", None),
        replaced=replaced,
    )


def _field(obj: Any, name: str) -> Any:
    """``obj.name`` or ``obj[name]``: litellm passes provider details as objects or plain dicts."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


_CONTEXT_HINTS = ("context length", "context_length", "maximum context", "too many tokens", "context window")

_WRAPPING = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+Error:\s*)?(?:\w+Exception\s*-\s*)?(?:Error code: \d+\s*-\s*)?")


def provider_message(text: str) -> str:
    """The server's own words from a litellm exception text, on one line, decoded (not yet redacted).

    litellm wraps them (``litellm.AuthenticationError: AuthenticationError: OpenrouterException
    - {"error": {"message": ...}}``; the raw-completion route, through the OpenAI SDK, shows a
    Python dict instead of JSON); users need the ``message`` and any ``metadata.raw`` the
    upstream provider sent, not the wrapping.
    """
    text = _WRAPPING.sub("", " ".join(text.split()))
    body = text[text.find("{"):] if "{" in text else ""
    error = None
    for parse in (model_json.loads, model_json.python_literal):  # size and depth checked before decoding
        try:
            error = parse(body).get("error")
            break
        except (ValueError, SyntaxError, AttributeError, MemoryError, RecursionError):
            continue
    if not isinstance(error, dict) or not error.get("message"):
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
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if 400 <= status < 500:
        return "bad_request"
    return "server"


def classify_failure(exc: BaseException) -> tuple[GatewayError, float | None]:
    """Map a litellm/openai/httpx exception to a GatewayError and the server's Retry-After.

    The cause chain decides before the status litellm reports: litellm labels a refused
    connection and an unreadable body (empty, not JSON, not UTF-8) ``500`` on the raw route,
    which would read as the server failing.
    """
    status = getattr(exc, "status_code", None)
    message = sanitize(provider_message(str(getattr(exc, "message", None) or exc)))[0]
    headers = getattr(exc, "litellm_response_headers", None) or {}
    retry_after = parse_retry_after(headers.get("retry-after") if hasattr(headers, "get") else None)
    chain = _chain(exc)
    if too_large := [e for e in chain if isinstance(e, ReplyTooLarge)]:
        return GatewayError("too_large", str(too_large[0])), None
    if _named(chain, "ContextWindowExceededError") or (
        status == 400 and any(h in message.lower() for h in _CONTEXT_HINTS)
    ):
        kind = "context_length"
    elif _named(chain, "Timeout", "TimeoutError", "TimeoutException", "APITimeoutError"):
        kind = "timeout"
    elif _named(chain, "ConnectionError", "ConnectError", "RemoteProtocolError", "ReadError", "WriteError"):
        kind, status = "connection", None
    elif _named(chain, "JSONDecodeError", "UnicodeDecodeError") or isinstance(chain[-1], (AttributeError, TypeError)):
        # An unreadable body, or one litellm could not take apart (a proxy's HTML page).
        kind, status = "bad_response", None
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
    return GatewayError(kind, message or type(exc).__name__, status=status), retry_after
