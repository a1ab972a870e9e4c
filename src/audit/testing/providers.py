"""Providers behind the loopback server: load-balanced, each honouring or wrapping a raw prompt.

OpenRouter routes an unpinned model to any of its providers (provider routing guide: load
balancing; ``provider.only``/``order`` with ``allow_fallbacks: false`` restrict it, and a request
no allowed endpoint can serve is answered 404 "No endpoints found ..."). Each reply names the
provider that served it (``provider`` in the body). Some providers serve ``/completions`` by
rendering the prompt as ONE user message in the model's own chat template (a public report shows
Kimi K2 reaching a provider as ``messages: [{role: user, content: <prompt>}]``), and bill the
tokens of that rendering; a provider may also wrap the prompt and bill it as sent (a hidden wrap,
which no bill can show). :class:`LoadBalanced` plays all three, with token counts that look native:
each special token one token, other text about four bytes a token (not the doctor's estimator,
so a check designed against this server cannot lean on it), and with the model behind each
provider answering what it sees (:func:`induced`: text that repeats itself is continued; under a
wrap the model is in its own turn and answers as an assistant).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from audit.templates import TemplateFamily
from audit.testing.documented import routing_404
from audit.testing.replies import COMPLETION, Handler, RecordedRequest, Reply, completion_reply, estimate_tokens

SPECIAL = re.compile(r"<[|｜][^<>\s]{1,40}?[|｜]>|\[[A-Za-z_]{2,12}\]|<(?:sop|eop|think|/think)>"
                     r"|<(?:beginning|end)_of_sentence>")
"""What the nine families' tokenizers hold as single special tokens (role markers, BOS/EOS, GLM's
``[gMASK]<sop>``, MiniMax's sentence markers)."""

WRAPPED_ANSWER = " blue! Those three are the primary colours of light, so it is a natural choice."
"""A chat model's answer to the unfinished canary that still starts lower-case: the case the
continuation check alone cannot catch (issue: it passed as OK)."""


MARKER = re.compile(r"<[|｜][^<>\s]{1,40}?[|｜]>")
"""The role and end markers (``<|assistant|>``, ``<｜User｜>``...): tokens a tokenizer flags special."""


def stripping_special_tokens(text: str) -> str:
    """What a vLLM-based provider returns for generated ``text``: it decodes with
    ``skip_special_tokens`` and matches stops after that, so a special role marker such as GLM's
    ``<|assistant|>`` is gone (and never matched a stop) while ordinary added tokens such as
    ``<think>`` stay. The loopback server plays a GLM user-persona draw that ran on with it."""
    return MARKER.sub("", text)


INDUCTION_MIN_CHARS = 12
"""The shortest repeated ending that :func:`induced` continues (shorter repeats are chance)."""


def induced(seen: str, length: int = 40) -> str | None:
    """What a language model writes after ``seen`` when the open turn repeats itself: the text that
    followed the earlier occurrence of the turn's longest repeated ending (the copying any model does on
    a repeating list, "Monday, Tuesday, Wedn" -> "esday, ..."). The open turn is the text after the last
    special token: under a chat wrap that is the assistant's fresh turn, which repeats nothing, so a
    wrapped model answers instead. None when nothing repeats."""
    turn = SPECIAL.split(seen)[-1]
    for size in range(len(turn) - 1, INDUCTION_MIN_CHARS - 1, -1):
        at = turn.find(turn[-size:])
        if at + size < len(turn):
            return turn[at + size:at + size + length]
    return None


