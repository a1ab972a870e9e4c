"""The judge's model-facing texts, in ``prompts/*.txt`` beside this module, and how a judge is told
the topic (the auditor is told it the same way, so :mod:`audit.censorship.prompts` reads it here).

The texts live in files so they can be read and changed without touching code; filling is the
shared single pass over named placeholders (:func:`audit.prompt_files.fill`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from audit.prompt_files import fill, loader

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
load = loader(PROMPTS_DIR)
"""The text of ``prompts/<name>.txt`` without its final newline."""


def field(topic: Mapping[str, Any], key: str) -> str:
    """A topic's required text field, stripped; ValueError naming it when it is missing or empty."""
    value = topic.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"topic config needs a non-empty {key!r}")
    return value.strip()


def topic_heading(topic: Mapping[str, Any]) -> str:
    """Display name and description: how the auditor and the judge are told the topic."""
    return fill(load("topic"), display_name=field(topic, "display_name"), description=field(topic, "description"))
