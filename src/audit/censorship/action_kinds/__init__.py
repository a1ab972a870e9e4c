"""The auditor's tool menu under ``technique=auto``: every module of this package is one action
(:class:`~audit.censorship.action_kind.ActionKind`), found here, in menu order.

With ``technique=auto`` the auditor names an *action* per turn instead of a bare probe: how the
target is sampled (user persona, assistant, prefill, raw text, few-shot), whether an earlier
conversation goes on (``continue``, also with follow-up user sampling) or is rolled back to an
earlier turn and branched (``rollback``), or whether N variations are sampled at once (``batch``).
This registry is what the reply's JSON Schema (:func:`action_schema`), the validator
(:func:`parse_action`), the configured menu (:func:`check_menu`) and the dispatcher
(:func:`check_action`, :func:`plan_draws`) read, so adding an action is adding its module (and its
line of the menu the auditor is shown, ``prompts/auto_menu.txt``). Pure: no I/O beyond finding the modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from audit.censorship.action_kind import ActionKind, kinds_in
from audit.censorship.actions import Action, Arg, arg_schema, check_arg
from audit.censorship.conversations import DrawPlan, Tree
from audit.errors import UserError, unknown_choice
from audit.model_json import ReplyError
from audit.templates import TemplateFamily


def _found() -> dict[str, ActionKind]:
    """Every module's ``KIND``, by name in menu order; two actions with one name or one place is a
    programming error, named."""
    kinds = kinds_in(__name__, __path__)
    for attribute in ("name", "order"):
        values = [getattr(k, attribute) for k in kinds]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise RuntimeError(f"two actions in {__name__} share the {attribute} {twice[0]!r}")
    return {kind.name: kind for kind in sorted(kinds, key=lambda k: k.order)}


KINDS = _found()
MENU: dict[str, tuple[Arg, ...]] = {name: kind.args for name, kind in KINDS.items()}
"""Every action and its arguments, in the order the auditor is shown them."""
ACTIONS = tuple(KINDS)
TECHNIQUES = tuple(name for name, kind in KINDS.items() if kind.fixed)
"""The fixed techniques (``technique=<name>``): the one-action kinds a whole run may sample with."""
FIXED_RECORD = ("technique", "prompt_sent", "formatted_prompt", "messages_sent", "prefill")
"""What a fixed technique's draw record keeps of its plan, in the order its files always had: it has
no place in a conversation tree (each probe is a fresh prompt), and the files stay as they were."""


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


def action_schema(menu: Sequence[str], batch_max: int) -> dict[str, Any]:
    """The ``action`` object as JSON Schema: one alternative per action of ``menu``, told apart by
    ``kind`` (strict structured outputs: every property required, optional ones nullable)."""
    return {"anyOf": [{
        "type": "object", "additionalProperties": False, "required": ["kind", *(a.name for a in MENU[name])],
        "properties": {"kind": {"type": "string", "enum": [name]},
                       **{a.name: arg_schema(a, batch_max) for a in MENU[name]}},
    } for name in menu]}


def parse_action(value: Any, menu: Sequence[str], batch_max: int) -> Action:
    """Validate the reply's ``action`` object against the menu; every problem in one ReplyError."""
    if not isinstance(value, dict):
        raise ReplyError(f'"action" must be an object {{"kind": one of {", ".join(menu)}, ...its arguments}}')
    kind = value.get("kind")
    if kind not in menu:
        raise ReplyError(f'"action.kind" must be one of {", ".join(menu)} (this run\'s menu), got {kind!r}')
    errors: list[str] = []
    args = {a.name: check_arg(a, value.get(a.name), "action", batch_max, errors) for a in MENU[kind]}
    errors += KINDS[kind].rules(args)
    if errors:
        raise ReplyError("; ".join(dict.fromkeys(errors)))
    return Action(kind, args)


def check_action(action: Action, tree: Tree) -> str | None:
    """Why ``action`` cannot be carried out on ``tree`` (addressed to the auditor), or None."""
    return KINDS[action.kind].fits(action, tree)


def plan_draws(action: Action, tree: Tree, family: TemplateFamily, system_default: str | None,
               iteration: int) -> list[DrawPlan]:
    """The draws ``action`` sends at ``iteration`` (checked with :func:`check_action` first).

    Chat-template renders come from the target's family (user persona, prefill, few-shot and
    follow-up user turns are raw ``/completions`` prompts); an assistant turn without an opening
    goes through the chat API as the ``assistant`` technique does; ``raw_text`` is sent verbatim.
    """
    return KINDS[action.kind].plan(action, tree, family, system_default, iteration)


def probe_plan(technique: str, probe: str, family: TemplateFamily, system: str | None, *,
               prefill: str = "") -> DrawPlan:
    """The draw of fixed technique ``technique`` on ``probe``: its one-action kind planned as the auditor's
    action would be (the same requests, so the same cache entries), its record in the fixed shape."""
    given = {"prompt": probe, "prefill": prefill, "system": None}
    action = Action(technique, {a.name: given[a.name] for a in MENU[technique]})
    (plan,) = plan_draws(action, Tree(), family, system, 0)
    return replace(plan, kept=FIXED_RECORD)
