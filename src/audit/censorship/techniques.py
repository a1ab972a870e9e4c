"""The audited model as a run samples it (:class:`Target`), and the fixed techniques: one way of
sampling for a whole run, each the one-action kind of :mod:`audit.censorship.action_kinds` that says
``fixed`` (``user_persona``: the model continues the user's turn in its own template; ``prefill``: an
assistant turn opened with ``technique.prefill_text``; ``assistant``: the chat API, what the model
*says*). A fixed technique's draw is planned by its kind (:func:`~audit.censorship.action_kinds.probe_plan`)
and sent as every draw is (:func:`audit.censorship.send.send`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from audit.censorship.action_kinds import TECHNIQUES
from audit.errors import unknown_choice
from audit.llm.settings import DEFAULT_ENDPOINT
from audit.templates import TemplateFamily

@dataclass(frozen=True)
class Target:
    """The audited model as the techniques need it (from the ``audited`` config node)."""

    model: str
    family: TemplateFamily
    provider: Mapping[str, Any] | None
    system_prompt: str | None
    max_tokens: int | None
    temperature: float | None
    endpoint: str = DEFAULT_ENDPOINT
    extra_body: Mapping[str, Any] | None = None
    """Request extras (``audited.reasoning``, ``audited.extra_body``) sent with every draw."""
    assistant_max_tokens: int | None = None
    """``audited.assistant_max_tokens``: the chat draws' budget, larger for a reasoning model, whose
    reasoning tokens count against it (with ``sampling.max_tokens`` its answer came back empty or cut)."""


def check_technique(name: str) -> str:
    """Reject an unknown technique name before anything is written."""
    if name not in TECHNIQUES:
        raise unknown_choice("technique", name, TECHNIQUES)
    return name


def draw_name(run_technique: str, tag: str) -> str:
    """Whose draw a target sample is: the run's technique and the sample's role (``audited`` or
    ``baseline``). It enters the cache key, so within a sweep the assistant baseline of a
    user-persona run, that of a prefill run and the answer of an assistant run to the same probe
    are three draws, not one cached reply counted three times; the same run again hits its own."""
    return f"{run_technique} run/{tag}"
