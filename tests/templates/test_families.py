"""Family prompts against strings written by reading each official template by hand."""

from __future__ import annotations

import pytest

from audit.errors import UserError
from audit.templates import cut_at_stops, family_names, get_family, split_run_on
from audit.templates.families import SENTINEL

BOS = "<｜begin▁of▁sentence｜>"
HISTORY = ({"role": "user", "content": "U1"}, {"role": "assistant", "content": "A1"})
KIMI_SYS = "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>"
KIMI_THINKING_SYS = "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>"
QWEN25_SYS = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
MINIMAX_USER = "<beginning_of_sentence>user name=user\n"
SMOL_SYS = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"

NO_SYSTEM = {
    "deepseek_v3": BOS + "<｜User｜>",
    "deepseek_v3_1": BOS + "<｜User｜>",
    "deepseek_r1": BOS + "<｜User｜>",
    "deepseek_legacy": BOS + "<｜User｜>",
    "kimi_k2": KIMI_SYS + "<|im_user|>user<|im_middle|>",
    "kimi_k2_thinking": KIMI_THINKING_SYS + "<|im_user|>user<|im_middle|>",
    "kimi_k2_legacy": "<|im_system|>system<|im_middle|><|im_end|>\n<|im_user|>user<|im_middle|>",
    "qwen2_5": QWEN25_SYS + "<|im_start|>user\n",
    "qwen3": "<|im_start|>user\n",
    "smollm2": SMOL_SYS + "<|im_start|>user\n",
    "glm_4_5": "[gMASK]<sop><|user|>\n",
    "minimax_m1": "<begin_of_document>" + MINIMAX_USER,
}

WITH_SYSTEM = {
    "deepseek_v3": BOS + "SYS<｜User｜>",
    "deepseek_v3_1": BOS + "SYS<｜User｜>",
    "deepseek_r1": BOS + "SYS<｜User｜>",
    "kimi_k2": "<|im_system|>system<|im_middle|>SYS<|im_end|><|im_user|>user<|im_middle|>",
    "kimi_k2_thinking": "<|im_system|>system<|im_middle|>SYS<|im_end|><|im_user|>user<|im_middle|>",
    "qwen2_5": "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\n",
    "qwen3": "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\n",
    "smollm2": "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\n",
    "glm_4_5": "[gMASK]<sop><|system|>\nSYS<|user|>\n",
    "minimax_m1": "<begin_of_document><beginning_of_sentence>system ai_setting=assistant\nSYS<end_of_sentence>\n"
    + MINIMAX_USER,
}

WITH_HISTORY = {
    "deepseek_v3": BOS + "<｜User｜>U1<｜Assistant｜>A1<｜end▁of▁sentence｜><｜User｜>",
    "deepseek_v3_1": BOS + "<｜User｜>U1<｜Assistant｜></think>A1<｜end▁of▁sentence｜><｜User｜>",
    "deepseek_r1": BOS + "<｜User｜>U1<｜Assistant｜>A1<｜end▁of▁sentence｜><｜User｜>",
    "kimi_k2": KIMI_SYS
    + "<|im_user|>user<|im_middle|>U1<|im_end|><|im_assistant|>assistant<|im_middle|>A1<|im_end|>"
    + "<|im_user|>user<|im_middle|>",
    "kimi_k2_thinking": KIMI_THINKING_SYS
    + "<|im_user|>user<|im_middle|>U1<|im_end|><|im_assistant|>assistant<|im_middle|><think></think>A1<|im_end|>"
    + "<|im_user|>user<|im_middle|>",
    "qwen2_5": QWEN25_SYS
    + "<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\n",
    "qwen3": "<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\n",
    "smollm2": SMOL_SYS
    + "<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\n",
    "glm_4_5": "[gMASK]<sop><|user|>\nU1<|assistant|>\n<think></think>\nA1<|user|>\n",
    "minimax_m1": "<begin_of_document>"
    + MINIMAX_USER
    + "U1<end_of_sentence>\n<beginning_of_sentence>ai name=assistant\nA1<end_of_sentence>\n"
    + MINIMAX_USER,
}

LEGACY = {"deepseek_legacy", "kimi_k2_legacy"}
OFFICIAL = [name for name in NO_SYSTEM if name not in LEGACY]


def test_registry_holds_exactly_the_expected_families() -> None:
    assert sorted(family_names()) == sorted(NO_SYSTEM)


@pytest.mark.parametrize("name", list(NO_SYSTEM))
def test_prefix_without_system(name: str) -> None:
    assert get_family(name).user_persona_prefix() == NO_SYSTEM[name]


@pytest.mark.parametrize("name", list(WITH_SYSTEM))
def test_prefix_with_system(name: str) -> None:
    assert get_family(name).user_persona_prefix(system="SYS") == WITH_SYSTEM[name]


