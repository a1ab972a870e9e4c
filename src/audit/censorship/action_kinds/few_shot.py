"""``few_shot``: earlier question/answer turns shown as the conversation so far, then the probe."""

from audit.censorship.action_kind import OPTIONAL_PREFILL, PROMPT, SYSTEM, fresh_kind
from audit.censorship.actions import PAIRS, Arg

KIND = fresh_kind("few_shot", 50, (Arg("examples", PAIRS, "earlier question/answer turns shown as the conversation so far"),
                                   PROMPT, OPTIONAL_PREFILL, SYSTEM))
