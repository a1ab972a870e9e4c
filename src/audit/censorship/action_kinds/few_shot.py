"""``few_shot``: earlier question/answer turns shown as the conversation so far, then the probe."""

from collections.abc import Mapping
from typing import Any

from audit.censorship.action_kind import OPTIONAL_PREFILL, PROMPT, SYSTEM, fresh_kind
from audit.censorship.actions import PAIRS, Arg
from audit.censorship.conversations import DrawPlan, assistant_answer, prompt_fields
from audit.templates import TemplateFamily


def sample(args: Mapping[str, Any], family: TemplateFamily, system: str | None, place: dict[str, Any]) -> DrawPlan:
    """Rendered in the target's template (its earlier turns are the point), opened with the prefill if any."""
    fields = {**prompt_fields(place, args, system), "examples": list(args["examples"])}
    return assistant_answer(fields, args, system, family, prefill=args.get("prefill"), rendered=True)


KIND = fresh_kind("few_shot", 50, (Arg("examples", PAIRS, "earlier question/answer turns shown as the conversation so far"),
                                   PROMPT, OPTIONAL_PREFILL, SYSTEM), sample)