@pytest.mark.parametrize("name", list(WITH_HISTORY))
def test_prefix_with_history(name: str) -> None:
    assert get_family(name).user_persona_prefix(history=HISTORY) == WITH_HISTORY[name]


def test_prefix_with_system_and_history() -> None:
    prefix = get_family("qwen2_5").user_persona_prefix(system="SYS", history=HISTORY)
    assert prefix == (
        "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n"
        "<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\n"
    )


def test_empty_system_replaces_the_default_one() -> None:
    assert get_family("kimi_k2").user_persona_prefix(system="") == (
        "<|im_system|>system<|im_middle|><|im_end|><|im_user|>user<|im_middle|>"
    )


def test_kimi_official_differs_from_the_spec_string_only_by_the_newline() -> None:
    official = get_family("kimi_k2").user_persona_prefix(system="")
    legacy = get_family("kimi_k2_legacy").user_persona_prefix()
    assert legacy.replace("<|im_end|>\n", "<|im_end|>") == official
    assert legacy != official


def test_user_persona_prompt_appends_the_probe() -> None:
    prompt = get_family("deepseek_v3").user_persona_prompt("I want to know about")
    assert prompt == BOS + "<｜User｜>I want to know about"


@pytest.mark.parametrize("name", sorted(LEGACY))
@pytest.mark.parametrize("kwargs", [{"system": "SYS"}, {"history": HISTORY}])
def test_legacy_prefix_has_no_slot_for_system_or_history(name: str, kwargs: dict) -> None:
    official = {"deepseek_legacy": "deepseek_v3", "kimi_k2_legacy": "kimi_k2"}[name]
    with pytest.raises(UserError, match=rf"{name}.*no slot.*'{official}'"):
        get_family(name).user_persona_prefix(**kwargs)


def test_legacy_variants_chat_like_their_official_family() -> None:
    messages = [{"role": "user", "content": "Q"}]
    for legacy, official in (("deepseek_legacy", "deepseek_v3"), ("kimi_k2_legacy", "kimi_k2")):
        assert get_family(legacy).assistant_prompt(messages) == get_family(official).assistant_prompt(messages)
        assert get_family(legacy).prefill_prompt(messages, "P") == get_family(official).prefill_prompt(messages, "P")


ASSISTANT = {
    "deepseek_v3": BOS + "SYS<｜User｜>Q<｜Assistant｜>",
    "deepseek_v3_1": BOS + "SYS<｜User｜>Q<｜Assistant｜></think>",
    "deepseek_r1": BOS + "SYS<｜User｜>Q<｜Assistant｜><think>\n",
    "kimi_k2": "<|im_system|>system<|im_middle|>SYS<|im_end|><|im_user|>user<|im_middle|>Q<|im_end|>"
    "<|im_assistant|>assistant<|im_middle|>",
    "qwen3": "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n",
    "glm_4_5": "[gMASK]<sop><|system|>\nSYS<|user|>\nQ<|assistant|>",
    "minimax_m1": "<begin_of_document><beginning_of_sentence>system ai_setting=assistant\nSYS<end_of_sentence>\n"
    + MINIMAX_USER
    + "Q<end_of_sentence>\n<beginning_of_sentence>ai name=assistant\n",
}


@pytest.mark.parametrize("name", list(ASSISTANT))
def test_assistant_prompt(name: str) -> None:
    messages = [{"role": "system", "content": "SYS"}, {"role": "user", "content": "Q"}]
    assert get_family(name).assistant_prompt(messages) == ASSISTANT[name]


def test_thinking_flags_change_the_assistant_turn() -> None:
    messages = [{"role": "user", "content": "Q"}]
    qwen3 = get_family("qwen3").with_render_kwargs(enable_thinking=False)
    assert qwen3.assistant_prompt(messages).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert get_family("qwen3").render_kwargs["enable_thinking"] is True  # original untouched
    v31 = get_family("deepseek_v3_1").with_render_kwargs(thinking=True)
    assert v31.assistant_prompt(messages) == BOS + "<｜User｜>Q<｜Assistant｜><think>"
    glm = get_family("glm_4_5").with_render_kwargs(enable_thinking=False)
    assert glm.assistant_prompt(messages) == "[gMASK]<sop><|user|>\nQ/nothink<|assistant|>\n<think></think>"


PREFILL = {
    "deepseek_v3": BOS + "<｜User｜>Q<｜Assistant｜>Sure,",
    "deepseek_v3_1": BOS + "<｜User｜>Q<｜Assistant｜></think>Sure,",
    "deepseek_r1": BOS + "<｜User｜>Q<｜Assistant｜>Sure,",
    "kimi_k2_thinking": KIMI_THINKING_SYS
    + "<|im_user|>user<|im_middle|>Q<|im_end|><|im_assistant|>assistant<|im_middle|><think></think>Sure,",
    "qwen2_5": QWEN25_SYS + "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nSure,",
    "qwen3": "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nSure,",
    "glm_4_5": "[gMASK]<sop><|user|>\nQ<|assistant|>\n<think></think>\nSure,",
}


