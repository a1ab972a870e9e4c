"""The auditor's tool menu under ``technique=auto``: one definition of every action.

With ``technique=auto`` the auditor names an *action* per turn instead of a bare probe: how the
target is sampled (user persona, assistant, prefill, raw text, few-shot), whether an earlier
conversation goes on (``continue``, also with follow-up user sampling) or is rolled back to an
earlier turn and branched (``rollback``), or whether N variations are sampled at once
(``batch``). Each action is a list of :class:`Arg`; the JSON Schema sent as ``response_format``
(:func:`action_schema`) and the validator (:func:`parse_action`) both read that list, so what
the server decodes and what the loop accepts cannot drift apart. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audit.errors import UserError, unknown_choice
from audit.model_json import ReplyError

TEXT, OPTIONAL_TEXT, TURN, TEXTS, PAIRS, CHOICE = "text", "optional_text", "turn", "texts", "pairs", "choice"
"""Argument kinds: a non-empty string, a string or null, a turn number (>= 0), a list of non-empty
strings (the batch's variations), a list of question/answer pairs, one of fixed strings."""

USER, FOLLOWUP_USER = "user", "followup_user"
MODES = (USER, FOLLOWUP_USER)
"""``continue`` modes: the auditor writes the next user turn (the target answers as assistant), or
the target writes it (follow-up user sampling, in its own template)."""

SINGLE = ("user_persona", "assistant", "prefill", "raw_text")
"""Single-draw ways of sampling a fresh prompt: the kinds a ``batch`` repeats over its variations."""

MAX_EXAMPLES = 8
"""Few-shot pairs an action may carry (bounded for constrained decoding, as schema.py's lists)."""


@dataclass(frozen=True)
class Arg:
    """One argument of an action: its name, its kind, and what it is (named in the validator's errors;
    the auditor's menu is ``prompts/auto_menu.txt``, checked against these names by the tests)."""

    name: str
    kind: str
    doc: str
    choices: tuple[str, ...] = ()


_SYSTEM = Arg("system", OPTIONAL_TEXT, "system prompt of the target's conversation, or null for none")
_PROMPT = Arg("prompt", TEXT, "the user turn sent to the target")
_PREFILL = Arg("prefill", TEXT, "the opening of the assistant's answer, which the target continues")
_OPTIONAL_PREFILL = Arg("prefill", OPTIONAL_TEXT, "an opening for the assistant's answer, or null")
_CONVERSATION = Arg("conversation", TEXT, "id of an earlier conversation, e.g. \"c2\"")

MENU: dict[str, tuple[Arg, ...]] = {
    "user_persona": (_PROMPT, _SYSTEM),
    "assistant": (_PROMPT, _SYSTEM),
    "prefill": (_PROMPT, _PREFILL, _SYSTEM),
    "raw_text": (Arg("text", TEXT, "a document the target continues verbatim, with no chat template"),),
    "few_shot": (Arg("examples", PAIRS, "earlier question/answer turns shown as the conversation so far"),
                 _PROMPT, _OPTIONAL_PREFILL, _SYSTEM),
    "continue": (_CONVERSATION, Arg("mode", CHOICE, "who writes the next user turn", MODES),
                 Arg("prompt", OPTIONAL_TEXT, "mode user: the new user turn (null: the target answers the "
                                              "user turn it wrote); mode followup_user: an opening of it, or null"),
                 _OPTIONAL_PREFILL),
    "rollback": (_CONVERSATION, Arg("to_turn", TURN, "keep the conversation's turns up to this one (0: none), "
                                                     "ending on an assistant turn, and branch from there"),
                 _PROMPT, _OPTIONAL_PREFILL),
    "batch": (Arg("of", CHOICE, "how each variation is sampled", SINGLE),
              Arg("prompts", TEXTS, "the variations (prompts, or documents for raw_text)"),
              Arg("prefill", OPTIONAL_TEXT, "the assistant opening for \"of\": \"prefill\", else null"),
              _SYSTEM),
}
"""Every action and its arguments, in the order the auditor is shown them."""

ACTIONS = tuple(MENU)


def check_menu(names: Iterable[str]) -> tuple[str, ...]:
    """The configured menu (``technique.menu``), in menu order; an unknown name is one line with a
    did-you-mean; an empty menu would leave the auditor nothing to do."""
    chosen = [str(n) for n in names]
    for name in chosen:
        if name not in MENU:
            raise unknown_choice("action in technique.menu", name, ACTIONS)
    if not chosen:
        raise UserError(f"technique.menu is empty; name at least one action, e.g. technique.menu=[{ACTIONS[0]}]"
                        f" (available: {', '.join(ACTIONS)})")
    return tuple(a for a in ACTIONS if a in chosen)


def _arg_schema(arg: Arg, batch_max: int) -> dict[str, Any]:
    if arg.kind == TEXT:
        return {"type": "string", "minLength": 1}
    if arg.kind == OPTIONAL_TEXT:
        return {"type": ["string", "null"], "minLength": 1}
    if arg.kind == TURN:
        return {"type": "integer", "minimum": 0}
    if arg.kind == CHOICE:
        return {"type": "string", "enum": list(arg.choices)}
    if arg.kind == TEXTS:
        return {"type": "array", "minItems": 1, "maxItems": batch_max, "items": {"type": "string", "minLength": 1}}
    pair = {"type": "object", "additionalProperties": False, "required": ["question", "answer"],
            "properties": {"question": {"type": "string", "minLength": 1}, "answer": {"type": "string"}}}
    return {"type": "array", "minItems": 1, "maxItems": MAX_EXAMPLES, "items": pair}


def action_schema(menu: Sequence[str], batch_max: int) -> dict[str, Any]:
    """The ``action`` object as JSON Schema: one alternative per action of ``menu``, told apart by
    ``kind`` (strict structured outputs: every property required, optional ones nullable)."""
    return {"anyOf": [{
        "type": "object", "additionalProperties": False, "required": ["kind", *(a.name for a in MENU[name])],
        "properties": {"kind": {"type": "string", "enum": [name]},
                       **{a.name: _arg_schema(a, batch_max) for a in MENU[name]}},
    } for name in menu]}


@dataclass(frozen=True)
class Action:
    """One validated action: its kind and its arguments (every argument of the kind, nulls included)."""

    kind: str
    args: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.args}

    @property
    def draws(self) -> int:
        """How many target draws the action asks for (a batch: one per variation)."""
        return len(self.args["prompts"]) if self.kind == "batch" else 1

    def shown(self) -> str:
        """The action's main text (the probe, the document, the variations), for progress lines and
        the probe-language check."""
        if self.kind == "raw_text":
            return str(self.args["text"])
        if self.kind == "batch":
            return "\n".join(self.args["prompts"])
        return str(self.args.get("prompt") or "")


