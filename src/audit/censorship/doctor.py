"""Raw-completion check: does each provider serving the audited model honour ``/completions``?

User-persona sampling only works if the provider feeds our prompt to the model verbatim. Some
OpenRouter providers instead wrap it in a chat message (the model then *answers* the user instead
of continuing them), and an unpinned model is load-balanced across providers. So the doctor sends
several pairs of canaries, groups the replies by the provider that served them and judges each
provider on its own replies, by two tests that fail a wrap in different ways:

- the token canary (the bill): a prompt made only of the family's special tokens (its stop
  markers), ``n`` of them. Every tokenizer counts a special token as one token, so a provider that
  feeds the prompt verbatim bills ``n`` prompt tokens, or ``n + 1`` if its server adds a BOS. A
  wrap adds the template's user and assistant markers around it (at least two special tokens in
  every family, plus any default system prompt), so it bills ``n + 2`` or more. A provider that
  reports no usage cannot be judged by it, and one that wraps but bills the prompt as sent passes it;
- the content canary (the text): a user turn cut in the middle of a word of a list that repeats
  (``conf/doctor.yaml``'s ``canary``, ending ``... Monday, Tuesday, Wedn``). A model fed it
  verbatim is still inside the user's word and goes on with it, lower-case and with no space
  (``esday, Thursday``; SmolLM2-135M, under its repeat penalty, writes ``th, Thursdies``); under a
  chat wrap the last thing the model reads is the assistant's turn opening, so it answers instead,
  and a new turn starts with a capital, a space or a line break. This catches a wrap whatever is
  billed. Its limit: a chat model that opens its own turn with the tail of the user's half word
  (lower-case, no space) would pass it.

A load balancer draws each request's provider on its own, so a provider may happen to serve only
one kind of canary; the doctor then re-sends the missing kind pinned to that provider
(``provider.only`` without fallbacks), so every provider that served anything is judged on both.

Each provider's verdict names the test that decided it and is remembered
(:mod:`audit.censorship.provider_check`), so an audit refuses to sample user persona from a
provider marked as wrapping.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit import config_values
from audit.censorship.provenance import provider_slug, same_provider
from audit.censorship.provider_check import WRAPPING, Verdict, audited_endpoint, forget, load, pin_line, remember, \
    today
from audit.errors import UserError
from audit.llm.embedded import local_model
from audit.llm.settings import role_endpoint, role_routing
from audit.llm.types import GatewayError, LLMResponse
from audit.templates import TemplateFamily, get_family

HONOURED, WRAPPED = 0, 2
"""Exit codes: 0 when every provider that served a canary honours raw completions, 2 otherwise."""

TOKEN_CANARY_TOKENS = 8
FOLLOW_UPS = 2
"""How many canaries of a kind are re-sent, pinned, to a provider the load balancer sent none of that kind."""
BOS_SLACK = 1
"""A server may add one BOS token to any prompt (vLLM's /completions does): not a wrap."""
OK, UNSURE = "ok", "unsure"
UNNAMED = "unknown"
"""A server that names no provider (a local vLLM or llama.cpp): judged, never pinned or remembered."""


@dataclass(frozen=True)
class ContentCanary:
    """The content canary: the user's words, cut in the middle of a word (``conf/doctor.yaml``'s ``canary``)."""

    sent: str

    @classmethod
    def parse(cls, canary: str) -> ContentCanary:
        """The canary, if it ends in the middle of a word (a lower-case letter); else the fix, in one line."""
        if not canary[-1:].isalpha() or not canary[-1:].islower():
            raise UserError(f"canary={canary!r}: the content canary must end in the middle of a word (a lower-case "
                            "letter), e.g. canary='Monday, Tuesday, Wedn'")
        return cls(canary)

    @staticmethod
    def continued(reply: str) -> bool:
        """Whether ``reply`` goes on inside the cut word: it starts with a lower-case letter, no space or
        line break before it. A new turn starts with one, or with a capital ("Wednesday", "It looks
        like"): a model does not open its own turn with the tail of the user's half word."""
        return reply[:1].isalpha() and reply[:1].islower()


def token_canary(family: TemplateFamily, n: int = TOKEN_CANARY_TOKENS) -> str:
    """``n`` of the family's special tokens (its stop markers, in turn): exactly ``n`` tokens to any tokenizer."""
    return "".join(itertools.islice(itertools.cycle(family.stops), n))


def billed_verbatim(reported: int, sent: int) -> bool | None:
    """Whether ``reported`` prompt tokens are what ``sent`` special tokens cost verbatim (None: not reported)."""
    if reported <= 0:
        return None
    return sent <= reported <= sent + BOS_SLACK


@dataclass
class ProviderCheck:
    """What one provider's replies to the canaries showed."""

    provider: str
    canary: ContentCanary
    token_reports: list[int] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    """The replies to the content canary."""
    pinned: int = 0
    """Canaries re-sent pinned to this provider because the load balancer had sent it none of their kind."""
    overruns: list[tuple[int, int]] = field(default_factory=list)
    """(completion tokens billed, ``max_tokens`` sent) of each reply that went past its ``max_tokens``."""
    replies_seen: int = 0

    def missing(self) -> list[str]:
        """The canary kinds this provider served none of, while its verdict could still be OK."""
        if self.verdict == WRAPPING:
            return []
        return [kind for kind, got in (("tokens", self.token_reports), ("content", self.replies)) if not got]

    def add(self, kind: str, reply: LLMResponse, allowed: int) -> None:
        """Count ``reply`` to a canary of ``kind`` sent with ``max_tokens=allowed``. Only the content
        canary's budget is checked: the token canary asks for one token, which a server may bill as two
        (the token and its end marker) without ignoring anything."""
        if kind == "tokens":
            self.token_reports.append(reply.usage.prompt_tokens)
            return
        self.replies_seen += 1
        if reply.usage.completion_tokens > allowed:  # the server's own count, before our stop cut
            self.overruns.append((reply.usage.completion_tokens, allowed))
        self.replies.append(reply.text)

    def _billed(self) -> list[bool | None]:
        return [billed_verbatim(r, TOKEN_CANARY_TOKENS) for r in self.token_reports]

    def _said(self) -> list[str]:
        """The content canary's replies that hold any text (an empty one says nothing either way)."""
        return [r for r in self.replies if r.strip()]

    @property
    def verdict(self) -> str:
        """``wrapping`` when any token canary was billed as a wrap, or when no reply to the content canary
        went on inside its cut word (the prompt reached the model as a chat message, however it was billed);
        ``ok`` when every token canary was billed verbatim and every content reply went on inside the word;
        ``unsure`` otherwise (no usage, an empty reply, or replies that disagree)."""
        billed, said = self._billed(), self._said()
        if any(c is False for c in billed):
            return WRAPPING
        if said and not any(self.canary.continued(r) for r in said):
            return WRAPPING
        if billed and all(billed) and self.replies and all(self.canary.continued(r) for r in self.replies):
            return OK
        return UNSURE

    @property
    def exact(self) -> bool:
        """Every token canary billed exactly as sent: no BOS added (a template that starts with one keeps one)."""
        return bool(self.token_reports) and all(r == TOKEN_CANARY_TOKENS for r in self.token_reports)

    def pin_rank(self) -> tuple[bool, bool, str]:
        """Which passing provider to offer as the pin: one that honours ``max_tokens``, then one that bills
        the prompt exactly (no second BOS), then by name."""
        return bool(self.overruns), not self.exact, self.provider

    @property
    def decided_by(self) -> str:
        """Which test decided the verdict, in words kept beside it (and shown when it refuses a run)."""
        billed = ", ".join(str(r) for r in self.token_reports) or "none"
        verbatim = f"{TOKEN_CANARY_TOKENS}-{TOKEN_CANARY_TOKENS + BOS_SLACK}"
        said = self._said()
        finished = sum(self.canary.continued(r) for r in self.replies)
        content = f"content canary: {finished} of {len(self.replies)} replies went on inside the cut word"
        if any(c is False for c in self._billed()):
            return f"token canary billed {billed} tokens where verbatim is {verbatim}"
        if self.verdict == WRAPPING:
            return (f"{content} (e.g. {said[0][:40]!r}, where a raw completion goes on with the word): "
                    f"a chat answer, though the token canary was billed {billed}")
        if self.verdict == OK:
            return f"token canary billed {billed} (verbatim); {content}"
        if not self.token_reports or any(c is None for c in self._billed()):
            return "no usage reported for the token canary"
        return content if self.replies else "no content canary served"

    def lines(self) -> list[str]:
        reports = ", ".join(str(r) for r in self.token_reports) or "none"
        finished = sum(self.canary.continued(r) for r in self.replies)
        why = {WRAPPING: "the prompt reached the model wrapped in a chat template: this provider wraps "
                         "/completions prompts as a chat message; user-persona draws from it are chat answers",
               OK: "raw completions are honoured: user-persona sampling works here",
               UNSURE: "cannot tell (no usage reported, an empty reply, or replies that disagree): "
                       "do not sample user persona from it"}[self.verdict]
        return [f"provider {self.provider}:",
                f"  token canary:  {TOKEN_CANARY_TOKENS} special tokens sent; billed {reports} "
                f"(verbatim: {TOKEN_CANARY_TOKENS}-{TOKEN_CANARY_TOKENS + BOS_SLACK})",
                *(["  BOS:           this provider adds one token (a BOS) to every prompt: a template that starts "
                   "with BOS (DeepSeek) reaches its model with two"]
                  if self.token_reports and all(r == TOKEN_CANARY_TOKENS + BOS_SLACK for r in self.token_reports)
                  else []),
                f"  content:       {finished} of {len(self.replies)} replies go on inside the cut word "
                f"(...{self.canary.sent[-12:]!r})" + (f", e.g. {self.replies[0][:60]!r}" if self.replies else ""),
                *([f"  pinned:        {self.pinned} canaries re-sent pinned to this provider (the load balancer "
                   "had sent it none of their kind)"] if self.pinned else []),
                *([f"  max_tokens:    IGNORED in {len(self.overruns)} of {self.replies_seen} replies (billed "
                   f"{max(b for b, _ in self.overruns)} completion tokens where {self.overruns[0][1]} were allowed): "
                   "every draw from it may cost more than the run's budget assumes"] if self.overruns else []),
                f"  verdict: {self.verdict.upper()}: {why}",
                f"  decided by:    {self.decided_by}"]


@dataclass(frozen=True)
class Diagnosis:
    """What the canaries showed, per provider that served them."""

    model: str
    name: str
    template: str
    provider_requested: Mapping[str, Any] | None
    prompt: str
    providers: dict[str, ProviderCheck]
    errors: list[str]

    @property
    def honoured(self) -> bool:
        return bool(self.providers) and all(p.verdict == OK for p in self.providers.values())

    def report(self) -> list[str]:
        """The lines printed to the user: facts per provider, then a verdict and what to do."""
        requested = dict(self.provider_requested) if self.provider_requested else "none pinned"
        lines = [f"model:          {self.model} (template {self.template})",
                 f"provider:       requested {requested}; served by "
                 + (", ".join(sorted(self.providers)) or "none"),
                 f"prompt sent:    {self.prompt!r}"]
        lines += [f"error:          {e}" for e in dict.fromkeys(self.errors)]
        for _, check in sorted(self.providers.items()):
            lines += check.lines()
        good = [c.provider for c in sorted(self.providers.values(), key=ProviderCheck.pin_rank)
                if c.verdict == OK and c.provider != UNNAMED]
        if self.honoured:
            lines.append("verdict: OK, raw completions are honoured by every provider that served a canary")
        else:
            lines.append("verdict: WRAPPED or unsupported: not every provider honours raw completions, so "
                         "user-persona samples would be chat answers")
        if good and (not self.provider_requested or not self.honoured):
            best = self.providers[good[0]]
            why = ", ".join(["bills the prompt exactly" if best.exact else "adds a BOS to every prompt",
                             "ignores max_tokens" if best.overruns else "honours max_tokens"])
            lines.append(f"pin to paste: {pin_line(good[0])}   ({why}; then re-run this check with it; the exact "
                         "slug is beside the provider on the model's OpenRouter page)")
        elif not good and not self.honoured:
            lines.append("fix: pin a provider that serves raw completions and re-check, e.g. "
                         f"{pin_line()} (the model's providers are on its OpenRouter page)")
        return lines


async def _canary(gateway: Any, audited: DictConfig, family: TemplateFamily, prompt: str, *,
                  max_tokens: int, temperature: float, index: int,
                  pin: str | None = None) -> LLMResponse | GatewayError:
    routing = role_routing(audited, "audited")
    if pin is not None:
        routing["provider"] = {"only": [provider_slug(pin)], "allow_fallbacks": False}
    try:
        return await gateway.acomplete(str(audited.model), prompt, stop=family.stops, max_tokens=max_tokens,
                                       temperature=temperature, tag="doctor", endpoint=role_endpoint(audited),
                                       sample_index=index, **routing)
    except GatewayError as exc:
        if exc.kind == "model_not_found" or (exc.kind == "bad_request" and "model" in str(exc).lower()):
            raise UserError(f"doctor: {audited.model} was refused: {exc}; check audited.model "
                            "(the model id as the endpoint serves it)") from None
        if exc.kind in ("not_found", "routing", "bad_request"):  # no endpoint serves /completions here
            return exc
        raise UserError(f"doctor: the canary call failed: {exc}") from None


async def diagnose(gateway: Any, audited: DictConfig, canary: ContentCanary, *, max_tokens: int,
                   temperature: float, canaries: int = 4) -> Diagnosis:
    """Send ``canaries`` pairs (token canary, content canary) and judge each serving provider."""
    family = get_family(str(audited.template))
    provider = role_routing(audited, "audited")["provider"]
    prompt = family.user_persona_prompt(canary.sent, system=audited.get("system_prompt"))
    tokens = token_canary(family)
    text_of = {"tokens": tokens, "content": prompt}
    allowed_of = {"tokens": 1, "content": max_tokens}

    def send(kind: str, index: int, pin: str | None = None) -> Any:
        return _canary(gateway, audited, family, text_of[kind], max_tokens=allowed_of[kind],
                       temperature=temperature, index=index, pin=pin)

    sent = [kind for _ in range(canaries) for kind in text_of]
    replies = await asyncio.gather(*(send(kind, i) for i, kind in enumerate(sent)))
    checks: dict[str, ProviderCheck] = {}
    errors = []
    for kind, reply in zip(sent, replies):
        if isinstance(reply, GatewayError):
            errors.append(str(reply))
            continue
        name = reply.provider or UNNAMED
        checks.setdefault(name, ProviderCheck(name, canary)).add(kind, reply, allowed_of[kind])
    follow_ups = [(name, kind) for name, check in checks.items() if name != UNNAMED
                  for kind in check.missing() for _ in range(FOLLOW_UPS)]
    pinned = await asyncio.gather(*(send(kind, len(sent) + i, pin=name)
                                    for i, (name, kind) in enumerate(follow_ups)))
    for (name, kind), reply in zip(follow_ups, pinned):
        checks[name].pinned += 1
        if isinstance(reply, GatewayError):
            errors.append(f"pinned to {name}: {reply}")
        elif not same_provider(reply.provider or name, name):
            errors.append(f"pinned to {name}, served by {reply.provider}: not counted")
        else:
            checks[name].add(kind, reply, allowed_of[kind])
    return Diagnosis(model=str(audited.model), name=str(audited.get("name") or audited.model),
                     template=family.name, provider_requested=provider, prompt=prompt, providers=checks,
                     errors=errors)


def run_doctor(cfg: DictConfig) -> int:
    """Run the check with the cache off (a cached reply says nothing about today's provider); return the exit code.

    With ``local=true`` it checks the embedded model (started for the check).
    """
    from audit.llm.gateway import Gateway  # lazy: the gateway loads once the config is checked

    config_values.model_id(cfg, "audited.model")
    action = str(cfg.get("verdicts") or "check")
    if action != "check":
        return kept_verdicts(cfg, action)
    config_values.max_tokens(cfg, "max_tokens")
    config_values.temperature(cfg, "temperature")
    canaries = config_values.whole_number(cfg, "canaries", minimum=1)
    canary = ContentCanary.parse(str(cfg.canary))
    with local_model(cfg, ("audited",)):
        return _check(cfg, Gateway, canary, int(canaries or 4))


def _check(cfg: DictConfig, Gateway: Any, canary: ContentCanary, canaries: int) -> int:
    node = OmegaConf.to_container(cfg.gateway, resolve=True)
    node["cache"] = {**(node.get("cache") or {}), "enabled": False}
    gateway = Gateway.from_config(OmegaConf.create(node), endpoints=[role_endpoint(cfg.audited)])

    async def check() -> Diagnosis:
        try:
            return await diagnose(gateway, cfg.audited, canary, max_tokens=int(cfg.max_tokens),
                                  temperature=float(cfg.temperature), canaries=canaries)
        finally:
            await gateway.aclose()

    diagnosis = asyncio.run(check())
    print("\n".join(diagnosis.report()), flush=True)
    endpoint, date = audited_endpoint(cfg), today()
    remember(cfg.cache.dir, [Verdict(endpoint, str(cfg.audited.model), p, c.verdict, date, c.decided_by)
                             for p, c in diagnosis.providers.items() if p != UNNAMED])
    return HONOURED if diagnosis.honoured else WRAPPED


def kept_verdicts(cfg: DictConfig, action: str) -> int:
    """``verdicts=list``: every kept verdict, this run's endpoint marked; ``verdicts=forget``: drop the
    audited model's verdicts on this endpoint. Neither calls a model."""
    endpoint, model = audited_endpoint(cfg), str(cfg.audited.model)
    if action == "list":
        kept = load(cfg.cache.dir)
        print(f"{len(kept)} doctor verdict(s) kept in {cfg.cache.dir}/doctor/verdicts.json"
              + (" (* = this endpoint, which a run refuses on)" if kept else ""), flush=True)
        for verdict in kept:
            print(f"{'*' if verdict.endpoint == endpoint else ' '} {verdict.line()}", flush=True)
        return HONOURED
    if action == "forget":
        gone = forget(cfg.cache.dir, endpoint, model)
        print(f"forgot {len(gone)} verdict(s) of {model} at {endpoint}", flush=True)
        return HONOURED
    raise UserError(f"verdicts={action!r} is not an action: use verdicts=check (the default: run the canaries), "
                    "verdicts=list or verdicts=forget")
