"""``prefill``: the target continues an opening of its answer that the auditor wrote."""

from collections.abc import Mapping
from typing import Any

from audit.censorship.action_kind import PREFILL, PROMPT, SYSTEM, fresh_kind
from audit.censorship.conversations import DrawPlan, assistant_answer, prompt_fields
from audit.templates import TemplateFamily


def sample(args: Mapping[str, Any], family: TemplateFamily, system: str | None, place: dict[str, Any]) -> DrawPlan:
    return assistant_answer(prompt_fields(place, args, system), args, system, family, prefill=args["prefill"])


KIND = fresh_kind("prefill", 30, (PROMPT, PREFILL, SYSTEM), sample, fixed=True, batchable=True)
