"""Raw-completion check: does the audited model's provider honour ``/completions``?

User-persona sampling only works if the provider feeds our prompt to the model verbatim.
Some OpenRouter providers instead wrap it in a chat message (the model then *answers*
the user instead of continuing them). Two symptoms reveal that, so the doctor sends an
unfinished user turn (the canary) and checks both:

- continuation: an honoured prompt is continued mid-sentence ("... red, green and" →
  " blue."), so the reply starts with a lower-case word; a chat answer starts a new
  sentence ("Blue is ...", "It sounds like ...") or a new paragraph;
- prompt tokens: a wrapped prompt is billed with the provider's chat template around it,
  so ``usage.prompt_tokens`` is well above what the text we sent can tokenize to.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit import config_values
from audit.errors import UserError
from audit.llm.embedded import local_model
from audit.llm.settings import role_endpoint
from audit.llm.types import GatewayError
from audit.templates import get_family

HONOURED, WRAPPED = 0, 2
"""Exit codes: 0 when raw completions look honoured, 2 when the prompt was wrapped or refused."""

INFLATION_RATIO = 1.5
INFLATION_SLACK = 10
"""Reported prompt tokens above ``ratio * estimate + slack`` mean the provider added a template."""

_TOKEN = re.compile(r"<[|｜][^<>]{1,40}?[|｜]>|\[[A-Z_]{2,12}\]|<[a-z_]{3,30}>|[\u3400-\u9fff]|\w+|[^\w\s]")
"""Special tokens (``<|im_user|>``, ``<｜User｜>``, ``[EOS]``, ``<end_of_sentence>``) count as one
token, CJK characters one each, then words and punctuation: close to BPE counts for short text."""


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate of how many tokens ``text`` is, good to ~30% for short prompts."""
    return len(_TOKEN.findall(text))


def looks_continued(text: str) -> bool:
    """True when ``text`` reads as the rest of an unfinished sentence (not a new reply)."""
    if not text.strip() or text.startswith(("\n\n", "\r\n\r\n")):
        return False
    first = next((ch for ch in text if ch.isalpha()), "")
    return first.islower()


def tokens_inflated(reported: int, estimated: int) -> bool:
    """True when the provider billed far more prompt tokens than were sent (0 means not reported)."""
    return reported > 0 and reported > INFLATION_RATIO * estimated + INFLATION_SLACK


@dataclass(frozen=True)
class Diagnosis:
    """What the canary call showed."""

    model: str
    template: str
    provider_requested: Mapping[str, Any] | None
    provider_served: str | None
    prompt: str
    reply: str | None
    finish_reason: str | None
    prompt_tokens: int
    estimated_tokens: int
    error: str | None = None

    @property
    def continued(self) -> bool:
        return self.reply is not None and looks_continued(self.reply)

    @property
    def inflated(self) -> bool:
        return tokens_inflated(self.prompt_tokens, self.estimated_tokens)

    @property
    def honoured(self) -> bool:
        return self.error is None and self.continued and not self.inflated

    def report(self) -> list[str]:
        """The lines printed to the user: facts, then a verdict and what to do."""
        requested = dict(self.provider_requested) if self.provider_requested else "any (OpenRouter routes)"
        lines = [
            f"model:          {self.model} (template {self.template})",
            f"provider:       requested {requested}; served by {self.provider_served or 'unknown'}",
            f"prompt sent:    {self.prompt!r}",
        ]
        if self.error is not None:
            lines.append(f"error:          {self.error}")
        else:
            lines += [
                f"reply:          {self.reply!r}",
                f"finish reason:  {self.finish_reason}",
                "continuation:   " + ("yes, the reply continues the user's sentence" if self.continued
                                      else "NO, the reply does not continue the user's sentence"),
                f"prompt tokens:  reported {self.prompt_tokens}, ~{self.estimated_tokens} expected from the text "
                + ("(much larger: the provider added its own template)" if self.inflated else "(ok)"),
            ]
        if self.honoured:
            lines.append("verdict: OK, raw completions are honoured: user-persona sampling works here")
        else:
            lines.append("verdict: WRAPPED or unsupported: this route does not honour raw completions, so "
                         "user-persona samples would be chat answers")
            lines.append("fix: pin a provider that serves raw completions and re-check, e.g. "
                         "'audited.provider={order:[<provider>],allow_fallbacks:false,"
                         "require_parameters:true}' (the model's provider list is on its OpenRouter page)")
        return lines


async def diagnose(gateway: Any, audited: DictConfig, canary: str, *, max_tokens: int,
                   temperature: float) -> Diagnosis:
    """Send the canary as a user-persona prompt and collect what the reply says about the route."""
    family = get_family(str(audited.template))
    provider = audited.get("provider")
    provider = OmegaConf.to_container(provider) if provider is not None else None
    prompt = family.user_persona_prompt(canary, system=audited.get("system_prompt"))
    common = dict(model=str(audited.model), template=family.name, provider_requested=provider, prompt=prompt,
                  estimated_tokens=estimate_tokens(prompt))
    try:
        response = await gateway.acomplete(str(audited.model), prompt, stop=family.stops, max_tokens=max_tokens,
                                           temperature=temperature, provider=provider, tag="doctor",
                                           endpoint=role_endpoint(audited))
    except GatewayError as exc:
        if exc.kind == "bad_request" and "model" in str(exc).lower():  # e.g. "x is not a valid model ID"
            raise UserError(f"doctor: {audited.model} was refused: {exc}; check audited.model "
                            "(the model id as the endpoint serves it)") from None
        if exc.kind in ("not_found", "bad_request"):  # no endpoint serves /completions for this model
            return Diagnosis(provider_served=None, reply=None, finish_reason=None, prompt_tokens=0,
                             error=str(exc), **common)
        raise UserError(f"doctor: the canary call failed: {exc}") from None
    return Diagnosis(provider_served=response.provider, reply=response.text, finish_reason=response.finish_reason,
                     prompt_tokens=response.usage.prompt_tokens, **common)


def run_doctor(cfg: DictConfig) -> int:
    """Run the check with the cache off (a cached reply says nothing about today's provider); return the exit code.

    With ``local=true`` it checks the embedded model (started for the check).
    """
    from audit.llm.gateway import Gateway

    config_values.model_id(cfg, "audited.model")
    config_values.max_tokens(cfg, "max_tokens")
    config_values.temperature(cfg, "temperature")
    with local_model(cfg, ("audited",)):
        return _check(cfg, Gateway)


def _check(cfg: DictConfig, Gateway: Any) -> int:

    node = OmegaConf.to_container(cfg.gateway, resolve=True)
    node["cache"] = {**(node.get("cache") or {}), "enabled": False}
    gateway = Gateway.from_config(OmegaConf.create(node), endpoints=[role_endpoint(cfg.audited)])

    async def check() -> Diagnosis:
        try:
            return await diagnose(gateway, cfg.audited, str(cfg.canary), max_tokens=int(cfg.max_tokens),
                                  temperature=float(cfg.temperature))
        finally:
            await gateway.aclose()

    diagnosis = asyncio.run(check())
    print("\n".join(diagnosis.report()), flush=True)
    return HONOURED if diagnosis.honoured else WRAPPED
