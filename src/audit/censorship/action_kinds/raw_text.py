"""``raw_text``: the target continues a document verbatim, with no chat template (so no conversation)."""

from collections.abc import Mapping
from typing import Any

from audit.censorship.action_kind import fresh_kind
from audit.censorship.actions import TEXT, Arg
from audit.censorship.conversations import DrawPlan
from audit.templates import TemplateFamily


def sample(args: Mapping[str, Any], family: TemplateFamily, system: str | None, place: dict[str, Any]) -> DrawPlan:
    """The document itself, sent as given: no template, so no system prompt and no turn."""
    return DrawPlan({**place, "role": None, "user": None, "system": None, "prompt_sent": args["text"],
                     "formatted_prompt": args["text"], "messages_sent": None}, prompt=args["text"])


KIND = fresh_kind("raw_text", 40, (Arg("text", TEXT, "a document the target continues verbatim, with no chat template"),),
                  sample, conversation=False, batchable=True)
