"""The one reader of JSON that a model or a server wrote: size and nesting checked before decoding.

Model text is untrusted input. ``json.loads`` recurses once per nesting level, so a reply
of a few thousand ``[`` raised ``RecursionError`` (a traceback, not a bad reply), and a
cached reply did it again on every resume; a reply of megabytes costs memory and quadratic
scans. So every parser of model text (the auditor's turns, the judge's verdicts, epistemic
answers) and of server error bodies goes through this module, which refuses a text over
:data:`MAX_CHARS` characters or nested deeper than :data:`MAX_DEPTH` levels with a
:class:`ReplyError` *before* any decoder runs: such a reply is unusable like any other bad
JSON (the auditor is re-asked, a judge verdict or an answer records the error).

The extractor is tolerant where the intent is unambiguous: a JSON object fenced, bare, or
after/before prose; raw newlines inside strings; trailing commas.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any

MAX_CHARS = 1_000_000
"""Longest model reply read as JSON: far above any real auditor turn, verdict or answer (a few KB)."""
MAX_DEPTH = 64
"""Deepest nesting of ``{``/``[`` read: real replies nest three or four levels."""

_SPACE = re.compile(r"\s*")
_STRUCTURE = re.compile(r'[\\"{}\[\]()]')
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


class ReplyError(ValueError):
    """An unusable model reply; the message tells the model exactly what to fix."""


def check_size(text: str) -> None:
    """Refuse a text too long to read as a reply."""
    if len(text) > MAX_CHARS:
        raise ReplyError(f"your reply is {len(text):,} characters, over the {MAX_CHARS:,} read as JSON; "
                         "reply with one short JSON object")


def check_depth(text: str) -> None:
    """Refuse a text whose brackets nest deeper than :data:`MAX_DEPTH`."""
    if deeper_than(text, MAX_DEPTH):
        raise ReplyError(f"your JSON nests deeper than {MAX_DEPTH} levels; reply with one flat JSON object")


def deeper_than(text: str, limit: int) -> bool:
    """Whether ``text``'s brackets nest deeper than ``limit`` (strings are skipped, as JSON reads
    them; a single-quoted Python literal can only count deeper, never shallower). Also used for
    saved files (:mod:`audit.io.safe_read`), which decoders read just as recursively."""
    if sum(text.count(opener) for opener in "{[(") <= limit:
        return False  # the common case, at C speed
    depth = 0
    in_string = False
    escaped_at = -1
    for match in _STRUCTURE.finditer(text):  # only the characters that matter, not every one
        ch, at = match.group(), match.start()
        if in_string:
            if ch == "\\" and at != escaped_at:
                escaped_at = at + 1
            elif ch == '"' and at != escaped_at:
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[(":
            depth += 1
            if depth > limit:
                return True
        elif ch in "}])":
            depth -= 1
    return False


def loads(text: str) -> Any:
    """One JSON document from untrusted text (raw newlines in strings allowed), limits checked first.

    Raises :class:`ReplyError` over the limits and ``json.JSONDecodeError`` for bad syntax
    (both ``ValueError``).
    """
    check_size(text)
    check_depth(text)
    return json.loads(text, strict=False)


def python_literal(text: str) -> Any:
    """A Python literal (the OpenAI SDK quotes a server's error body as a dict repr), limits checked
    first; never ``eval``. Raises ``ValueError`` or ``SyntaxError`` for anything else."""
    check_size(text)
    check_depth(text)
    return ast.literal_eval(text)


def _top_level_spans(text: str) -> tuple[list[tuple[int, int]], int | None]:
    """Spans of balanced ``{...}`` objects at top level, and the start of an unclosed one.

    Strings are tracked only inside braces, so apostrophes or quotes in surrounding prose
    cannot unbalance the scan; braces inside JSON strings are ignored.
    """
    spans: list[tuple[int, int]] = []
    depth = 0
    start = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if depth == 0:
            if ch == "{":
                depth, start = 1, i
            continue
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans, (start if depth else None)


def _without_trailing_commas(text: str) -> str:
    """Drop commas directly before ``}`` or ``]`` outside strings (a frequent LLM slip)."""
    out: list[str] = []
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == ",":
            after = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]  # \s* always matches
            if text[after : after + 1] in ("}", "]"):
                continue
        out.append(ch)
    return "".join(out)


def _loads_object(candidate: str) -> dict[str, Any]:
    """Parse one candidate as a JSON object (raw newlines in strings and trailing commas allowed)."""
    try:
        value = loads(candidate)
    except json.JSONDecodeError:
        value = loads(_without_trailing_commas(candidate))
    if not isinstance(value, dict):
        raise ReplyError(f"expected a JSON object {{...}} but found a JSON {type(value).__name__}")
    return value


def _describe_decode_error(exc: json.JSONDecodeError) -> str:
    snippet = exc.doc[max(0, exc.pos - 30) : exc.pos + 30].replace("\n", "\\n")
    return f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno} (near: ...{snippet}...)"


def _candidates(raw: str) -> list[str]:
    """Where a JSON object may be in a reply: each code fence, then each balanced top-level ``{...}``."""
    if not isinstance(raw, str) or not raw.strip():
        raise ReplyError("your reply was empty; reply with one JSON object")
    check_size(raw)
    candidates = [m.group(1).strip() for m in _FENCE.finditer(raw)]
    candidates += [raw[a:b] for a, b in _top_level_spans(raw)[0]]
    return [c for c in candidates if c.startswith("{")]


def _objects(raw: str, failures: list[tuple[int, str]]) -> Iterator[dict[str, Any]]:
    """Each candidate that parses to an object, in order; why each other one did not, into ``failures``."""
    for candidate in _candidates(raw):
        try:
            value = _loads_object(candidate)
        except json.JSONDecodeError as exc:
            failures.append((len(candidate), _describe_decode_error(exc)))
            continue
        except ReplyError as exc:
            failures.append((len(candidate), str(exc)))
            continue
        yield value


def json_objects(raw: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in a model reply, in the order :func:`extract_json_object` tries them.

    For readers that look for one key among several objects (an epistemic answer after a
    reasoning object). Raises :class:`ReplyError` for an empty or over-large reply.
    """
    return _objects(raw, [])


def extract_json_object(raw: str) -> dict[str, Any]:
    """Return the JSON object in a model reply: fenced, bare, or after/before prose.

    Order: each code fence, then each balanced top-level ``{...}`` in the text; the first
    candidate that parses to an object wins. No ``eval``; only ``json``.
    """
    failures: list[tuple[int, str]] = []
    for value in _objects(raw, failures):
        return value
    unclosed = _top_level_spans(raw)[1]
    # The longest candidate is the intended reply, not a stray "{x}" in the prose.
    longest = max(failures) if failures else (0, "")
    if unclosed is not None and len(raw) - unclosed > longest[0]:
        raise ReplyError(
            "your JSON object is never closed (unbalanced braces); the reply was probably cut off."
            " Reply with one complete JSON object and keep the text fields shorter"
        )
    if failures:
        raise ReplyError(f"{longest[1]}. Fix the syntax and reply with one valid JSON object")
    raise ReplyError("your reply contains no JSON object; reply with exactly one JSON object {...}")


def snake_case(value: str) -> str:
    """Enum spelling: lower case, runs of spaces and hyphens as one underscore."""
    return re.sub(r"[\s\-]+", "_", value.strip().lower())
