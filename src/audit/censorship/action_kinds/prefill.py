"""``prefill``: the target continues an opening of its answer that the auditor wrote."""

from audit.censorship.action_kind import PREFILL, PROMPT, SYSTEM, fresh_kind

KIND = fresh_kind("prefill", 30, (PROMPT, PREFILL, SYSTEM), fixed=True)
