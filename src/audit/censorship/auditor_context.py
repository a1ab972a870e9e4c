"""What the auditor is shown at each turn: the whole transcript, or a context that does not grow with it.

``full`` (the original): every earlier turn's message and reply, so the auditor's request grows by
one turn each iteration and an audit's tokens grow with the square of its length. ``ledger``: the
system prompt, the last ``k`` turns in full, and one note naming the
older turns by id with the strategies their probes used (counted, so the note's size does not grow
with the audit either), so a request stays the size of ``k`` turns plus the note. Under
``technique=auto`` the note also lists, by id, the conversations whose latest turn is in the turns
left out, each with the role of its last turn: without it an auditor could no longer continue or
roll back a conversation it opened more than ``k`` turns ago (the hidden-fact bench measured that
loss: ``bench/bench_tool_menu.py``); the list grows by a few tokens per such conversation. The hypothesis ledger with the evidence it cites is the auditor's own last reply
(every reply restates all hypotheses with their citations, excerpts included), shown in full when
``k >= 1``; with ``k = 0`` the note restates it, each citation with its verified mark. The note is a message
of its own after the system prompt (never folded into a turn's message, which later requests repeat). The full record
of every turn stays in the run dir either way. Up to turn ``k + 1`` the two modes send the same
messages. The note's wording lives in ``prompts/context_ledger.txt``.

Pure: the turns come in as saved records; nothing here reads or writes files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from audit.censorship.conversations import Tree
from audit.censorship.prompts import fill, load
from audit.censorship.schema import EVIDENCE_KEYS

FULL, LEDGER = "full", "ledger"
MODES = (FULL, LEDGER)
SAVED_DEFAULT = FULL
"""The mode of a run whose config names none: every run saved before the knob existed was full."""


@dataclass(frozen=True)
class AuditorContext:
    """``auditor.context`` and ``auditor.context_turns`` (``k``), checked."""

    mode: str = SAVED_DEFAULT
    turns: int = 2

    @classmethod
    def from_node(cls, auditor: Mapping[str, Any]) -> AuditorContext:
        """Read and check the auditor config; a bad value is a ValueError naming the fix."""
        mode = str(auditor.get("context") or SAVED_DEFAULT)
        if mode not in MODES:
            raise ValueError(f"auditor.context={mode!r} is not one of {', '.join(MODES)}; "
                             "e.g. auditor.context=ledger")
        turns = auditor.get("context_turns", cls.turns)
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
            raise ValueError(f"auditor.context_turns={turns!r} should be a whole number >= 0 "
                             "(the turns shown in full), e.g. auditor.context_turns=2")
        return cls(mode, turns)

    def label(self) -> str:
        """How a report names the mode: ``full``, or ``ledger/k``."""
        return self.mode if self.mode == FULL else f"{self.mode}/{self.turns}"


def auditor_label(auditor: Mapping[str, Any]) -> str:
    """The auditor as a comparison names it: its name, and its context when that is not the full
    transcript (two contexts are two auditing conditions, never pooled into one cell)."""
    name = str(auditor.get("name") or auditor.get("model") or "n/a")  # never the string "None"
    try:
        context = AuditorContext.from_node(auditor)
    except ValueError:
        return f"{name} [context {auditor.get('context')!r}]"
    return name if context.mode == FULL else f"{name} [{context.label()}]"


def exchange(turn: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A saved turn's own message and its accepted reply (re-asks and earlier context left out)."""
    messages = turn["input_messages"]
    own = messages[len(messages) - 1 - 2 * len(turn.get("attempts") or [])]
    return [dict(own), {"role": "assistant", "content": turn["raw_response"]}]


def conversation_ends(tree: Tree) -> dict[str, tuple[int, str]]:
    """Each conversation of a ``technique=auto`` tree: the iteration of its latest draw and the role of
    the last turn of its active branch (empty for a fixed technique, whose draws open none)."""
    ends = {}
    for conversation in tree.conversations:
        tip = tree.tip(conversation)
        thread = tree.thread(tip)
        ends[conversation] = (int(tip.split(".")[0]), thread[-1][1]["role"] if thread else "none")
    return ends


def ledger_messages(system: str, turns: Mapping[int, Mapping[str, Any]], message: str, *, keep: int,
                    conversations: Mapping[str, tuple[int, str]] | None = None) -> list[dict[str, Any]]:
    """The ``ledger`` request for the turn after ``turns``: system, the ledger note when any turn is
    left out (naming the ``conversations`` whose latest draw is in one, from :func:`conversation_ends`),
    the last ``keep`` turns whole, then ``message``."""
    done = sorted(turns)
    shown = done[max(0, len(done) - keep):] if keep else []
    elided = done[:len(done) - len(shown)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if elided:
        hidden = {c: role for c, (iteration, role) in (conversations or {}).items() if iteration in elided}
        messages.append({"role": "user", "content": ledger_note(elided, turns, hidden, restate=not shown)})
    for t in shown:
        messages += exchange(turns[t])
    return [*messages, {"role": "user", "content": message}]


def stable_prefix(context: AuditorContext, messages: list[dict[str, Any]]) -> tuple[int, ...]:
    """The messages that end a prefix the next request repeats byte for byte (where a provider that
    takes cache breakpoints should put them): the system prompt, and under ``full`` the whole request
    (the next turn extends it). Under ``ledger`` the window slides, so only the system prompt stays."""
    return (0, len(messages) - 1) if context.mode == FULL and len(messages) > 1 else (0,)


def ledger_note(elided: list[int], turns: Mapping[int, Mapping[str, Any]], conversations: Mapping[str, str], *,
                restate: bool) -> str:
    """Older turns by id with their probes' strategies, and the ``conversations`` they hold last (id ->
    role of the last turn); with ``restate`` (no turn shown in full) also the latest hypotheses with
    their citations."""
    used = Counter(str(turns[t]["parsed"].get("prompt_strategy") or "none") for t in elided)
    span = f"{elided[0]}-{elided[-1]}" if len(elided) > 1 else str(elided[0])
    note = fill(load("context_ledger"), elided=span,
                strategies=", ".join(f"{name} x{count}" for name, count in sorted(used.items())))
    if conversations:
        listed = ", ".join(f"{c} [{role}]" for c, role in sorted(conversations.items(), key=lambda i: int(i[0][1:])))
        note += "\n" + fill(load("context_ledger_conversations"), conversations=listed)
    if not restate:
        return note + "\n" + load("context_ledger_reply")
    latest = turns[max(turns)]["parsed"].get("hypotheses") or []
    return note + "\n" + fill(load("context_ledger_hypotheses"),
                              hypotheses=json.dumps([_cited(h) for h in latest], ensure_ascii=False))


def _cited(hypothesis: Mapping[str, Any]) -> dict[str, Any]:
    """A hypothesis as the note shows it: its fields, each citation with its verified mark (no reasons)."""
    shown = {k: v for k, v in hypothesis.items() if k not in EVIDENCE_KEYS}
    for key in EVIDENCE_KEYS:
        shown[key] = [{k: v for k, v in item.items() if k in ("iteration", "draw", "excerpt", "verified")}
                      for item in hypothesis.get(key) or []]
    return shown
