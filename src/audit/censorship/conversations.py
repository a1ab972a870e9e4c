"""The conversation tree of a ``technique=auto`` audit, and what each action sends (pure: no I/O).

Every target draw is saved with its place in the tree: ``conversation`` (``c1``, ``c2``, ...,
one per fresh chat-template action), ``branch`` (``c1.b1``; a rollback opens ``c1.b2``) and
``parent`` (the draw whose message precedes it in its branch). The tree is rebuilt from the
saved draws alone, so a resumed run sees the tree the killed one had, and a branch left behind
by a rollback stays in the record while the conversation goes on from the active one (the
branch of its latest draw). A draw's *messages* are the turns it adds: the auditor's user turn
(if any), then the sampled turn (``role`` user or assistant).

Each action (:mod:`audit.censorship.action_kinds`) turns into the requests to send (chat messages or
a raw ``/completions`` prompt, built with the target's :class:`~audit.templates.TemplateFamily`) with
the building blocks here: :func:`fresh_draw` (a fresh prompt, sampled by its kind's ``sample``) and
:func:`next_turn_draw` (an earlier conversation continued or rolled back).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from audit.censorship.actions import FOLLOWUP_USER, Action
from audit.record.draws import Draw, drawn_text
from audit.templates import TemplateFamily

Message = dict[str, str]

def draw_id(iteration: int, number: int) -> str:
    """The draw's name in citations and threads: ``<iteration>.<number within it>``."""
    return f"{iteration}.{number}"


def answered(draw: Draw, tree: Tree) -> str:
    """What a draw answers, for the judge: the auditor's prompt, or, when the auditor wrote none (a
    follow-up user turn, an answer to a user turn the target wrote), the branch's last turn before it."""
    if draw.prompt_sent:
        return draw.prompt_sent
    earlier = tree.thread(draw.parent)
    return earlier[-1][1]["content"] if earlier else ""


def draw_messages(draw: Draw) -> list[Message]:
    """The turns ``draw`` adds to its branch (a failed draw adds the auditor's turn only)."""
    messages = [{"role": "user", "content": draw.user}] if draw.user is not None else []
    text = drawn_text(draw, turn=True)
    if text is not None and draw.turn:
        messages.append({"role": draw.turn, "content": text})
    return messages


@dataclass
class Tree:
    """Conversations, branches and draws of one audit, rebuilt from the saved draws in order."""

    draws: dict[str, Draw] = field(default_factory=dict)
    conversations: dict[str, list[str]] = field(default_factory=dict)
    """Conversation id -> its draw ids in the order they were drawn."""

    @classmethod
    def of(cls, draws: Iterable[Draw]) -> Tree:
        tree = cls()
        for draw in draws:
            tree.add(draw)
        return tree

    def add(self, draw: Draw) -> None:
        assert draw.id is not None, "only an auto draw has a place in the tree"
        self.draws[draw.id] = draw
        if draw.conversation:
            self.conversations.setdefault(draw.conversation, []).append(draw.id)

    def chain(self, tip: str | None) -> list[Draw]:
        """The draws from the conversation's start to ``tip``, following parents."""
        out = []
        while tip is not None:
            out.append(self.draws[tip])
            tip = self.draws[tip].parent
        return out[::-1]

    def tip(self, conversation: str) -> str:
        """The latest draw of ``conversation``: the end of its active branch."""
        return self.conversations[conversation][-1]

    def active_branch(self, conversation: str) -> str:
        return str(self.draws[self.tip(conversation)].branch)

    def branches(self, conversation: str) -> list[str]:
        return list(dict.fromkeys(str(self.draws[d].branch) for d in self.conversations[conversation]))

    def root(self, conversation: str) -> Draw:
        return self.draws[self.conversations[conversation][0]]

    def context(self, conversation: str) -> list[Message]:
        """The turns before the conversation's first draw: its system prompt and few-shot examples."""
        root = self.root(conversation)
        return [*_system(root.system), *example_messages(root.example_pairs)]

    def thread(self, tip: str | None) -> list[tuple[str, Message]]:
        """The messages of the branch ending at ``tip``, each with the draw that added it."""
        return [(str(d.id), m) for d in self.chain(tip) for m in draw_messages(d)]

    def new_conversation_id(self) -> str:
        return f"c{len(self.conversations) + 1}"


def _system(system: str | None) -> list[Message]:
    return [{"role": "system", "content": system}] if system is not None else []


def example_messages(examples: Sequence[Mapping[str, str]]) -> list[Message]:
    """Few-shot question/answer pairs as earlier user and assistant turns."""
    return [m for p in examples for m in ({"role": "user", "content": p["question"]},
                                          {"role": "assistant", "content": p["answer"]})]


def missing_conversation(conversation: str, tree: Tree) -> str | None:
    """Why ``conversation`` cannot be continued (addressed to the auditor), or None when it exists."""
    if conversation in tree.conversations:
        return None
    known = ", ".join(tree.conversations) or "none yet (start one with a chat-template action)"
    return f"action.conversation {conversation!r} does not exist (conversations: {known})"


