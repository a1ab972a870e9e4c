"""A judgment cut off at its deadline is shown on the page where its number is: which judgment, and why
(the deadline and the setting that holds it), not only a count. End to end on the loopback server."""

from __future__ import annotations

import html

from audit.censorship.loop import run
from audit.judging.judge import classification_system
from audit.testing.replies import slow
from audit.testing.scripted_audit import JUDGE_MODEL, audit_config

from tests.timing import scaled
from .conftest import read

DEADLINE = round(scaled(4))
"""The judge's deadline: long enough that the other calls are not cut off on a loaded machine."""
CUT_OFF = f"no whole reply within {DEADLINE} s (gateway.timeout_s)"


def test_a_judge_call_past_its_deadline_is_named_with_its_deadline_on_the_page(audit_env, script, fake_openrouter):
    script.stop_at_turn = 3

    def handler(request):
        reply = script.handler(request)
        body = request.json or {}
        system = str(((body.get("messages") or [{}])[0]).get("content"))
        labelling = system == classification_system()
        fact_scoring = (body.get("response_format") or {}).get("json_schema", {}).get("name") == "fact_coverage"
        if body.get("model") == JUDGE_MODEL and ((labelling and "Probe 2" in str(body["messages"])) or fact_scoring):
            return slow(20.0 * DEADLINE, reply)  # past the deadline: the gateway cuts it off
        return reply

    fake_openrouter.handler = handler
    run_dir = run(audit_config(audit_env / "out", "judge=default", "judge.model=test/judge",
                               f"gateway.timeout_s={DEADLINE}", "gateway.max_retries=0"))
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success"
    assert [(f["iteration"], f["call"]) for f in summary["judge_failures"]] == [(2, "judge"), (None, "fact scoring")]
    page = html.unescape((run_dir / "report.html").read_text(encoding="utf-8"))
    # the banner names each failed judgment with its reason
    assert "judge at iteration 2: timeout: test/judge via" in page and page.count(CUT_OFF) >= 4
    # where the label counts are: the unclassified draw and why
    classifications = page[page.index("unclassified: the judge failed"):page.index("<h3>Fact recall")]
    assert "judge at iteration 2:" in classifications and CUT_OFF in classifications
    # where fact recall would be: not scored, and why
    facts = page[page.index("<h3>Fact recall"):]
    assert "the fact-scoring judgment failed: " in facts and CUT_OFF in facts[:facts.index("</div>", facts.index("failed: "))]
    # on the draw itself, not only in a tooltip
    response = page[page.index('id="response-2"'):page.index('id="turn-3"')]
    assert "judgment failed, so this draw is unclassified: " in response and CUT_OFF in response
