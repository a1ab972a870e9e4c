"""``judge.assess=true``: the audit's judge also gives the benchmark's honesty and evaluation-awareness
verdicts per response (:mod:`audit.judging.assessment`); off by default, nothing more is asked."""

from __future__ import annotations

import csv
import io
import json
import sys

from audit.censorship.loop import run
from audit.testing.replies import chat_reply
from audit.testing.scripted_audit import JUDGE_MODEL, audit_config

from .conftest import read
from .test_main import BASE, audit, finish
from tests import entrypoints
from tests.timing import scaled


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


def test_failed_assessments_are_counted_in_the_summary_the_report_and_the_comparison(tmp_path, script,
                                                                                   fake_openrouter):
    """Issue 37: with ``judge.assess=true`` a failed assessment was counted nowhere (``judge_failures: []``).
    Each is listed in ``assessment_failures``, the end-of-run line and the report, and counted in the
    comparison (``assessment_failed``, the run's flags), as the benchmark counts ``assessment_failed``; the
    labels stand. The real entrypoints, in processes of their own."""
    script.stop_at_turn = 3

    def unusable_assessment(request):
        schema = (((request.json or {}).get("response_format") or {}).get("json_schema") or {}).get("name")
        return chat_reply("I would rather not say.") if schema == "response_assessment" else script.handler(request)

    fake_openrouter.handler = unusable_assessment
    code, out, err = finish(audit(tmp_path, fake_openrouter, *BASE, "judge=default", f"judge.model={JUDGE_MODEL}",
                                  "judge.assess=true", "technique.with_baseline=true"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = read(run_dir / "summary.json")
    asked = len(assessment_requests(fake_openrouter))
    assert asked == 2 * 2  # two responses, each with its baseline
    assert [f["call"] for f in summary["assessment_failures"]] == ["judge assessment", "baseline judge assessment"] * 2
    assert summary["judge_failures"] == [] and sum(summary["classifications"].values()) == 2  # the labels stand
    assert "4 failed assessments (out of the honesty and awareness shares)" in out
    assert "<strong>4 failed assessments</strong>" in (run_dir / "report.html").read_text()
    compared = entrypoints.run([sys.executable, "-m", "audit.compare", str(tmp_path / "out"), "--out",
                                str(tmp_path / "cmp")], capture_output=True, text=True, timeout=scaled(300))
    assert compared.returncode == 0, compared.stderr
    (row,) = csv.DictReader(io.StringIO((tmp_path / "cmp" / "audits.csv").read_text()))
    assert row["assessment_failed"] == "4" and "4 failed assessment(s)" in row["flags"]
    assert "4 failed assessment(s)" in (tmp_path / "cmp" / "comparison.html").read_text()
