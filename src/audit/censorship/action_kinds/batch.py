"""``batch``: N variations sampled at once, each a lone draw of one single-draw kind (no conversation)."""

from collections.abc import Mapping
from typing import Any

from audit.censorship.action_kind import SYSTEM, ActionKind
from audit.censorship.action_kinds import assistant, prefill, raw_text, user_persona
from audit.censorship.actions import CHOICE, OPTIONAL_TEXT, TEXTS, Action, Arg
from audit.censorship.conversations import DrawPlan, Tree, draw_id, fresh_draw
from audit.templates import TemplateFamily

SINGLE = {k.name: k for k in (user_persona.KIND, assistant.KIND, prefill.KIND, raw_text.KIND)}
"""Single-draw ways of sampling a fresh prompt: the kinds a batch repeats over its variations, each by its
own ``sample``."""


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
