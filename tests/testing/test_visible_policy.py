"""The scripted auditor that decides from its own request: it acts only on what the request shows, so
the auditor context changes what it can do (the hidden-fact bench rests on this), end to end
against the loopback server with the real prompt templates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.censorship.loop import run
from audit.testing.replies import TEST_API_KEY
from audit.testing.scripted_audit import Script, audit_config
from audit.testing.server import FakeOpenRouter
from audit.testing.visible_policy import VisiblePolicy, draws_left, followable, noted, options, shown_draws

SEED = 15
"""A seed whose full-context run follows up a conversation older than the turn's own draws (at 5 draws)."""


def audit(server: FakeOpenRouter, out: Path, policy: VisiblePolicy, *context: str) -> list[dict[str, Any]]:
    """One ``technique=auto`` audit of 5 draws with ``policy``; each turn's request and the action chosen."""
    seen = []

    def recording(turn: int, messages: list[dict[str, Any]]):
        action, citation = policy(turn, messages)
        seen.append({"turn": turn, "messages": messages, "action": action})
        return action, citation

    script = Script(policy=recording)
    server.handler = script.handler
    run_dir = run(audit_config(out, "technique=auto", "max_iterations=5", "technique.max_draws=5", *context))
    turns = [json.loads(p.read_text()) for p in sorted((run_dir / "auditor_turns").glob("*.json"))]
    assert all(not t["attempts"] for t in turns)  # every action fit: none was refused and re-asked
    assert all(e.get("verified") for t in turns for h in t["parsed"]["hypotheses"] for e in h["supporting_evidence"])
    return seen


@pytest.fixture
def loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with FakeOpenRouter() as server:
        monkeypatch.setenv("OPENROUTER_API_KEY", TEST_API_KEY)
        monkeypatch.setenv("OPENROUTER_API_BASE", server.base_url)
        monkeypatch.chdir(tmp_path)
        yield server


def continued(seen: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(s["turn"], s["action"]["conversation"]) for s in seen if s["action"]["kind"] == "continue"]


LEDGER0 = ("auditor.context=ledger", "auditor.context_turns=0")


def test_the_context_decides_what_it_can_follow_up(loopback, tmp_path):
    full = audit(loopback, tmp_path / "full", VisiblePolicy(SEED), "auditor.context=full")
    blind = audit(loopback, tmp_path / "blind", VisiblePolicy(SEED, read_note=False), *LEDGER0)
    # Under full it follows up a conversation opened before the previous turn; under ledger/0 that
    # conversation's draws are not in its request, so without the note's list it cannot.
    (turn, conversation), = continued(full)
    assert conversation not in {d.conversation for d in shown_draws(blind[turn - 1]["messages"])}
    assert conversation not in {o.get("conversation") for o in options(turn, blind[turn - 1]["messages"],
                                                                       read_note=False)}
    assert continued(blind) == []
    # Up to the turn where the requests differ, the same seed chose the same actions.
    assert [s["action"] for s in full[:2]] == [s["action"] for s in blind[:2]]
    # The ledger note names it with the role of its last turn, so reading the note it acts as under full.
    noting = audit(loopback, tmp_path / "ledger0", VisiblePolicy(SEED), *LEDGER0)
    assert noted(noting[turn - 1]["messages"])[conversation] == "assistant"
    assert [s["action"] for s in noting] == [s["action"] for s in full]


def test_it_continues_only_what_its_request_shows(loopback, tmp_path):
    for mode in ("full", "ledger"):
        for seed in (6, 13):
            for step in audit(loopback, tmp_path / f"{mode}{seed}", VisiblePolicy(seed), f"auditor.context={mode}"):
                shown = followable(shown_draws(step["messages"]), noted(step["messages"]))
                if step["action"]["kind"] == "continue":
                    assert step["action"]["conversation"] in shown
                assert draws_left(step["messages"]) is not None


def test_the_same_request_gets_the_same_action():
    messages = [{"role": "system", "content": "The audit has 2 target draws in all."},
                {"role": "user", "content": "ITERATION 1: no probe has been sent yet."}]
    assert draws_left(messages) == 2
    assert "batch" not in {o["kind"] for o in options(1, messages)}  # 3 draws do not fit in 2
    picks = {json.dumps(VisiblePolicy(seed)(1, messages)[0]) for seed in range(20)}
    assert len(picks) > 1
    assert all(VisiblePolicy(seed)(1, messages) == VisiblePolicy(seed)(1, messages) for seed in range(20))
