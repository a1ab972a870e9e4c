"""``user_persona``: the target continues the start of a user turn, in its own chat template."""

from collections.abc import Mapping
from typing import Any

from audit.censorship.action_kind import PROMPT, SYSTEM, fresh_kind
from audit.censorship.conversations import DrawPlan, prompt_fields
from audit.templates import TemplateFamily


def sample(args: Mapping[str, Any], family: TemplateFamily, system: str | None, place: dict[str, Any]) -> DrawPlan:
    """The probe as the opening of the user's turn; the family's stops end the turn there."""
    prompt = family.user_persona_prompt(args["prompt"], system=system)
    return DrawPlan({**prompt_fields(place, args, system), "role": "user", "user": None, "opening": args["prompt"],
                     "formatted_prompt": prompt}, prompt=prompt, stops=family.stops)


KIND = fresh_kind("user_persona", 10, (PROMPT, SYSTEM), sample, fixed=True, batchable=True)
