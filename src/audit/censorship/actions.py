"""What every auditor action under ``technique=auto`` is made of: its arguments (:class:`Arg`), each
argument as JSON Schema (:func:`arg_schema`) and checked (:func:`check_arg`), and the validated
:class:`Action`. The actions themselves are one module each in :mod:`audit.censorship.action_kinds`;
the JSON Schema sent as ``response_format`` and the validator both read the same :class:`Arg` lists,
so what the server decodes and what the loop accepts cannot drift apart. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TEXT, OPTIONAL_TEXT, TURN, TEXTS, PAIRS, CHOICE = "text", "optional_text", "turn", "texts", "pairs", "choice"
"""Argument kinds: a non-empty string, a string or null, a turn number (>= 0), a list of non-empty
strings (the batch's variations), a list of question/answer pairs, one of fixed strings."""

USER, FOLLOWUP_USER = "user", "followup_user"
MODES = (USER, FOLLOWUP_USER)
"""``continue`` modes: the auditor writes the next user turn (the target answers as assistant), or
the target writes it (follow-up user sampling, in its own template)."""

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


def arg_schema(arg: Arg, batch_max: int) -> dict[str, Any]:
    """``arg`` as JSON Schema (what constrained decoding lets the auditor write)."""
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


@dataclass(frozen=True)
class Action:
    """One validated action: its kind and its arguments (every argument of the kind, nulls included)."""

    kind: str
    args: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """The action as the turn's ``parsed`` reply and the iteration's record save it."""
        return {"kind": self.kind, **self.args}

    @classmethod
    def of(cls, saved: Mapping[str, Any]) -> Action:
        """The action a turn's file saved (:meth:`as_dict`), read once when a run is replayed
        (:meth:`audit.censorship.state.AuditState.replay`), so a resumed run sends what the killed one would
        have; a live turn keeps the validated reply's own :class:`Action`."""
        return cls(str(saved["kind"]), {k: v for k, v in saved.items() if k != "kind"})

    @property
    def draws(self) -> int:
        """How many target draws the action asks for: one per variation of an action that has them
        (``prompts``, a batch's), else one."""
        return len(self.args["prompts"]) if "prompts" in self.args else 1

    def shown(self) -> str:
        """The action's main text, for progress lines and the probe-language check: its document
        (``text``), its variations (``prompts``) or its probe (``prompt``, empty when null)."""
        if "text" in self.args:
            return str(self.args["text"])
        if "prompts" in self.args:
            return "\n".join(self.args["prompts"])
        return str(self.args.get("prompt") or "")


def check_arg(arg: Arg, value: Any, where: str, batch_max: int, errors: list[str]) -> Any:
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
