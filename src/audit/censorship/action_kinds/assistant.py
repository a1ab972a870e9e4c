"""``assistant``: the target answers a user turn through its chat API."""

from collections.abc import Mapping
from typing import Any

from audit.censorship.action_kind import PROMPT, SYSTEM, fresh_kind
from audit.censorship.conversations import DrawPlan, assistant_answer, prompt_fields
from audit.templates import TemplateFamily


def sample(args: Mapping[str, Any], family: TemplateFamily, system: str | None, place: dict[str, Any]) -> DrawPlan:
    return assistant_answer(prompt_fields(place, args, system), args, system, family, prefill=None)


KIND = fresh_kind("assistant", 20, (PROMPT, SYSTEM), sample, fixed=True, batchable=True)