@pytest.mark.parametrize("name", list(PREFILL))
def test_prefill_prompt(name: str) -> None:
    assert get_family(name).prefill_prompt([{"role": "user", "content": "Q"}], "Sure,") == PREFILL[name]


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1", "deepseek_r1", "qwen3", "glm_4_5"])
def test_reasoning_in_assistant_history_is_dropped_like_the_template_does(name: str) -> None:
    history = [{"role": "user", "content": "U1"}, {"role": "assistant", "content": "<think>secret</think>answer"}]
    prefix = get_family(name).user_persona_prefix(history=history)
    assert "answer" in prefix and "secret" not in prefix


@pytest.mark.parametrize("name", family_names())
def test_user_turn_ends_with_one_of_the_family_stops(name: str) -> None:
    """Whatever the template writes right after a user's words must be caught by a stop."""
    family = get_family(name)
    rendered = family.assistant_prompt([{"role": "user", "content": "PROBE"}])
    after_user = rendered.split("PROBE", 1)[1]
    assert cut_at_stops(after_user, family.stops) == ""


CHINESE = '他说："六四天安门" 是\'什么\'？ <b>&amp; \\n {{ x }}'


@pytest.mark.parametrize("name", family_names())
def test_every_family_renders_and_keeps_text_verbatim(name: str) -> None:
    family = get_family(name)
    history = [] if name in LEGACY else [{"role": "user", "content": CHINESE}, {"role": "assistant", "content": CHINESE}]
    system = None if name in LEGACY else CHINESE
    prompt = family.user_persona_prompt(CHINESE, system=system, history=history)
    assert prompt.endswith(CHINESE)
    assert prompt.count(CHINESE) == (1 if name in LEGACY else 4)
    messages = [{"role": "system", "content": CHINESE}, {"role": "user", "content": CHINESE}]
    assert family.assistant_prompt(messages).count(CHINESE) == 2
    assert family.prefill_prompt(messages, CHINESE).endswith(CHINESE)


def test_sentinel_in_user_text_is_refused() -> None:
    with pytest.raises(UserError, match="2 times instead of once"):
        get_family("qwen3").user_persona_prefix(system=SENTINEL)


def test_bad_message_is_a_user_error() -> None:
    with pytest.raises(UserError, match="Bad chat message.*role"):
        get_family("qwen3").assistant_prompt([{"role": "robot", "content": "hi"}])
    with pytest.raises(UserError, match="string content"):
        get_family("deepseek_v3").user_persona_prefix(history=[{"role": "user", "content": None}])


def test_assistant_prompt_needs_a_message() -> None:
    with pytest.raises(UserError, match="at least one message"):
        get_family("qwen2_5").assistant_prompt([])


def test_unknown_family_lists_options_with_did_you_mean() -> None:
    with pytest.raises(UserError) as info:
        get_family("deepseek_v4")
    message = str(info.value)
    assert message.startswith("Unknown chat template family 'deepseek_v4'. Did you mean 'deepseek_v3'")
    assert all(name in message.split("Available: ")[1] for name in family_names())


@pytest.mark.parametrize(
    ("text", "stops", "expected"),
    [
        ("abc<|user|>def<|assistant|>", ("<|assistant|>", "<|user|>"), "abc"),  # earliest wins, not first listed
        ("no stop here", ("<|im_end|>",), "no stop here"),
        ("<｜Assistant｜>reply", ("<｜end▁of▁sentence｜>", "<｜Assistant｜>"), ""),
        ("abc", (), "abc"),
        ("abc", ("", "c"), "ab"),  # an empty stop marks nothing
        ("a<|im_end|>", ("<|im_end|>", "<|im"), "a"),  # overlapping stops at the same place
    ],
)
def test_cut_at_stops(text: str, stops: tuple[str, ...], expected: str) -> None:
    assert cut_at_stops(text, stops) == expected


@pytest.mark.parametrize(("text", "user", "run_on"), [
    (" I was there.\n<think>The user</think>\nSorry.", " I was there.", "\n<think>The user</think>\nSorry."),
    (" I was there.</think>\nSorry.", " I was there.", "</think>\nSorry."),
    ("<think></think>\nSorry.", "", "<think></think>\nSorry."),
    (" I was there, thinking hard.", " I was there, thinking hard.", None),  # the word, not the marker
])
def test_a_glm_run_on_is_cut_where_the_assistant_turn_opens(text: str, user: str, run_on: str | None) -> None:
    family = get_family("glm_4_5")
    assert split_run_on(text, family.run_on_markers) == (user, run_on)
    assert split_run_on(text, get_family("deepseek_v3").run_on_markers) == (text, None)  # no marker for it
