"""What one auditor action under ``technique=auto`` declares (:class:`ActionKind`), in its own module of
:mod:`audit.censorship.action_kinds`: its name, its place in the menu, its arguments, the rules its
arguments must keep together, whether it fits the conversation tree, and the draws it sends.

The JSON Schema of the reply, the validator, the menu the auditor is shown (its line in
``prompts/auto_menu.txt``, model-facing text kept out of code) and the dispatcher that sends the draws
all read the registry, so an action is added as one module. Pure: no I/O.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from audit.censorship.actions import OPTIONAL_TEXT, TEXT, Action, Arg
from audit.censorship.conversations import DrawPlan, Sampler, Tree, draw_id, fresh_draw, next_turn_draw
from audit.templates import TemplateFamily

Planner = Callable[[Action, Tree, TemplateFamily, "str | None", int], list[DrawPlan]]
"""``(action, tree, the target's template family, its default system prompt, iteration)`` -> the draws."""

SYSTEM = Arg("system", OPTIONAL_TEXT, "system prompt of the target's conversation, or null for none")
PROMPT = Arg("prompt", TEXT, "the user turn sent to the target")
PREFILL = Arg("prefill", TEXT, "the opening of the assistant's answer, which the target continues")
OPTIONAL_PREFILL = Arg("prefill", OPTIONAL_TEXT, "an opening for the assistant's answer, or null")
CONVERSATION = Arg("conversation", TEXT, "id of an earlier conversation, e.g. \"c2\"")
"""Arguments several actions share (each action's own are in its module)."""


def _no_rules(args: Mapping[str, Any]) -> list[str]:
    return []


def _fits_any_tree(action: Action, tree: Tree) -> str | None:
    return None


@dataclass(frozen=True)
class ActionKind:
    """One action of the menu."""

    name: str
    """What the auditor writes as ``action.kind``."""
    order: int
    """Its place in the menu the auditor is shown and in the reply's schema (lower first)."""
    args: tuple[Arg, ...]
    plan: Planner
    """The draws a validated action sends (checked with :attr:`fits` first)."""
    rules: Callable[[Mapping[str, Any]], list[str]] = _no_rules
    """What its checked arguments must keep together that the schema cannot say (the auditor's to fix)."""
    fits: Callable[[Action, Tree], str | None] = _fits_any_tree
    """Why the action cannot be carried out on the conversation tree (the auditor's to fix), or None."""
    sample: Sampler | None = None
    """How it samples a fresh prompt, for a kind that does (:func:`fresh_kind`): what a batch repeats."""
    fixed: bool = False
    """Also a fixed technique (``technique=<name>``): a run that samples every probe this way, the
    auditor writing only the probe (:func:`audit.censorship.action_kinds.probe_plan`)."""
    batchable: bool = False
    """A ``batch`` may repeat it over its variations (its ``of``): a kind with a ``sample`` that needs no
    more than a prompt (or document), a prefill and a system prompt, so each variation is one lone draw."""


def kinds_in(package: str, path: Iterable[str], *, but: str | None = None) -> list[ActionKind]:
    """The ``KIND`` of every module of ``package`` (found on ``path``) but the one named ``but``: what the
    registry (:mod:`audit.censorship.action_kinds`) and a kind made of the others (``batch``) read, so a
    new module is found by both without an edit."""
    return [importlib.import_module(f"{package}.{module.name}").KIND for module in pkgutil.iter_modules(path)
            if f"{package}.{module.name}" != but]


def fresh_kind(name: str, order: int, args: tuple[Arg, ...], sample: Sampler, *, conversation: bool = True,
               fixed: bool = False, batchable: bool = False) -> ActionKind:
    """An action that samples one fresh prompt as ``name`` with ``sample`` (see :func:`fresh_draw`); with
    ``conversation`` it starts a new conversation the auditor can continue; ``fixed``: also a fixed technique;
    ``batchable``: a batch may repeat it."""
    def plan(action: Action, tree: Tree, family: TemplateFamily, system_default: str | None,
             iteration: int) -> list[DrawPlan]:
        opened = tree.new_conversation_id() if conversation else None
        return [fresh_draw(name, sample, action.args, family, system_default, draw_id(iteration, 1), name,
                           conversation=opened)]
    return ActionKind(name, order, args, plan, sample=sample, fixed=fixed, batchable=batchable)


def plan_next_turn(action: Action, tree: Tree, family: TemplateFamily, system_default: str | None,
                   iteration: int) -> list[DrawPlan]:
    """The :data:`Planner` of an action that goes on in an earlier conversation (``continue``,
    ``rollback``): one draw of its next turn (see :func:`next_turn_draw`); the conversation already
    has its system prompt, so the default is not read."""
    return [next_turn_draw(action, tree, family, draw_id(iteration, 1))]
