"""The auditor's context builder: ``full`` is the transcript, ``ledger`` a bounded view of it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from audit.censorship.auditor_context import FULL, LEDGER, AuditorContext, Caching, auditor_label, caching_of, choose, \
    conversation_ends, exchange, ledger_messages, stable_prefix
from audit.censorship.conversations import Tree
from audit.censorship.state import conversation_after
from audit.record.draws import Draw
from audit.censorship.prompts import load

SYSTEM = "system prompt"


def hypotheses(t: int) -> list[dict[str, Any]]:
    return [{"id": "h1", "type": "knowledge", "hypothesis": "knows", "confidence": "low",
             "supporting_evidence": [{"iteration": t - 1, "excerpt": f"quote {t - 1}", "verified": t % 2 == 0,
                                      "reason": "not found"}],
             "contradicting_evidence": []}] if t > 1 else []


def saved_turns(n: int, *, reasked: int | None = None) -> dict[int, dict[str, Any]]:
    """Turns 1..n as the full-mode loop saves them (turn ``reasked`` with one re-asked reply)."""
    turns: dict[int, dict[str, Any]] = {}
    conversation = [{"role": "system", "content": SYSTEM}]
    for t in range(1, n + 1):
        messages = [*conversation, {"role": "user", "content": f"ITERATION {t - 1}: message {t}"}]
        attempts = []
        if t == reasked:
            messages += [{"role": "assistant", "content": "broken"}, {"role": "user", "content": "re-ask"}]
            attempts = [{"raw_response": "broken", "error": "bad"}]
        strategy = ("direct_factual", "hypothetical")[t % 2]
        turns[t] = {"iteration": t, "input_messages": messages, "attempts": attempts,
                    "raw_response": json.dumps({"turn": t}),
                    "parsed": {"hypotheses": hypotheses(t), "prompt_strategy": strategy}}
        conversation = conversation_after(turns[t])
    return turns


def full_request(turns: dict[int, dict[str, Any]], message: str) -> list[dict[str, Any]]:
    return [*conversation_after(turns[max(turns)]), {"role": "user", "content": message}]


@pytest.mark.parametrize("keep", [1, 2, 4])
def test_ledger_is_the_full_transcript_until_turns_are_left_out(keep):
    for n in range(1, keep + 1):
        turns = saved_turns(n)
        assert ledger_messages(SYSTEM, turns, "next", keep=keep) == full_request(turns, "next")
    assert ledger_messages(SYSTEM, {}, "first", keep=keep) == [{"role": "system", "content": SYSTEM},
                                                               {"role": "user", "content": "first"}]


def test_ledger_shows_the_last_turns_and_names_the_older_ones():
    turns = saved_turns(9, reasked=8)
    messages = ledger_messages(SYSTEM, turns, "next", keep=2)
    assert [m["role"] for m in messages] == ["system", "user", "user", "assistant", "user", "assistant", "user"]
    note = messages[1]["content"]
    assert "iterations 1-7 are not shown" in note
    assert "direct_factual x3, hypothetical x4" in note  # counted, not listed: the note does not grow
    assert load("context_ledger_reply") in note and '"verified"' not in note
    # turn 8's re-asked pair is not repeated: its own message and its accepted reply only
    assert messages[2:6] == [*exchange(turns[8]), *exchange(turns[9])]
    assert messages[2]["content"] == "ITERATION 7: message 8" and messages[3]["content"] == json.dumps({"turn": 8})
    assert messages[-1] == {"role": "user", "content": "next"}


def test_without_turns_in_full_the_note_restates_the_hypotheses_with_their_marks():
    turns = saved_turns(4)
    messages = ledger_messages(SYSTEM, turns, "next", keep=0)
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    restated = messages[1]["content"].split(load("context_ledger_hypotheses").split("{hypotheses}")[0])[1]
    (h1,) = json.loads(restated.strip())
    assert h1["supporting_evidence"] == [{"iteration": 3, "excerpt": "quote 3", "verified": True}]  # no reason


def test_a_note_is_the_same_size_at_every_length():
    sizes = {len(ledger_messages(SYSTEM, saved_turns(n), "next", keep=2)[1]["content"]) for n in range(12, 20)}
    assert max(sizes) - min(sizes) <= 2  # the span's digits only


def test_the_note_names_the_conversations_left_out_with_the_role_of_their_last_turn():
    ends = {"c1": (2, "assistant"), "c2": (5, "user"), "c3": (8, "assistant")}  # c3's latest draw is shown
    note = ledger_messages(SYSTEM, saved_turns(9), "next", keep=2, conversations=ends)[1]["content"]
    listed = note.split(load("context_ledger_conversations").split("{conversations}")[0])[1]
    assert listed == "c1 [assistant], c2 [user].\n" + load("context_ledger_reply")
    assert ledger_messages(SYSTEM, saved_turns(2), "next", keep=2, conversations=ends) == \
        ledger_messages(SYSTEM, saved_turns(2), "next", keep=2)  # nothing left out, no note


def test_conversation_ends_follow_the_active_branch():
    saved = [{"id": "1.1", "conversation": "c1", "branch": "c1.b1", "parent": None, "role": "assistant",
              "user": "q", "raw_response": "a", "messages_sent": [{"role": "user", "content": "q"}]},
             {"id": "3.1", "conversation": "c1", "branch": "c1.b1", "parent": "1.1", "role": "user",
              "opening": "", "raw_response": "more?"}]
    draws = [Draw.model_validate({**d, "iteration": int(d["id"].split(".")[0]), "technique": "assistant",
                                  "auto": True}) for d in saved]
    assert conversation_ends(Tree.of(draws)) == {"c1": (3, "user")}
    assert conversation_ends(Tree.of(draws[:1])) == {"c1": (1, "assistant")}


def test_stable_prefix_is_the_system_prompt_and_under_full_the_whole_request():
    messages = full_request(saved_turns(3), "next")
    assert stable_prefix(AuditorContext(FULL), messages) == (0, len(messages) - 1)
    assert stable_prefix(AuditorContext(LEDGER, 2), messages) == (0,)


@pytest.mark.parametrize(("node", "error"), [
    ({"context": "summary"}, "auditor.context='summary' is not one of auto, full, ledger"),
    ({"context": "auto"}, "auditor.context=auto is settled when a run starts"),
    ({"context": "ledger", "context_turns": -1}, "auditor.context_turns=-1 should be a whole number"),
    ({"context": "ledger", "context_turns": "2"}, "auditor.context_turns='2' should be a whole number"),
])
def test_bad_settings_name_the_fix(node, error):
    with pytest.raises(ValueError, match="e.g. auditor.context") as raised:
        AuditorContext.from_node(node)
    assert str(raised.value).startswith(error)


def test_a_config_without_the_knob_is_a_full_run():
    """Runs saved before the knob existed showed the auditor everything: a resume must go on so."""
    assert AuditorContext.from_node({}) == AuditorContext(FULL, 2)
    assert AuditorContext.from_node({"context": "ledger", "context_turns": 3}).label() == "ledger/3"


def test_a_comparison_keeps_the_contexts_apart():
    assert auditor_label({"name": "claude_sonnet_4"}) == "claude_sonnet_4"  # saved before the knob: full
    assert auditor_label({"name": "claude_sonnet_4", "context": "full"}) == "claude_sonnet_4"
    assert auditor_label({"name": "claude_sonnet_4", "context": "ledger", "context_turns": 3}) == \
        "claude_sonnet_4 [ledger/3]"


TABLE = [{"prefix": "anthropic/", "read": 0.1, "write": 1.25, "full_until": 31},
         {"prefix": "openai/", "read": 0.25, "write": 1.0, "full_until": 13},
         {"prefix": "openai/gpt-4o", "read": 0.5, "write": 1.0, "full_until": 8}]


@pytest.mark.parametrize(("model", "iterations", "mode"), [
    ("anthropic/claude-sonnet-4", 20, FULL), ("anthropic/claude-sonnet-4", 31, FULL),  # at or below its break-even
    ("anthropic/claude-sonnet-4", 32, LEDGER), ("anthropic/claude-sonnet-4", 50, LEDGER),  # beyond it
    ("openai/gpt-4.1", 13, FULL), ("openai/gpt-4.1", 14, LEDGER),
    ("openai/gpt-4o-mini", 9, LEDGER),  # the longest prefix decides: its own break-even
    ("qwen/qwen3-235b", 2, LEDGER),  # a provider that caches nothing: the ledger at any length
])
def test_auto_chooses_full_within_a_caching_providers_break_even_and_the_ledger_beyond(model, iterations, mode):
    chosen, why = choose(model, "openrouter", iterations, TABLE)
    assert chosen == mode
    assert f"max_iterations={iterations}" in why if model != "qwen/qwen3-235b" else "caches nothing" in why
    context = AuditorContext.from_node({"context": "auto", "model": model, "context_turns": 3},
                                       max_iterations=iterations, table=TABLE)
    assert (context.mode, context.turns, context.why) == (mode, 3, why)


def test_auto_gives_a_local_auditor_the_ledger_and_a_named_mode_stays():
    assert choose("anthropic/claude-sonnet-4", "local", 2, TABLE)[0] == LEDGER  # its small context window
    node = {"context": "full", "model": "qwen/qwen3-235b"}
    assert AuditorContext.from_node(node, max_iterations=99, table=TABLE) == AuditorContext(FULL, 2)


def test_the_caching_table_is_checked():
    assert caching_of("anthropic/claude-sonnet-4", TABLE) == Caching("anthropic/", 0.1, 1.25, 31)
    with pytest.raises(ValueError, match="should have prefix, read, write and full_until"):
        caching_of("x/y", [{"prefix": "x/", "read": 0.1}])
    with pytest.raises(ValueError, match="prices >= 0"):
        caching_of("x/y", [{"prefix": "x/", "read": -1, "write": 1, "full_until": 3}])


@pytest.mark.parametrize("conversations", [None, {}])
def test_the_note_never_invites_citing_what_is_out_of_sight(conversations):
    """The older responses are not in the request: the note says not to cite them, and under
    technique=auto (conversations given) how to read one again."""
    note = ledger_messages(SYSTEM, saved_turns(6), "next", keep=2, conversations=conversations)[1]["content"]
    assert "cite only excerpts you can read in this conversation" in note and "may still cite" not in note
    assert (load("context_ledger_reopen") in note) == (conversations is not None)
