"""What every system returns, and the small helpers all systems share.

A system answers one card at a time (``async`` so LLM systems can run concurrently
through the gateway); the pipeline turns a :class:`Reply` into a results row
(:class:`audit.record.answers.Answer`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from omegaconf import DictConfig

from audit.record.answers import GOLD_OF_LABEL, Card

LABEL_TO_PRED = GOLD_OF_LABEL  # what a system answers for a claim it knows to be E/C/U


@dataclass
class Reply:
    """One system's reply to one card (the results row around it is :class:`audit.record.answers.Answer`).

    ``pred`` is None exactly when ``error`` says why (API failure, unparseable reply):
    metrics count those rows as errors, never as abstentions. ``extra`` holds
    system-specific fields copied into the results row (retrieved facts, the gate's verdict).
    """

    pred: str | None
    reason: str
    raw_output: str | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class System(Protocol):
    """A system under evaluation; ``id`` is its name in results rows and reports."""

    id: str

    async def answer(self, card: Card) -> Reply: ...


def system_id(cfg: DictConfig) -> str:
    """The results-row name: ``system.label`` if set, else ``name`` or ``name:model``.

    The model is part of the id so that results of one system on several models (a sweep
    over ``system.model``) stay apart when their files are combined in one report.
    """
    if cfg.get("label"):
        return str(cfg.label)
    return f"{cfg.name}:{cfg.model}" if cfg.get("model") else str(cfg.name)
