"""``assistant``: the target answers a user turn through its chat API."""

from audit.censorship.action_kind import PROMPT, SYSTEM, fresh_kind

KIND = fresh_kind("assistant", 20, (PROMPT, SYSTEM), fixed=True)
