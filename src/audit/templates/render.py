"""Render a model's official chat template the way Hugging Face ``apply_chat_template`` does.

User-persona prompts are only faithful if the text we send is byte-for-byte what the
model saw in training, so the Jinja environment copies the one in ``transformers``:
a sandbox with ``trim_blocks``/``lstrip_blocks`` and loop controls, a ``tojson`` filter
that keeps non-ASCII text as is (Jinja's own escapes HTML), and the ``raise_exception``
and ``strftime_now`` globals templates may call. The template files ship inside the
package (``chat_templates/``) and each is compiled once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache, cache
from importlib.resources import files
from typing import Any, NoReturn

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATE_PACKAGE = "audit.templates"
TEMPLATE_DIR = "chat_templates"


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """HF's ``tojson``: plain ``json.dumps`` (no HTML escaping), non-ASCII kept by default."""
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> NoReturn:
    """Let a template reject a conversation it cannot format (HF raises TemplateError too)."""
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(fmt: str) -> str:
    """Current local time, for templates that stamp today's date into the system prompt."""
    return datetime.now().strftime(fmt)


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    """The one Jinja environment every chat template is compiled in."""
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


def template_source(filename: str) -> str:
    """Read a packaged template file (``chat_templates/<filename>``) as text."""
    return (files(TEMPLATE_PACKAGE) / TEMPLATE_DIR / filename).read_text(encoding="utf-8")


@cache
def compiled(filename: str) -> jinja2.Template:
    """Compile a packaged template once; later calls reuse it."""
    return environment().from_string(template_source(filename))


def render(
    filename: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool,
    **kwargs: Any,
) -> str:
    """Render ``messages`` with a packaged template, passing the variables HF passes.

    HF always defines ``tools`` and ``documents`` (None when unused) and spreads the
    tokenizer's special tokens and the caller's extra kwargs (thinking flags, ...) on top.
    """
    return compiled(filename).render(
        messages=[dict(m) for m in messages],
        tools=None,
        documents=None,
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )
