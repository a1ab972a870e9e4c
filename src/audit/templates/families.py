"""Chat-template families: how to write a raw /completions prompt for each audited model.

User-persona sampling sends the model a prompt that ends inside a *user* turn, so the
model continues the user's words. The prefix must be exactly what the model's own chat
template produces, so it is not hand-written: we render the official template on a
conversation whose last user message is a sentinel and cut at the sentinel. The same
trick (HF's ``continue_final_message``) gives an assistant turn opened with a prefill.

Each family also names its stop sequences: the tokens that end a user turn. Some models
(DeepSeek, GLM) have no end-of-user token, so without them the model writes the user's
words, then the assistant's reply, then more turns. The gateway passes them to the
server and cuts the returned text with :func:`cut_at_stops` as well, because some
servers drop special tokens before matching stops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import jinja2

from audit.errors import UserError, unknown_choice
from audit.templates.render import render

SENTINEL = "<<audit-sentinel-3f9c27e1>>"
"""Stand-in for the text that follows the prefix; no template alters or emits it."""

ROLES = ("system", "user", "assistant")

DEEPSEEK_BOS = "<｜begin▁of▁sentence｜>"  # U+FF5C fullwidth bar, U+2581 lower one-eighth block
DEEPSEEK_EOS = "<｜end▁of▁sentence｜>"
DEEPSEEK_STOPS = ("<｜Assistant｜>", DEEPSEEK_EOS)
KIMI_STOPS = ("<|im_end|>", "[EOS]", "<|im_assistant|>")
QWEN_STOPS = ("<|im_end|>", "<|endoftext|>", "<|im_start|>")
GLM_STOPS = ("<|assistant|>", "<|observation|>", "<|user|>", "<|endoftext|>")
MINIMAX_STOPS = ("<end_of_sentence>", "<beginning_of_sentence>")
GLM_ASSISTANT_OPENERS = ("<think>", "</think>")
"""GLM-4.5's template opens every assistant turn with ``<think>`` after ``<|assistant|>`` (``<think></think>``
when the turn has no reasoning). ``<|assistant|>`` is a special token, which vLLM-based providers drop
before matching stops; ``<think>`` and ``</think>`` are ordinary added tokens (the providers' own
reasoning parsers find them in the decoded text), so they stay in a draw that ran on."""


def cut_at_stops(text: str, stops: Sequence[str]) -> str:
    """Return ``text`` up to the earliest occurrence of any stop (empty stops are ignored)."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return text[: min(hits)] if hits else text