def native_tokens(text: str) -> int:
    """A tokenizer-like count: each special token one, other text one per four UTF-8 bytes (rounded up)."""
    specials = SPECIAL.findall(text)
    rest = SPECIAL.sub("", text)
    return len(specials) + sum(-(-len(chunk.encode()) // 4) for chunk in re.split(r"\s+", rest) if chunk)


@dataclass(frozen=True)
class ServedBy:
    """One provider: its name in replies, whether it wraps the prompt as a chat message, and
    whether its server adds a BOS token to every prompt (vLLM's /completions does for DeepSeek)."""

    name: str
    wraps: bool = False
    adds_bos: bool = False
    slug: str = ""
    """The slug a pin names it by, as its model page lists it (default: the name in lower case)."""
    ignores_max_tokens: bool = False
    """Generates (and bills) four times the request's ``max_tokens``: a provider that does not honour it."""
    bills_as_sent: bool = False
    """Bills the prompt's tokens as sent (plus its BOS) even when it wraps it: a hidden wrap."""

    @property
    def routing_slug(self) -> str:
        return self.slug or self.name.lower()


class LoadBalanced:
    """A handler serving ``/completions`` for a model of ``family`` from ``providers`` (or as the
    request's ``provider`` pin says); ``inner`` answers everything else and gives a raw provider's
    text (default ``answer``). The model answers what it sees: a repeating open turn is continued
    (:func:`induced`), and behind a wrapping provider it is in its own turn and answers as an
    assistant (``wrapped_answer``, default :data:`WRAPPED_ANSWER`), whatever ``inner`` would say to the
    raw prompt. Each provider stops at the request's ``max_tokens`` unless it ignores it.

    Unpinned requests are spread without regard to when they arrive: each new prompt goes to the
    next provider in turn, and each repeat of a prompt to the provider after the one that served it
    last. OpenRouter draws the provider of each request on its own, so a repeated prompt (the
    doctor's canaries) reaches every provider; one turn shared by all prompts would instead tie a
    provider to whichever prompts happened to arrive at its slots, and a test's verdict to the
    order in which concurrent requests reached the server."""

    def __init__(self, family: TemplateFamily, providers: Sequence[ServedBy], *, inner: Handler | None = None,
                 answer: str = " blue.", wrapped_answer: str = WRAPPED_ANSWER):
        self.family, self.providers, self.inner = family, list(providers), inner
        self.answer, self.wrapped_answer = answer, wrapped_answer
        self._next_of: dict[str, int] = {}
        """For each prompt seen, the index of the provider its next repeat goes to."""
        self._lock = threading.Lock()
        self.served: list[tuple[str, str]] = []
        """(provider, prompt as the model saw it) of every completion served."""

    def route(self, request: RecordedRequest) -> ServedBy | None:
        """The provider that serves ``request``: the first of its pin that exists, else the next in turn."""
        pin = (request.json or {}).get("provider") or {}
        # a pin names providers by slug, and a base slug (before any "/variant") matches all of a
        # provider's endpoints (provider routing guide, "Targeting Specific Provider Endpoints")
        named = [str(p).split("/")[0] for p in (pin.get("only") or pin.get("order") or [])]
        by_slug = {p.routing_slug: p for p in self.providers}
        for slug in named:
            if slug in by_slug:
                return by_slug[slug]
        if pin.get("only") or (named and pin.get("allow_fallbacks") is False):
            return None
        prompt = str((request.json or {}).get("prompt") or "")
        with self._lock:
            index = self._next_of.get(prompt, len(self._next_of)) % len(self.providers)
            self._next_of[prompt] = index + 1
            return self.providers[index]

    def seen_as(self, provider: ServedBy, prompt: str) -> str:
        """The prompt as the model sees it behind ``provider``."""
        seen = self.family.assistant_prompt([{"role": "user", "content": prompt}]) if provider.wraps else prompt
        return self.with_bos(provider, seen)

    def with_bos(self, provider: ServedBy, text: str) -> str:
        return (self.family.bos_token or "<|begin_of_text|>") + text if provider.adds_bos else text

    def __call__(self, request: RecordedRequest) -> Reply | None:
        if request.endpoint != COMPLETION:
            return self.inner(request) if self.inner is not None else None
        provider = self.route(request)
        if provider is None:
            return routing_404("only")
        prompt = str((request.json or {}).get("prompt") or "")
        seen = self.seen_as(provider, prompt)
        with self._lock:
            self.served.append((provider.name, seen))
        copied = induced(seen)
        if copied is not None:
            reply: Reply | None = completion_reply(copied)
        elif provider.wraps:  # the model is in its own (assistant) turn: it answers, whatever a raw draw would say
            reply = completion_reply(self.wrapped_answer)
        else:
            reply = self.inner(request) if self.inner is not None else None
        if reply is None or not hasattr(reply.body, "payload"):
            reply = completion_reply(self.answer)
        bill = self.with_bos(provider, prompt) if provider.bills_as_sent else seen
        billed: Callable[[Any], int] = lambda _request: native_tokens(bill)  # noqa: E731 - one expression
        body = replace(reply.body, provider=provider.name, prompt_tokens_of=billed)
        allowed = int((request.json or {}).get("max_tokens") or 16)
        # a provider stops generating at max_tokens (and bills no more); one that ignores it bills four times it
        if not provider.ignores_max_tokens:
            body = replace(body, text=body.text[:4 * allowed])  # estimate_tokens' four characters a token
        spent = 4 * allowed if provider.ignores_max_tokens else estimate_tokens(body.text)
        body = replace(body, usage={**dict(body.usage or {}), "completion_tokens": spent})
        return replace(reply, body=body)
