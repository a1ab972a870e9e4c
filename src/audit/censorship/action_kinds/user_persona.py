"""``user_persona``: the target continues the start of a user turn, in its own chat template."""

from audit.censorship.action_kind import PROMPT, SYSTEM, fresh_kind

KIND = fresh_kind("user_persona", 10, (PROMPT, SYSTEM), fixed=True)
