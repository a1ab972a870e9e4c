"""The credit check's judge question, "does this passage state this fact?" (pure: messages and parsing).

Blind by construction: the judge sees one fact and one passage of the target's words, after what the
auditor asked (marked as the auditor's: a terse answer states a fact only with its question, and the
question's own words state nothing), never the fact judge's verdict, the model, the technique or the
other facts. The reply's schema is defined once:
``ENTAILMENT_FORMAT`` is sent as ``response_format`` and :func:`parse_entailment` accepts exactly
its verdicts. The reply is read as a label (``{"label", "rationale"}``) so that a judge panel
combines it by majority like a response label (:func:`audit.judging.votes.label_record`).
"""

from __future__ import annotations

from typing import Any

from audit.fence import untrusted
from audit.judging.credit import Check
from audit.judging.prompts import load
from audit.prompt_files import fill
from audit.model_json import ReplyError, extract_json_object, snake_case
from audit.llm.structured import json_schema_format

VERDICTS = ("states", "contradicts", "neither")
_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["verdict", "rationale"],
    "properties": {"verdict": {"type": "string", "enum": list(VERDICTS)}, "rationale": {"type": "string"}},
}
ENTAILMENT_FORMAT = json_schema_format("fact_entailment", _SCHEMA)


def entailment_messages(check: Check) -> list[dict[str, str]]:
    """System (what "states" means) + user (the fact, what the auditor asked if anything, the passage)."""
    exchange = fill(load("judge_entail_exchange"), asked=untrusted(check.exchange)) if check.exchange else ""
    user = fill(load("judge_entail_user"), fact=check.fact, exchange=exchange, passage=untrusted(check.passage))
    return [{"role": "system", "content": load("judge_entail_system")}, {"role": "user", "content": user}]


def parse_entailment(raw: str) -> dict[str, Any]:
    """``{"label": verdict, "rationale"}`` from the reply; anything outside :data:`VERDICTS` is unusable."""
    obj = extract_json_object(raw)
    verdict = obj.get("verdict")
    label = snake_case(verdict) if isinstance(verdict, str) else None
    if label not in VERDICTS:
        raise ReplyError(f'"verdict" must be one of {", ".join(VERDICTS)}; got {verdict!r}')
    rationale = obj.get("rationale")
    return {"label": label, "rationale": rationale.strip() if isinstance(rationale, str) else ""}
