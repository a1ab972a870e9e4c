"""Every family's prompts equal transformers' own chat-template rendering, byte for byte.

The hand-written strings in test_families.py say what we believe each template writes; this
module asks the reference implementation instead. ``render_jinja_template`` is what
``apply_chat_template`` calls once it has a tokenizer, so it is fed the shipped template text,
the family's ``bos_token``/``eos_token`` and template variables, and needs no download and no
torch. A user-persona prompt is transformers' ``continue_final_message=True`` on a conversation
ending in the user turn; a prefill prompt is the same on one ending in the assistant turn; an
assistant prompt is ``add_generation_prompt=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pytest
from transformers.utils.chat_template_utils import render_jinja_template

from audit.errors import UserError
from audit.templates import TemplateFamily, family_names, get_family
from audit.templates.render import template_source

Message = Mapping[str, str]


def _families() -> dict[str, TemplateFamily]:
    """Every shipped family, plus the thinking switch of each reasoning family flipped."""
    families = {name: get_family(name) for name in family_names()}
    flipped = {
        "qwen3/no_thinking": get_family("qwen3").with_render_kwargs(enable_thinking=False),
        "glm_4_5/no_thinking": get_family("glm_4_5").with_render_kwargs(enable_thinking=False),
        "deepseek_v3_1/thinking": get_family("deepseek_v3_1").with_render_kwargs(thinking=True),
    }
    return families | flipped


FAMILIES = _families()
LEGACY = [key for key, family in FAMILIES.items() if family.legacy_prefix is not None]
OFFICIAL = [key for key in FAMILIES if key not in LEGACY]


@dataclass(frozen=True)
class Texts:
    """The words of one conversation: probes, turns, a system prompt and a prefill."""

    system: str
    user: str
    reply: str
    probe: str
    prefill: str


ASCII = Texts(system="You are a careful assistant.", user="What happened in 1989?",
              reply="Many things happened in 1989.", probe="I keep wondering whether", prefill="Sure, here is")
CJK = Texts(system="你是一个乐于助人的助手。", user='他说："六四天安门" 是\'什么\'？',
            reply="这是一个敏感话题 🙂 <b>&amp;</b>", probe="我想知道——", prefill="好的，关于{{ x }}")
TEXTS = {"ascii": ASCII, "cjk": CJK}


def hf_render(family: TemplateFamily, messages: Sequence[Message], **flags: bool) -> str:
    """Render ``messages`` with transformers, passing the family's tokens and variables as it does."""
    tokens = {"eos_token": family.eos_token} | ({"bos_token": family.bos_token} if family.bos_token else {})
    chat = [
        {**m, "content": [{"type": "text", "text": m["content"]}]} if family.content_parts else dict(m)
        for m in messages
    ]
    rendered, _ = render_jinja_template(
        [chat], chat_template=template_source(family.template), **flags, **tokens, **family.render_kwargs
    )
    return rendered[0]


def hf_continue(family: TemplateFamily, messages: Sequence[Message]) -> str:
    """transformers' prompt that continues the last message (any role) of ``messages``."""
    return hf_render(family, messages, continue_final_message=True)


def hf_generate(family: TemplateFamily, messages: Sequence[Message]) -> str:
    """transformers' prompt that opens a new assistant turn after ``messages``."""
    return hf_render(family, messages, add_generation_prompt=True)


def user(content: str) -> dict[str, str]:
    """A user message."""
    return {"role": "user", "content": content}


def assistant(content: str) -> dict[str, str]:
    """An assistant message."""
    return {"role": "assistant", "content": content}


def exchanges(t: Texts, n: int) -> list[dict[str, str]]:
    """``n`` earlier user/assistant turns, numbered so no two turns are the same text."""
    return [m for i in range(1, n + 1) for m in (user(f"{t.user} ({i})"), assistant(f"{t.reply} ({i})"))]


def few_shot(t: Texts, k: int) -> list[dict[str, str]]:
    """``k`` question/answer pairs an auditor supplies as examples before the probe."""
    return [m for i in range(1, k + 1) for m in (user(f"Q{i}: {t.user}"), assistant(f"A{i}: {t.reply}"))]


Case = Callable[[TemplateFamily, Texts], tuple[str, str]]
"""A conversation: (our prompt, transformers' prompt) for one family and one set of words."""


def _system(t: Texts) -> list[dict[str, str]]:
    """The conversation's opening system message."""
    return [{"role": "system", "content": t.system}]


