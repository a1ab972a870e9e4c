"""``batch``: N variations sampled at once, each a lone draw of one single-draw kind (no conversation)."""

import importlib
from collections.abc import Mapping
from typing import Any

from audit.censorship.action_kind import SYSTEM, ActionKind, kinds_in
from audit.censorship.actions import CHOICE, OPTIONAL_TEXT, TEXTS, Action, Arg
from audit.censorship.conversations import DrawPlan, Tree, draw_id, fresh_draw
from audit.templates import TemplateFamily

SINGLE = {k.name: k for k in sorted(kinds_in(__package__, importlib.import_module(__package__).__path__, but=__name__),
                                    key=lambda k: k.order) if k.batchable}
"""The kinds a batch repeats over its variations, each by its own ``sample``, in menu order: every sibling
module whose kind declares itself ``batchable`` (found as the registry finds them, so none is listed here)."""


def _rules(args: Mapping[str, Any]) -> list[str]:
    problems = []
    if (args["of"] == "prefill") != (args["prefill"] is not None):
        problems.append('action.prefill must be the opening text when "of" is "prefill", and null otherwise')
    if args["of"] == "raw_text" and args["system"] is not None:
        problems.append('action.system must be null when "of" is "raw_text" (no chat template)')
    return problems


def _plan(action: Action, tree: Tree, family: TemplateFamily, system_default: str | None,
          iteration: int) -> list[DrawPlan]:
    args = action.args
    kind = SINGLE[args["of"]]
    assert kind.sample is not None
    return [fresh_draw(kind.name, kind.sample, {"prompt": p, "text": p, "prefill": args["prefill"],
                                                "system": args.get("system")},
                       family, system_default, draw_id(iteration, j + 1), action.kind, conversation=None)
            for j, p in enumerate(args["prompts"])]


KIND = ActionKind(
    "batch", 80,
    (Arg("of", CHOICE, "how each variation is sampled", tuple(SINGLE)),
     Arg("prompts", TEXTS, "the variations (prompts, or documents for raw_text)"),
     Arg("prefill", OPTIONAL_TEXT, "the assistant opening for \"of\": \"prefill\", else null"),
     SYSTEM),
    _plan, rules=_rules)
