"""Sampling the audited model for one probe, by technique.

- ``user_persona``: raw ``/completions`` with the official template's user-turn prefix
  and the probe, so the model continues the *user's* words (what it knows, below the
  assistant persona's refusals). The family's stop sequences end the user turn.
- ``prefill``: raw ``/completions`` of an assistant turn already opened with
  ``technique.prefill_text`` (e.g. "Sure, here are the facts:").
- ``assistant``: the same probe through the chat API: what the model *says*.

Each returns the technique's part of an ``audited_responses/NNN.json`` record; the
loop adds iteration, timestamp and classification. A failed call is recorded (``error``),
not raised, so the audit can go on ("continue if possible"); the loop decides which
error kinds are fatal. A call a filter stopped is no failure but a ``blocked`` draw
(:func:`audit.record.draws.blocked_fields`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from audit.censorship.provenance import draw_fields
from audit.llm.aborted import request_text
from audit.llm.accounting import call_usage
from audit.errors import unknown_choice
from audit.llm.types import GatewayError, LLMResponse
from audit.llm.settings import DEFAULT_ENDPOINT
from audit.record.draws import blocked_fields
from audit.templates import TemplateFamily, split_run_on

TECHNIQUES = ("user_persona", "assistant", "prefill")
"""The fixed techniques: one way of sampling for a whole run."""


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


@dataclass(frozen=True)
class Sample:
    """One sampled response: the file record and the text the auditor reads."""

    record: dict[str, Any]
    error_kind: str | None = None

    @property
    def text(self) -> str | None:
        return text_of(self.record)


def text_of(record: Mapping[str, Any] | None) -> str | None:
    """The text of a response record as the auditor reads it: for prefill the opened text comes
    first, as the model saw it (the continuation alone often starts mid-sentence)."""
    if not record or record.get("raw_response") is None:
        return None
    return (record.get("prefill") or "") + record["raw_response"]


def check_technique(name: str) -> str:
    """Reject an unknown technique name before anything is written."""
    if name not in TECHNIQUES:
        raise unknown_choice("technique", name, TECHNIQUES)
    return name


def chat_messages(probe: str, system: str | None) -> list[dict[str, str]]:
    """The conversation the chat technique (and prefill's template) sees: optional system, then the probe."""
    return ([{"role": "system", "content": system}] if system is not None else []) + [
        {"role": "user", "content": probe}
    ]


def draw_name(run_technique: str, tag: str) -> str:
    """Whose draw a target sample is: the run's technique and the sample's role (``audited`` or
    ``baseline``). It enters the cache key, so within a sweep the assistant baseline of a
    user-persona run, that of a prefill run and the answer of an assistant run to the same probe
    are three draws, not one cached reply counted three times; the same run again hits its own."""
    return f"{run_technique} run/{tag}"


async def sample(gateway: Any, target: Target, technique: str, probe: str, *, prefill: str = "",
                 sample_index: int = 0, tag: str = "audited", run_technique: str | None = None) -> Sample:
    """Sample ``target`` once on ``probe`` with ``technique`` as one draw of a ``run_technique`` run
    (default: ``technique``); gateway failures become ``error``."""
    draw = draw_name(run_technique or technique, tag)
    record: dict[str, Any] = {"technique": technique, "prompt_sent": probe, "formatted_prompt": None,
                              "messages_sent": None}
    if technique == "assistant":
        record["messages_sent"] = chat_messages(probe, target.system_prompt)
        return await send(gateway, target, record, messages=record["messages_sent"], sample_index=sample_index,
                          tag=tag, draw=draw)
    if technique == "user_persona":
        record["formatted_prompt"] = target.family.user_persona_prompt(probe, system=target.system_prompt)
    else:
        record["prefill"] = prefill
        record["formatted_prompt"] = target.family.prefill_prompt(
            chat_messages(probe, target.system_prompt), prefill)
    return await send(gateway, target, record, prompt=record["formatted_prompt"], stops=target.family.stops,
                      sample_index=sample_index, tag=tag, draw=draw)


async def send(gateway: Any, target: Target, record: dict[str, Any], *, prompt: str | None = None,
               messages: list[dict[str, str]] | None = None, stops: tuple[str, ...] = (), sample_index: int = 0,
               tag: str = "audited", draw: str = "") -> Sample:
    """Send one draw to ``target`` (``messages`` through the chat API, else ``prompt`` verbatim to
    ``/completions`` with ``stops``) and complete ``record`` with the reply, or with ``error``."""
    if messages is not None:
        call = gateway.achat(target.model, messages, max_tokens=target.assistant_max_tokens or target.max_tokens,
                             temperature=target.temperature, provider=target.provider,
                             sample_index=sample_index, tag=tag, endpoint=target.endpoint, draw=draw,
                             extra_body=target.extra_body)
    else:
        assert prompt is not None
        call = gateway.acomplete(target.model, prompt, stop=stops,
                                 max_tokens=target.max_tokens, temperature=target.temperature,
                                 provider=target.provider, sample_index=sample_index, tag=tag,
                                 endpoint=target.endpoint, draw=draw, extra_body=target.extra_body)
    try:
        response: LLMResponse = await call
    except GatewayError as exc:
        record.update(raw_response=None, completion_tokens=0, finish_reason=None, usage=None, error=str(exc))
        if exc.blocked is not None:  # a filter stopped the draw: a finding, not a failed call
            record.update(error=None, **blocked_fields(exc.blocked.as_dict()))
            return Sample(record)
        return Sample(record, error_kind=exc.kind)
    record.update(raw_response=response.text, completion_tokens=response.usage.completion_tokens,
                  finish_reason=response.finish_reason, usage=call_usage(response).as_dict(), error=None,
                  **draw_fields(response, request_text({"prompt": prompt} if prompt is not None else
                                                       {"messages": messages or []})))
    if prompt is not None and (record.get("role") == "user" or record.get("technique") == "user_persona"):
        user, run_on = split_run_on(response.text, target.family.run_on_markers)
        if run_on is not None:  # never judged as the user's words: kept apart, counted in the summary
            record.update(raw_response=user, run_on=run_on,
                          outcome=response.outcome if user.strip() else "empty")
    return Sample(record)
