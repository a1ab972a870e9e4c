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

``auto`` (the default) is settled once, before the run dir is made, to one of the two and saved so in
the run's config (:func:`choose`): ``full`` where the auditor's provider caches prompts (the
``prompt_caching`` table of the config, from OpenRouter's prompt-caching guide) and ``max_iterations``
is at most that provider's measured break-even (``full_until``: the longest audit whose cached full
transcript bills fewer input-price tokens than the ledger, ``bench/bench_auditor_context.py``); the
ledger otherwise (a provider that caches nothing, a longer audit, or a local endpoint, whose small
context window the ledger fits).

Pure: the turns come in as saved records; nothing here reads or writes files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from audit.censorship.conversations import Tree
from audit.censorship.prompts import fill, load
from audit.censorship.schema import EVIDENCE_KEYS
from audit.llm.settings import DEFAULT_ENDPOINT, role_endpoint

FULL, LEDGER, AUTO = "full", "ledger", "auto"
MODES = (FULL, LEDGER)
CHOICES = (AUTO, *MODES)
"""What ``auditor.context`` may say: a mode, or ``auto`` (settled to a mode by :func:`choose`)."""
SAVED_DEFAULT = FULL
"""The mode of a run whose config names none: every run saved before the knob existed was full."""


@dataclass(frozen=True)
class Caching:
    """One row of the ``prompt_caching`` table: a provider that caches prompts, by model-id prefix."""

    prefix: str
    read: float
    """Cache reads, as a multiple of the input price."""
    write: float
    """Cache writes, as a multiple of the input price (1: billed as ordinary input)."""
    full_until: int
    """The longest audit (``max_iterations``) for which the cached full transcript is the cheaper context."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Caching:
        try:
            caching = cls(str(row["prefix"]), float(row["read"]), float(row["write"]), int(row["full_until"]))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"prompt_caching row {dict(row)!r} should have prefix, read, write and full_until, "
                             "e.g. {prefix: anthropic/, read: 0.1, write: 1.25, full_until: 30}") from None
        if not caching.prefix or caching.read < 0 or caching.write < 0 or caching.full_until < 0:
            raise ValueError(f"prompt_caching row {dict(row)!r} should have a prefix, prices >= 0 and "
                             "full_until >= 0, e.g. {prefix: anthropic/, read: 0.1, write: 1.25, full_until: 30}")
        return caching


def caching_of(model: str, table: Sequence[Mapping[str, Any]]) -> Caching | None:
    """The row of ``table`` whose prefix ``model`` starts with (the longest one), or None: no cache."""
    rows = [Caching.from_row(row) for row in table]
    matched = [row for row in rows if model.startswith(row.prefix)]
    return max(matched, key=lambda row: len(row.prefix)) if matched else None


def choose(model: str, endpoint: str, max_iterations: int, table: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """What ``auditor.context=auto`` settles to for ``model`` on ``endpoint`` in an audit of
    ``max_iterations``, and why (one clause, for the run's first lines): ``full`` when the provider
    caches and the audit is no longer than its break-even, else ``ledger``."""
    if endpoint != DEFAULT_ENDPOINT:
        return LEDGER, f"the auditor is served by endpoint {endpoint!r}, whose context the ledger keeps small"
    caching = caching_of(model, table)
    if caching is None:
        return LEDGER, f"{model} is in no row of prompt_caching (its provider caches nothing)"
    prices = f"{caching.prefix} caches prompts, reads {caching.read:g}x, writes {caching.write:g}x the input price"
    if max_iterations <= caching.full_until:
        return FULL, f"{prices}; max_iterations={max_iterations} <= its break-even {caching.full_until}"
    return LEDGER, f"{prices}, but max_iterations={max_iterations} > its break-even {caching.full_until}"


@dataclass(frozen=True)
class AuditorContext:
    """``auditor.context`` and ``auditor.context_turns`` (``k``), checked."""

    mode: str = SAVED_DEFAULT
    turns: int = 2
    why: str = field(default="", compare=False)
    """Why ``auto`` chose the mode ('' when the config named it)."""

    @classmethod
    def from_node(cls, auditor: Mapping[str, Any], *, max_iterations: int | None = None,
                  table: Sequence[Mapping[str, Any]] = ()) -> AuditorContext:
        """Read and check the auditor config, settling ``auto`` (:func:`choose`, which needs
        ``max_iterations`` and the ``prompt_caching`` ``table``); a bad value is a ValueError naming the fix."""
        mode = str(auditor.get("context") or SAVED_DEFAULT)
        if mode not in CHOICES:
            raise ValueError(f"auditor.context={mode!r} is not one of {', '.join(CHOICES)}; "
                             "e.g. auditor.context=ledger")
        if mode == AUTO and max_iterations is None:
            raise ValueError("auditor.context=auto is settled when a run starts, and this config was saved "
                             "unsettled; name the mode, e.g. auditor.context=ledger")
        why = ""
        if mode == AUTO:
            assert max_iterations is not None
            mode, why = choose(str(auditor.get("model") or ""), role_endpoint(auditor),
                               max_iterations, table)
        turns = auditor.get("context_turns", cls.turns)
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 0:
            raise ValueError(f"auditor.context_turns={turns!r} should be a whole number >= 0 "
                             "(the turns shown in full), e.g. auditor.context_turns=2")
        return cls(mode, turns, why)

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
    left out (naming the ``conversations`` whose latest draw is in one, from :func:`conversation_ends`;
    given, the run is ``technique=auto``'s, whose menu can hold ``reopen``, which the note then names),
    the last ``keep`` turns whole, then ``message``."""
    done = sorted(turns)
    shown = done[max(0, len(done) - keep):] if keep else []
    elided = done[:len(done) - len(shown)]
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if elided:
        hidden = {c: role for c, (iteration, role) in (conversations or {}).items() if iteration in elided}
        messages.append({"role": "user", "content": ledger_note(elided, turns, hidden, restate=not shown,
                                                                reopen=conversations is not None)})
    for t in shown:
        messages += exchange(turns[t])
    return [*messages, {"role": "user", "content": message}]


def stable_prefix(context: AuditorContext, messages: list[dict[str, Any]]) -> tuple[int, ...]:
    """The messages that end a prefix the next request repeats byte for byte (where a provider that
    takes cache breakpoints should put them): the system prompt, and under ``full`` the whole request
    (the next turn extends it). Under ``ledger`` the window slides, so only the system prompt stays."""
    return (0, len(messages) - 1) if context.mode == FULL and len(messages) > 1 else (0,)


def ledger_note(elided: list[int], turns: Mapping[int, Mapping[str, Any]], conversations: Mapping[str, str], *,
                restate: bool, reopen: bool = False) -> str:
    """Older turns by id with their probes' strategies (and that their responses are out of sight, so
    not to be cited), with ``reopen`` how to read one again, and the ``conversations`` they hold last
    (id -> role of the last turn); with ``restate`` (no turn shown in full) also the latest hypotheses
    with their citations."""
    used = Counter(str(turns[t]["parsed"].get("prompt_strategy") or "none") for t in elided)
    span = f"{elided[0]}-{elided[-1]}" if len(elided) > 1 else str(elided[0])
    note = fill(load("context_ledger"), elided=span,
                strategies=", ".join(f"{name} x{count}" for name, count in sorted(used.items())))
    if reopen:
        note += "\n" + load("context_ledger_reopen")
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
