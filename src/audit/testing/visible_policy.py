"""A scripted ``technique=auto`` auditor that decides from the request it received, and nothing else.

The hidden-fact bench (``bench/bench_tool_menu.py``) asks whether the bounded auditor context
(``auditor.context=ledger``) finds what the full transcript finds. A policy fixed in advance cannot
answer that: its actions would be the same whatever the auditor is shown. This one keeps no state
between turns. Each turn it reads its own request: the target draws it shows (their iteration,
draw number, technique and conversation, from the ``auto_draw`` headers), the draws left (from the
turn's message, or at turn 1 the audit's total from the system prompt), the conversations the
ledger note lists with the role of their last turn, and nothing of what the request leaves out.
So under ``full`` it can follow up any conversation it ever opened; under ``ledger/k`` those with
a draw in the turns still shown (the window is contiguous up to the present, so the latest draw
shown of a conversation is its latest draw) and those the note names. With ``read_note=False`` it
ignores the note's list: the control that shows what a context that names no older conversation
loses. It cites only an excerpt it can see, copied from the newest draw shown.

Its choice is uniform over the actions that fit what it sees (a fresh ``user_persona``,
``assistant`` or ``prefill`` probe, a ``raw_text``, a batch of 3 when 3 draws are left, or a
``followup_user`` continuation of each shown conversation that ends with an assistant reply),
drawn from a generator seeded by (seed, turn): deterministic per seed, so two contexts run with
the same seed make the same choice whenever they show the same options (a paired comparison),
and a resumed run asks the same. An LLM auditor could follow it: every input it uses is text in
its request.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audit.censorship.prompts import load
from audit.testing.scripted_audit import probe_text

_DRAW = re.compile(r"^<<<TARGET DRAW iteration=(?P<iteration>\d+) draw=(?P<draw>\d+) \((?P<technique>[a-z_]+)"
                   r"(?:, conversation (?P<conversation>[^,]+), branch [^)]+)?\)>>>\n(?P<text>.*?)\n<<<END TARGET DRAW>>>",
                   re.S | re.M)
"""One draw as ``prompts/auto_draw.txt`` shows it to the auditor."""
_DIGEST = re.compile(r"^<<<BATCH DIGEST iteration=(?P<iteration>\d+)>>>\n(?P<lines>.*?)\n<<<END BATCH DIGEST>>>", re.S | re.M)
_DIGEST_LINE = re.compile(r"^\[draw (?P<draw>\d+)\] \(\d+ chars\) (?P<text>.*)$", re.M)
"""A batch as ``prompts/auto_batch*.txt`` shows it: one line per draw with the start of its text."""
_NOTED_OPENING = load("context_ledger_conversations").split("{conversations}")[0]
_NOTED = re.compile(r"(?P<conversation>c\d+) \[(?P<role>[a-z]+)\]")
"""The ledger note's list of the conversations it left out (``prompts/context_ledger_conversations.txt``)."""
_LEFT = re.compile(r"(\d+) target draw\(s\) left")
_TOTAL = re.compile(r"The audit has (\d+) target draws in all")
ASSISTANT_TURNS = frozenset({"assistant", "prefill", "few_shot"})
"""Techniques whose draw is an assistant turn (``user_persona`` and ``followup_user`` write user turns)."""
BATCH = 3
EXCERPT_CHARS = 40


@dataclass(frozen=True)
class Shown:
    """A target draw as the request shows it."""

    iteration: int
    draw: int
    technique: str
    conversation: str | None
    text: str


def shown_draws(messages: Sequence[Mapping[str, Any]]) -> list[Shown]:
    """Every target draw the request shows, oldest first: whole draws, and a batch's draws by the
    start of their text (in no conversation). The auditor's own replies are not read: an action it
    chose is known by the draw it produced."""
    found: list[Shown] = []
    for message in messages:
        if message["role"] != "user":
            continue
        content = str(message["content"])
        found += [Shown(int(m["iteration"]), int(m["draw"]), m["technique"], m["conversation"], m["text"])
                  for m in _DRAW.finditer(content)]
        found += [Shown(int(batch["iteration"]), int(line["draw"]), "batch", None, line["text"])
                  for batch in _DIGEST.finditer(content) for line in _DIGEST_LINE.finditer(batch["lines"])]
    return sorted(found, key=lambda d: (d.iteration, d.draw))


def draws_left(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The draws left as the last turn message says, or at turn 1 the audit's total (system prompt)."""
    users = [str(m["content"]) for m in messages if m["role"] == "user"]
    said = _LEFT.findall(users[-1]) if users else []
    if said:
        return int(said[-1])
    total = _TOTAL.search(str(messages[0]["content"])) if messages else None
    return int(total[1]) if total else None


def noted(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The conversations the ledger note names (id -> role of their last turn); none under ``full``."""
    found: dict[str, str] = {}
    for message in messages:
        for line in str(message["content"]).splitlines() if message["role"] == "user" else ():
            if line.startswith(_NOTED_OPENING):
                found |= {m["conversation"]: m["role"] for m in _NOTED.finditer(line[len(_NOTED_OPENING):])}
    return found


def followable(draws: Sequence[Shown], listed: Mapping[str, str]) -> list[str]:
    """The conversations whose last turn is an assistant reply (a ``followup_user`` fits): by their
    latest shown draw, or as the ledger note lists those it left out."""
    latest = {d.conversation: d.technique in ASSISTANT_TURNS for d in draws if d.conversation}
    ends = {c: role == "assistant" for c, role in listed.items()} | latest
    return sorted((c for c, assistant in ends.items() if assistant), key=lambda c: int(c[1:]))


def options(turn: int, messages: Sequence[Mapping[str, Any]], *, read_note: bool = True) -> list[dict[str, Any]]:
    """The actions that fit what the request shows, in a fixed order (``read_note=False``: as if the
    ledger note named no conversation, the control that shows the bench can see a context lose)."""
    probe = probe_text(turn)
    fresh: list[dict[str, Any]] = [
        {"kind": "user_persona", "prompt": probe, "system": None},
        {"kind": "assistant", "prompt": probe, "system": None},
        {"kind": "prefill", "prompt": probe, "prefill": "Sure,", "system": None},
        {"kind": "raw_text", "text": f"Notes, {probe}"}]
    left = draws_left(messages)
    if left is None or left >= BATCH:
        fresh.append({"kind": "batch", "of": "user_persona", "prompts": [probe] * BATCH, "prefill": None,
                      "system": None})
    return fresh + [{"kind": "continue", "conversation": c, "mode": "followup_user", "prompt": None, "prefill": None}
                    for c in followable(shown_draws(messages), noted(messages) if read_note else {})]


def excerpt(text: str) -> str:
    """A verbatim piece of a shown draw's text, the only kind of quote it cites: its last words (a
    prefill's opening, the auditor's own, comes first), or the first ones of a digest line cut with
    an ellipsis."""
    text = text.strip()
    return text[:-1][:EXCERPT_CHARS].strip() if text.endswith("…") else text[-EXCERPT_CHARS:].strip()


@dataclass(frozen=True)
class VisiblePolicy:
    """The policy for one seed: ``policy(turn, messages)`` gives the turn's action and its citation."""

    seed: int
    read_note: bool = True

    def __call__(self, turn: int, messages: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], tuple[int, int, str]]:
        action = random.Random(f"{self.seed}/{turn}").choice(options(turn, messages, read_note=self.read_note))
        draws = shown_draws(messages)
        newest = draws[-1] if draws else Shown(turn - 1, 1, "", None, "")
        return action, (newest.iteration, newest.draw, excerpt(newest.text))