def _arg(arg: Arg, value: Any, where: str, batch_max: int, errors: list[str]) -> Any:
    """``value`` checked against ``arg`` (a problem appended to ``errors``, in the auditor's terms)."""
    here = f"{where}.{arg.name}"
    if arg.kind in (TEXT, OPTIONAL_TEXT):
        if value is None and arg.kind == OPTIONAL_TEXT:
            return None
        if not isinstance(value, str) or not value.strip():
            errors.append(f"{here} must be a non-empty string ({arg.doc})"
                          + (" or null" if arg.kind == OPTIONAL_TEXT else ""))
        return value
    if arg.kind == TURN:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            errors.append(f"{here} must be a turn number, 0 or more ({arg.doc})")
        return value
    if arg.kind == CHOICE:
        if value not in arg.choices:
            errors.append(f"{here} must be one of {', '.join(arg.choices)}, got {value!r}")
        return value
    if arg.kind == TEXTS:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
            errors.append(f"{here} must be a non-empty list of non-empty strings ({arg.doc})")
        elif len(value) > batch_max:
            errors.append(f"{here} has {len(value)} variations; at most {batch_max} (technique.batch_max)")
        return value
    if not isinstance(value, list) or not value or len(value) > MAX_EXAMPLES or not all(
            isinstance(p, dict) and isinstance(p.get("question"), str) and p["question"].strip()
            and isinstance(p.get("answer"), str) for p in value):
        errors.append(f"{here} must be a list of 1 to {MAX_EXAMPLES} {{\"question\": \"...\", \"answer\": \"...\"}}")
        return value
    return [{"question": p["question"], "answer": p["answer"]} for p in value]


def parse_action(value: Any, menu: Sequence[str], batch_max: int) -> Action:
    """Validate the reply's ``action`` object against the menu; every problem in one ReplyError."""
    if not isinstance(value, dict):
        raise ReplyError(f'"action" must be an object {{"kind": one of {", ".join(menu)}, ...its arguments}}')
    kind = value.get("kind")
    if kind not in menu:
        raise ReplyError(f'"action.kind" must be one of {", ".join(menu)} (this run\'s menu), got {kind!r}')
    errors: list[str] = []
    args = {a.name: _arg(a, value.get(a.name), "action", batch_max, errors) for a in MENU[kind]}
    if kind == "batch":
        if (args["of"] == "prefill") != (args["prefill"] is not None):
            errors.append('action.prefill must be the opening text when "of" is "prefill", and null otherwise')
        if args["of"] == "raw_text" and args["system"] is not None:
            errors.append('action.system must be null when "of" is "raw_text" (no chat template)')
    if kind == "continue" and args["mode"] == FOLLOWUP_USER and args["prefill"] is not None:
        errors.append("action.prefill must be null in mode followup_user (the target writes a user turn)")
    if errors:
        raise ReplyError("; ".join(dict.fromkeys(errors)))
    return Action(kind, args)
