"""Structured outputs: a reply's JSON Schema sent as ``response_format`` (pure, no I/O).

Servers that support it constrain decoding to the schema (llama.cpp turns it into a grammar;
OpenRouter forwards it to providers with structured outputs), so even a small model returns
JSON the validator accepts. Each reply's schema is defined once, next to its validator; this
module only wraps it and checks the per-role setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from audit.errors import UserError

STRUCTURED_MODES = ("auto", "on", "off")
"""``on``: always send the schema; ``off``: never; ``auto``: send it, and re-send that one call
without it when the server's 400 names the schema (recorded as ``structured_output: rejected``)."""


def check_mode(mode: str) -> str:
    """The mode itself, or a one-line error naming the allowed values."""
    if mode not in STRUCTURED_MODES:
        raise UserError(f"structured_output must be one of {', '.join(STRUCTURED_MODES)}, got {mode!r}; "
                        f"set e.g. auditor.structured_output=auto")
    return mode


def json_schema_format(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response_format`` object for ``schema`` (strict: the server may not add or drop keys)."""
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": dict(schema)}}