@dataclass(frozen=True)
class TemplateFamily:
    """One way of formatting conversations for a model, plus the stops that end a user turn.

    ``template`` is a file in ``chat_templates/``. ``legacy_prefix`` marks a legacy
    variant: a fixed user-persona prefix kept to reproduce earlier results, while its
    assistant and prefill prompts still use ``template`` (the same model's official one).
    ``bos_token`` is only set where the template reads it; ``content_parts`` wraps plain
    string contents as ``[{"type": "text", "text": ...}]`` for templates that index into them.
    """

    name: str
    template: str
    stops: tuple[str, ...]
    eos_token: str
    description: str
    bos_token: str | None = None
    render_kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    content_parts: bool = False
    legacy_prefix: str | None = None
    run_on_markers: tuple[str, ...] = ()
    """Text only the assistant's turn opens with that survives a provider stripping special tokens:
    a user-persona draw holding one ran on past the user's turn (its end-of-user stop is a special
    token the provider dropped before matching stops) into the assistant's reply (:func:`split_run_on`)."""

    def with_render_kwargs(self, **overrides: Any) -> TemplateFamily:
        """The same family with some template variables changed (e.g. ``enable_thinking=False``)."""
        return replace(self, render_kwargs=MappingProxyType({**self.render_kwargs, **overrides}))

    def user_persona_prefix(
        self, system: str | None = None, history: Sequence[Mapping[str, str]] = ()
    ) -> str:
        """Everything the template writes before the content of a new user message."""
        if self.legacy_prefix is not None:
            if system is not None or history:
                official = [
                    f.name
                    for f in _FAMILIES.values()
                    if f.template == self.template and f.legacy_prefix is None
                ]
                raise UserError(
                    f"Chat template family {self.name!r} is a fixed legacy string with no slot for a "
                    f"system prompt or earlier turns; use {', '.join(map(repr, official))} instead."
                )
            return self.legacy_prefix
        messages = ([{"role": "system", "content": system}] if system is not None else []) + list(history)
        return self._prefix_before(messages, "user")

    def user_persona_prompt(
        self, probe: str, system: str | None = None, history: Sequence[Mapping[str, str]] = ()
    ) -> str:
        """The prompt that makes the model continue the user's words, starting with ``probe``."""
        return self.user_persona_prefix(system, history) + probe

    def assistant_prompt(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The ordinary chat prompt: ``messages`` followed by the opened assistant turn."""
        if not messages:
            raise UserError(
                f"Chat template family {self.name!r}: assistant_prompt needs at least one message."
            )
        return self._render(messages, add_generation_prompt=True)

    def prefill_prompt(self, messages: Sequence[Mapping[str, str]], prefill: str) -> str:
        """``messages`` then an assistant turn that already starts with ``prefill`` (appended verbatim).

        The turn opening is whatever the template writes before an assistant message's
        content (HF's ``continue_final_message``); for reasoning templates that is the
        non-thinking form (e.g. DeepSeek V3.1 ``<｜Assistant｜></think>``). This is transformers'
        ``continue_final_message`` byte for byte, except on purpose where ``prefill`` starts or ends
        with whitespace (or is empty) and the template strips assistant content (Qwen3, GLM):
        transformers strips the prefill's whitespace too, we send the auditor's words as given.
        """
        return self._prefix_before(messages, "assistant") + prefill

    def _prefix_before(self, messages: Sequence[Mapping[str, str]], role: str) -> str:
        """Render ``messages`` + a ``role`` message holding the sentinel, and cut at the sentinel."""
        text = self._render([*messages, {"role": role, "content": SENTINEL}], add_generation_prompt=False)
        if text.count(SENTINEL) != 1:
            raise UserError(
                f"Chat template {self.template} ({self.name!r}) rendered the sentinel "
                f"{text.count(SENTINEL)} times instead of once: remove {SENTINEL!r} from the conversation, "
                "or fix the template so it writes the last message verbatim."
            )
        return text[: text.index(SENTINEL)]

    def _render(self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool) -> str:
        """Render validated messages with this family's tokens and variables."""
        prepared = [self._prepare(m) for m in messages]
        tokens = {"eos_token": self.eos_token} | ({"bos_token": self.bos_token} if self.bos_token else {})
        try:
            return render(
                self.template,
                prepared,
                add_generation_prompt=add_generation_prompt,
                **tokens,
                **self.render_kwargs,
            )
        except jinja2.TemplateError as exc:
            raise UserError(
                f"Chat template {self.template} ({self.name!r}) rejected the conversation: {exc}"
            ) from exc

    def _prepare(self, message: Mapping[str, str]) -> dict[str, Any]:
        """Check one message and convert its content to the shape the template reads."""
        role, content = message.get("role"), message.get("content")
        if role not in ROLES or not isinstance(content, str):
            raise UserError(
                f"Bad chat message {dict(message)!r}: need role in {', '.join(ROLES)} and string content."
            )
        prepared = dict(message)
        if self.content_parts:
            prepared["content"] = [{"type": "text", "text": content}]
        return prepared


_FAMILIES: dict[str, TemplateFamily] = {
    f.name: f
    for f in (
        TemplateFamily(
            name="deepseek_v3",
            template="deepseek_v3.jinja",
            description="DeepSeek V3, V3-0324 (deepseek-chat)",
            stops=DEEPSEEK_STOPS,
            bos_token=DEEPSEEK_BOS,
            eos_token=DEEPSEEK_EOS,
        ),
        TemplateFamily(
            name="deepseek_v3_1",
            template="deepseek_v3_1.jinja",
            description="DeepSeek V3.1, V3.1-Terminus, V3.2 (thinking off unless thinking=True)",
            stops=DEEPSEEK_STOPS,
            bos_token=DEEPSEEK_BOS,
            eos_token=DEEPSEEK_EOS,
            render_kwargs=MappingProxyType({"thinking": False}),
        ),
        TemplateFamily(
            name="deepseek_r1",
            template="deepseek_r1.jinja",
            description="DeepSeek R1 and R1 distills (assistant turn opens with <think>)",
            stops=DEEPSEEK_STOPS,
            bos_token=DEEPSEEK_BOS,
            eos_token=DEEPSEEK_EOS,
        ),
        TemplateFamily(
            name="deepseek_legacy",
            template="deepseek_v3.jinja",
            description="Censorship spec's DeepSeek string; chat and prefill as deepseek_v3",
            stops=DEEPSEEK_STOPS,
            bos_token=DEEPSEEK_BOS,
            eos_token=DEEPSEEK_EOS,
            legacy_prefix="<｜begin▁of▁sentence｜><｜User｜>",
        ),
        TemplateFamily(
            name="kimi_k2",
            template="kimi_k2_instruct.jinja",
            description="Kimi K2 Instruct / 0905 (default system prompt, no newline between turns)",
            stops=KIMI_STOPS,
            eos_token="[EOS]",
        ),
        TemplateFamily(
            name="kimi_k2_thinking",
            template="kimi_k2_thinking.jinja",
            description="Kimi K2 Thinking",
            stops=KIMI_STOPS,
            eos_token="[EOS]",
        ),
        TemplateFamily(
            name="kimi_k2_legacy",
            template="kimi_k2_instruct.jinja",
            description="Censorship spec's Kimi K2 string (empty system, newline); "
            "chat and prefill as kimi_k2",
            stops=KIMI_STOPS,
            eos_token="[EOS]",
            legacy_prefix="<|im_system|>system<|im_middle|><|im_end|>\n<|im_user|>user<|im_middle|>",
        ),
        TemplateFamily(
            name="qwen2_5",
            template="qwen2_5_instruct.jinja",
            description="Qwen2.5 Instruct (default system prompt when none is given)",
            stops=QWEN_STOPS,
            eos_token="<|im_end|>",
        ),
        TemplateFamily(
            name="smollm2",
            template="smollm2.jinja",
            description="SmolLM2 Instruct, the embedded local model (ChatML; default system prompt when none is given)",
            stops=QWEN_STOPS,  # ChatML: the same end-of-turn tokens as Qwen
            eos_token="<|im_end|>",
        ),
        TemplateFamily(
            name="qwen3",
            template="qwen3.jinja",
            description="Qwen3, Qwen3-2507 (thinking on unless enable_thinking=False)",
            stops=QWEN_STOPS,
            eos_token="<|im_end|>",
            render_kwargs=MappingProxyType({"enable_thinking": True}),
        ),
        TemplateFamily(
            name="glm_4_5",
            template="glm_4_5.jinja",
            description="GLM-4.5 / 4.6 (thinking on unless enable_thinking=False)",
            stops=GLM_STOPS,
            eos_token="<|endoftext|>",
            render_kwargs=MappingProxyType({"enable_thinking": True}),
            run_on_markers=GLM_ASSISTANT_OPENERS,
        ),
        TemplateFamily(
            name="minimax_m1",
            template="minimax_m1.jinja",
            description="MiniMax-M1",
            stops=MINIMAX_STOPS,
            eos_token="<end_of_sentence>",
            content_parts=True,
        ),
    )
}


def family_names() -> list[str]:
    """Names of all registered families, in registry order."""
    return list(_FAMILIES)


def get_family(name: str) -> TemplateFamily:
    """Look a family up by name; an unknown name lists the options with a did-you-mean."""
    try:
        return _FAMILIES[name]
    except KeyError:
        raise unknown_choice("chat template family", name, _FAMILIES) from None


def split_run_on(text: str, markers: Sequence[str]) -> tuple[str, str | None]:
    """``text`` cut where the assistant's turn begins (the first of ``markers``, with the line break the
    template writes before it): the user's words, and the assistant's part (None when there is none).

    Its limit: a provider that also strips the marker, or a reply that opens without it, leaves
    nothing to find; such a run-on stays in the user's words, undetected.
    """
    found = [i for i in (text.find(m) for m in markers) if i >= 0]
    if not found:
        return text, None
    at = min(found)
    cut = at - 1 if at > 0 and text[at - 1] == "\n" else at
    return text[:cut], text[cut:]
