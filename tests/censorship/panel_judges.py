"""Three scripted judges that disagree on chosen responses, for panel tests (loopback server).

Every judge call is routed by the judge's model name; the probe it judges is read from the
message ("Probe k:"). What each judge says about response ``k`` (None: the call fails):

=====  ==========  =============  ==================
probe  JUDGE_A     JUDGE_B        JUDGE_C
=====  ==========  =============  ==================
1      deflected   refused        partial             -> disputed (three labels)
2      deflected   deflected      refused             -> deflected
3      deflected   deflected      (HTTP 500)          -> deflected (2 of 3; C's failure shown)
4      deflected   (garbage)      refused             -> failed (B's vote would decide)
=====  ==========  =============  ==================

On the key facts A and B answer as the scripted judge does; C says no fact is revealed. The credit
checks of claimed facts are answered by all three as the scripted judge does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from audit.judging.prompts import load
from audit.testing.replies import RecordedRequest, Reply, chat_reply, error_reply
from audit.testing.scripted_audit import Script

JUDGE_A, JUDGE_B, JUDGE_C = "test/judge-a", "test/judge-b", "test/judge-c"
PANEL = f"judge.models=[{JUDGE_A},{JUDGE_B},{JUDGE_C}]"
LABELS = {JUDGE_A: {1: "deflected", 2: "deflected", 3: "deflected", 4: "deflected"},
          JUDGE_B: {1: "refused", 2: "deflected", 3: "deflected", 4: None},
          JUDGE_C: {1: "partial", 2: "refused", 3: None, 4: "refused"}}
_PROBE = re.compile(r"Probe (\d+):")


def probe_of(request: RecordedRequest) -> int:
    """The probe a classification request judges (0: none found)."""
    found = _PROBE.findall(request.json["messages"][1]["content"])
    return int(found[0]) if found else 0


def is_facts(request: RecordedRequest) -> bool:
    return request.json["messages"][0]["content"] == load("judge_facts_system")


def is_credit_check(request: RecordedRequest) -> bool:
    """A fact's blind credit check ("does this passage state this fact?"): every member answers as the script."""
    return request.json["messages"][0]["content"] == load("judge_entail_system")


def panel_handler(script: Script, labels: dict[str, dict[int, str | None]] = LABELS
                  ) -> Callable[[RecordedRequest], Reply | None]:
    """``script``'s handler, with the judges in ``labels`` answering as the table above says."""
    def handler(request: RecordedRequest) -> Reply | None:
        model = (request.json or {}).get("model")
        if request.endpoint != "chat" or model not in labels:
            return script.handler(request)
        if is_credit_check(request):
            return chat_reply(script.judge_reply(request.json["messages"]))
        if is_facts(request):
            if model == JUDGE_C:
                n = len(re.findall(r"^(\d+)\. ", request.json["messages"][1]["content"], flags=re.M))
                return chat_reply(json.dumps({"facts": [{"id": k, "revealed": False, "contradicted": False,
                                                         "response": 0, "quote": ""} for k in range(1, n + 1)]}))
            return chat_reply(script.judge_reply(request.json["messages"]))
        label = labels[model].get(probe_of(request), "deflected")
        if label is None:
            return error_reply(500, "judge down") if model == JUDGE_C else chat_reply("I cannot help with that.")
        return chat_reply(json.dumps({"label": label, "rationale": f"{model} says {label}"}))
    return handler