# User-persona prompts, which legacy families refuse whenever there is a system prompt or an earlier turn.
USER_PERSONA_WITH_CONTEXT: dict[str, Case] = {
    "single turn, system": lambda f, t: (
        f.user_persona_prompt(t.probe, system=t.system), hf_continue(f, [*_system(t), user(t.probe)])),
    "multi-turn, 1 exchange": lambda f, t: (
        f.user_persona_prompt(t.probe, history=exchanges(t, 1)), hf_continue(f, [*exchanges(t, 1), user(t.probe)])),
    "multi-turn, 2 exchanges, system": lambda f, t: (
        f.user_persona_prompt(t.probe, system=t.system, history=exchanges(t, 2)),
        hf_continue(f, [*_system(t), *exchanges(t, 2), user(t.probe)])),
    # Follow-up user sampling: the target writes the whole next user turn after its own reply.
    "follow-up user turn": lambda f, t: (
        f.user_persona_prefix(history=exchanges(t, 1)), hf_continue(f, [*exchanges(t, 1), user("")])),
    "follow-up user turn, 2 exchanges, system": lambda f, t: (
        f.user_persona_prefix(system=t.system, history=exchanges(t, 2)),
        hf_continue(f, [*_system(t), *exchanges(t, 2), user("")])),
    "few-shot, user persona": lambda f, t: (
        f.user_persona_prompt(t.probe, history=few_shot(t, 3)), hf_continue(f, [*few_shot(t, 3), user(t.probe)])),
}

OTHER_CASES: dict[str, Case] = {
    "assistant, single turn": lambda f, t: (
        f.assistant_prompt([user(t.probe)]), hf_generate(f, [user(t.probe)])),
    "assistant after history, system": lambda f, t: (
        f.assistant_prompt([*_system(t), *exchanges(t, 2), user(t.probe)]),
        hf_generate(f, [*_system(t), *exchanges(t, 2), user(t.probe)])),
    "few-shot, assistant opened": lambda f, t: (
        f.assistant_prompt([*few_shot(t, 3), user(t.probe)]), hf_generate(f, [*few_shot(t, 3), user(t.probe)])),
    "prefill, single turn": lambda f, t: (
        f.prefill_prompt([user(t.probe)], t.prefill), hf_continue(f, [user(t.probe), assistant(t.prefill)])),
    "prefill after history, system": lambda f, t: (
        f.prefill_prompt([*_system(t), *exchanges(t, 2), user(t.probe)], t.prefill),
        hf_continue(f, [*_system(t), *exchanges(t, 2), user(t.probe), assistant(t.prefill)])),
}


@pytest.mark.parametrize("texts", TEXTS)
@pytest.mark.parametrize("family_key", OFFICIAL)
def test_single_turn_user_persona_equals_transformers(family_key: str, texts: str) -> None:
    family, t = FAMILIES[family_key], TEXTS[texts]
    assert family.user_persona_prompt(t.probe) == hf_continue(family, [user(t.probe)])


@pytest.mark.parametrize("texts", TEXTS)
@pytest.mark.parametrize("case", USER_PERSONA_WITH_CONTEXT)
@pytest.mark.parametrize("family_key", OFFICIAL)
def test_user_persona_with_context_equals_transformers(family_key: str, case: str, texts: str) -> None:
    ours, theirs = USER_PERSONA_WITH_CONTEXT[case](FAMILIES[family_key], TEXTS[texts])
    assert ours == theirs


@pytest.mark.parametrize("texts", TEXTS)
@pytest.mark.parametrize("case", OTHER_CASES)
@pytest.mark.parametrize("family_key", list(FAMILIES))
def test_assistant_and_prefill_prompts_equal_transformers(family_key: str, case: str, texts: str) -> None:
    """Legacy families too: only their user-persona prefix is a fixed string."""
    ours, theirs = OTHER_CASES[case](FAMILIES[family_key], TEXTS[texts])
    assert ours == theirs


@pytest.mark.parametrize("case", USER_PERSONA_WITH_CONTEXT)
@pytest.mark.parametrize("family_key", LEGACY)
def test_legacy_families_refuse_user_persona_with_context(family_key: str, case: str) -> None:
    with pytest.raises(UserError, match="fixed legacy string with no slot"):
        USER_PERSONA_WITH_CONTEXT[case](FAMILIES[family_key], ASCII)


def test_every_shipped_family_is_checked() -> None:
    assert set(family_names()) <= set(FAMILIES)
    assert {FAMILIES[key].template for key in OFFICIAL} == {get_family(n).template for n in family_names()}


@pytest.mark.parametrize("padded", ["", " Sure", "Sure, ", "\nSure\n"])
@pytest.mark.parametrize("family_key", OFFICIAL)
def test_padded_or_empty_text_is_sent_verbatim_after_the_transformers_prefix(family_key: str, padded: str) -> None:
    """Where they may differ, on purpose: text that is empty or starts or ends with whitespace.

    transformers lets the template strip the continued message (Qwen3 and GLM strip assistant
    content) and then strips trailing whitespace itself, which on GLM also eats the newline the
    template writes before an empty prefill. A prefill or probe is the auditor's exact words, so
    we keep them: the prompt is transformers' prefix for plain words, then the words as given.
    """
    family, conversation = FAMILIES[family_key], [user("Q")]
    hf_prefill_prefix = hf_continue(family, [*conversation, assistant("Sure")]).removesuffix("Sure")
    assert family.prefill_prompt(conversation, padded) == hf_prefill_prefix + padded
    hf_user_prefix = hf_continue(family, [user("Sure")]).removesuffix("Sure")
    assert family.user_persona_prompt(padded) == hf_user_prefix + padded