@dataclass(frozen=True)
class DrawPlan:
    """One request to send and the tree fields its saved draw will carry."""

    fields: dict[str, Any]
    """Everything saved before the reply: id, action, technique, conversation, branch, parent, role,
    user, opening/prefill, system, examples, and what is sent (``formatted_prompt`` or ``messages_sent``)."""
    prompt: str | None = None
    messages: list[Message] | None = None
    stops: tuple[str, ...] = ()
    kept: tuple[str, ...] | None = None
    """The fields its record keeps, in this order (None: all): a fixed technique's draw keeps the
    shape its files always had (no place in a conversation tree, which it does not have)."""

    def record(self) -> dict[str, Any]:
        """The saved draw's fields before the reply."""
        return dict(self.fields) if self.kept is None else {k: self.fields[k] for k in self.kept if k in self.fields}

    @property
    def turn(self) -> str | None:
        """The turn the target writes: ``user`` (its run-on into a next turn is cut off), ``assistant``,
        or None (a document continued verbatim, with no chat template)."""
        return self.fields.get("role")

    @property
    def templated(self) -> bool:
        """Whether the prompt was rendered in the target's chat template (a chat draw's is the server's)."""
        return self.prompt is not None and self.turn is not None


Sampler = Callable[[Mapping[str, Any], TemplateFamily, "str | None", dict[str, Any]], DrawPlan]
"""How an action kind samples a fresh prompt (its module's ``sample``): ``(the action's arguments, the target's
family, the system prompt, the draw's place in the tree)`` -> the draw."""


def fresh_draw(kind: str, sample: Sampler, args: Mapping[str, Any], family: TemplateFamily,
               system_default: str | None, number: str, action: str, *, conversation: str | None) -> DrawPlan:
    """A draw on a fresh prompt sampled as ``kind`` (by its ``sample``): a new conversation's first turn, or,
    with ``conversation`` None, a lone draw (a batch's, a fixed technique's)."""
    system = args.get("system") if args.get("system") is not None else system_default
    place: dict[str, Any] = {"id": number, "action": action, "technique": kind, "conversation": conversation,
                             "branch": f"{conversation}.b1" if conversation else None, "parent": None}
    return sample(args, family, system, place)


def prompt_fields(place: Mapping[str, Any], args: Mapping[str, Any], system: str | None) -> dict[str, Any]:
    """A chat-template draw's fields before its turn: its place, its system prompt and the auditor's prompt."""
    return {**place, "system": system, "prompt_sent": args["prompt"], "messages_sent": None, "formatted_prompt": None}


def assistant_answer(fields: dict[str, Any], args: Mapping[str, Any], system: str | None, family: TemplateFamily, *,
                     prefill: str | None, rendered: bool = False) -> DrawPlan:
    """The target's answer, as the assistant, to the auditor's prompt after the system prompt and any
    few-shot ``examples`` (see :func:`assistant_turn`)."""
    messages = [*_system(system), *example_messages(args.get("examples") or []),
                {"role": "user", "content": args["prompt"]}]
    return assistant_turn({**fields, "role": "assistant", "user": args["prompt"]}, messages, prefill, family,
                          rendered=rendered)


def assistant_turn(fields: dict[str, Any], messages: list[Message], prefill: str | None, family: TemplateFamily, *,
                   rendered: bool = False) -> DrawPlan:
    """An assistant turn after ``messages``: opened with ``prefill`` as a raw prompt, else through the chat
    API, unless ``rendered`` (few-shot, whose earlier turns are the point, rendered in the template)."""
    if prefill is not None:
        prompt = family.prefill_prompt(messages, prefill)
        return DrawPlan({**fields, "prefill": prefill, "formatted_prompt": prompt}, prompt=prompt, stops=family.stops)
    if rendered:
        prompt = family.assistant_prompt(messages)
        return DrawPlan({**fields, "formatted_prompt": prompt}, prompt=prompt, stops=family.stops)
    return DrawPlan({**fields, "messages_sent": messages}, messages=messages)


def next_turn_draw(action: Action, tree: Tree, family: TemplateFamily, number: str) -> DrawPlan:
    """A draw that goes on with an earlier conversation: ``continue`` its active branch, or ``rollback``
    to a turn of it and open a new branch there."""
    args = action.args
    conversation = args["conversation"]
    root = tree.root(conversation)
    tip: str | None = tree.tip(conversation)
    branch = tree.active_branch(conversation)
    if action.kind == "rollback":
        thread = tree.thread(tip)
        tip = thread[args["to_turn"] - 1][0] if args["to_turn"] else None
        branch = f"{conversation}.b{len(tree.branches(conversation)) + 1}"
    system = root.system
    turns = [*example_messages(root.example_pairs), *(m for _, m in tree.thread(tip))]
    fields: dict[str, Any] = {"id": number, "action": action.kind, "conversation": conversation, "branch": branch,
                              "parent": tip, "system": system, "prompt_sent": args["prompt"],
                              "messages_sent": None, "formatted_prompt": None}
    if action.kind == "continue" and args["mode"] == FOLLOWUP_USER:
        opening = args["prompt"] or ""
        prompt = family.user_persona_prompt(opening, system=system, history=turns)
        return DrawPlan({**fields, "technique": FOLLOWUP_USER, "role": "user", "user": None, "opening": opening,
                         "formatted_prompt": prompt}, prompt=prompt, stops=family.stops)
    user = args["prompt"]
    messages = [*_system(system), *turns, *([{"role": "user", "content": user}] if user is not None else [])]
    technique = "prefill" if args["prefill"] is not None else "assistant"
    return assistant_turn({**fields, "technique": technique, "role": "assistant", "user": user}, messages,
                          args["prefill"], family)
