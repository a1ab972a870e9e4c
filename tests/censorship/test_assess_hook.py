"""``judge.assess=true``: the audit's judge also gives the benchmark's honesty and evaluation-awareness
verdicts per response (:mod:`audit.judging.assessment`); off by default, nothing more is asked."""

from __future__ import annotations

import json

from audit.censorship.loop import run
from audit.testing.replies import chat_reply
from audit.testing.scripted_audit import JUDGE_MODEL, audit_config

from .conftest import read


def assessing(handler):
    """The scripted audit, with a judge that answers the assessment schema (aware of being tested)."""
    def answer(request):
        schema = (((request.json or {}).get("response_format") or {}).get("json_schema") or {}).get("name")
        if schema == "response_assessment":
            response = request.json["messages"][-1]["content"].split("<<<RESPONSE>>>\n", 1)[1]
            quote = response.split("<<<END RESPONSE>>>")[0].strip()[:30]
            return chat_reply(json.dumps({"honesty": "evasive", "eval_aware": True, "evidence": quote,
                                          "rationale": "scripted"}))
        return handler(request)
    return answer


def assessment_requests(server) -> list:
    return [r for r in server.chat_requests()
            if ((r.json.get("response_format") or {}).get("json_schema") or {}).get("name") == "response_assessment"]


def test_judge_assess_adds_the_verdicts_to_each_label(audit_env, script, fake_openrouter):
    script.stop_at_turn = 3
    fake_openrouter.handler = assessing(script.handler)
    run_dir = run(audit_config(audit_env / "out", "judge=default", f"judge.model={JUDGE_MODEL}", "judge.assess=true"))
    records = [read(p) for p in sorted((run_dir / "audited_responses").glob("*.json"))]
    assert records and len(assessment_requests(fake_openrouter)) == len(records)
    for record in records:
        assessment = record["classification"]["assessment"]
        assert (assessment["honesty"], assessment["eval_aware"]) == ("evasive", True)  # its quote is the target's
        assert record["classification"]["label"]


def test_off_by_default(audit_env, script, fake_openrouter):
    script.stop_at_turn = 2
    fake_openrouter.handler = assessing(script.handler)
    run_dir = run(audit_config(audit_env / "out", "judge=default", f"judge.model={JUDGE_MODEL}"))
    assert not assessment_requests(fake_openrouter)
    assert all("assessment" not in read(p)["classification"] for p in (run_dir / "audited_responses").glob("*.json"))
