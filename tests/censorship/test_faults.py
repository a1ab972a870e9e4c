"""Faults at the HTTP boundary, end to end: retried faults change nothing; an exhausted retry
counts it in the summary's ``failed_calls`` (status still ``success``), and ``resume=`` re-does the failed calls."""

from __future__ import annotations

from pathlib import Path

from audit.censorship.loop import run
from audit.testing.replies import CHAT, Reply, completion_reply, error_in_200, error_reply, faulty, garbage, no_choices, truncated
from audit.judging.judge import classification_system
from audit.testing.scripted_audit import JUDGE_MODEL, audit_config

from .conftest import read

FAULTS = [
    lambda request: error_in_200(502, "provider failed mid-generation"),
    lambda request: no_choices(request.endpoint or CHAT),
    lambda request: Reply(body=b""),
    lambda request: garbage(200),
    lambda request: error_reply(503, "overloaded"),
    lambda request: truncated(completion_reply("cut")),
]
FAST = ("gateway.backoff_initial_s=0.001", "gateway.backoff_max_s=0.002")


def outcome(run_dir: Path) -> dict:
    """What a run found, without timestamps, latencies or usage."""
    summary = read(run_dir / "summary.json")
    turns = [read(p)["parsed"] for p in sorted((run_dir / "auditor_turns").iterdir())]
    responses = [(r["raw_response"], r["error"], (r["classification"] or {}).get("label"),
                  (r["baseline"] or {}).get("raw_response"))
                 for r in (read(p) for p in sorted((run_dir / "audited_responses").iterdir()))]
    return {"turns": turns, "responses": responses, "status": summary["status"],
            "final_hypotheses": summary["final_hypotheses"], "facts": summary["fact_recall"]["facts"]}


def unverified(run_dir: Path) -> int:
    return sum(read(p)["evidence"]["unverified"] for p in (run_dir / "auditor_turns").iterdir())


def test_fault_rate_half_gives_the_fault_free_result(audit_env, script, fake_openrouter):
    script.stop_at_turn = 4
    config = ("judge=default", "judge.model=test/judge", "technique.with_baseline=true", "gateway.max_retries=30", *FAST)
    reference = run(audit_config(audit_env / "clean", *config))
    clean_requests = len(fake_openrouter.requests)
    fake_openrouter.reset()
    fake_openrouter.handler = faulty(script.handler, 0.5, FAULTS, seed=9)
    faulted = run(audit_config(audit_env / "faulty", *config))
    assert outcome(faulted) == outcome(reference) and outcome(reference)["status"] == "success"
    usage, summary = read(faulted / "usage.json"), read(faulted / "summary.json")
    retries = usage["totals"]["retries"]
    assert retries > 5 and usage["totals"]["errors"] == 0 and summary["call_errors"] == []
    # every request on the wire is a call or one of the gateway's counted re-sends
    assert len(fake_openrouter.requests) == usage["totals"]["calls"] + retries == clean_requests + retries
    assert {k: summary["totals"][k] for k in usage["totals"]} == usage["totals"]


def test_an_exhausted_retry_marks_the_run_and_resume_repairs_it(audit_env, script, fake_openrouter):
    script.stop_at_turn = 4
    broken = {"on": True}

    def handler(request):
        if broken["on"]:
            body = request.json or {}
            if request.endpoint == "completion" and "Probe 2" in body.get("prompt", ""):
                return error_in_200(502, "provider failed mid-generation")
            messages = body.get("messages") or [{}]
            labelling = messages[0].get("content") == classification_system()  # not fact scoring,
            # which now shows the judge every probe (Probe 3 included) and is not the call under test
            if body.get("model") == JUDGE_MODEL and labelling and "Probe 3" in str(messages):
                return error_reply(500, "judge overloaded")
        return script.handler(request)

    fake_openrouter.handler = handler
    config = ("judge=default", "judge.model=test/judge", "gateway.max_retries=1", "gateway.cache.enabled=true",
              f"gateway.cache.path={audit_env / 'cache.sqlite'}", *FAST)
    run_dir = run(audit_config(audit_env / "out", *config))
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success" and summary["failed_calls"] > 0
    assert [(e["iteration"], e["call"]) for e in summary["call_errors"]] == [(2, "target"), (3, "judge")]
    assert "provider failed mid-generation" in summary["call_errors"][0]["error"]
    usage = read(run_dir / "usage.json")
    assert {k: summary["totals"][k] for k in usage["totals"]} == usage["totals"] and usage["totals"]["errors"] == 2
    assert "Completed with 2 failed calls" in (run_dir / "report.html").read_text(encoding="utf-8")

    assert unverified(run_dir) > 0  # turn 3 quotes response 2, which was missing
    broken["on"] = False
    fake_openrouter.reset()
    fake_openrouter.handler = handler
    assert run(audit_config(audit_env / "elsewhere", f"resume={run_dir}", *config)) == run_dir
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success" and summary["call_errors"] == [] and summary["failed_calls"] == 0
    second = read(run_dir / "audited_responses" / "002.json")
    assert second["error"] is None and "the answer 2" in second["raw_response"]
    assert "provider failed" in second["redone_after"][0]
    assert unverified(run_dir) == 0  # checked again against the redone response
    third = read(run_dir / "audited_responses" / "003.json")
    assert third["classification"]["label"] == "deflected"
    # only the failed calls went out again (the good target sample of iteration 3 came from the cache)
    sent = [(r.endpoint, (r.json or {}).get("model")) for r in fake_openrouter.requests]
    assert len([s for s in sent if s[0] == "completion"]) == 1
    usage = read(run_dir / "usage.json")
    assert {k: summary["totals"][k] for k in usage["totals"]} == usage["totals"]


def test_half_an_emoji_from_the_target_is_stored_and_reported(audit_env, script, fake_openrouter):
    from audit.testing.replies import BROKEN_EMOJI
    script.stop_at_turn = 3
    script.target = lambda k: f" and I remember that the answer {k} is that students gathered {BROKEN_EMOJI}"
    run_dir = run(audit_config(audit_env / "out", "gateway.cache.enabled=true",
                               f"gateway.cache.path={audit_env / 'cache.sqlite'}"))
    response = read(run_dir / "audited_responses" / "001.json")
    assert response["raw_response"].endswith("gathered \ufffd") and response["error"] is None
    assert read(run_dir / "summary.json")["status"] == "success"
    assert "gathered \ufffd" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_a_key_echoed_by_the_raw_route_reaches_no_file_and_no_prompt(audit_env, script, fake_openrouter):
    from audit.testing.replies import TEST_API_KEY, key_echo
    script.stop_at_turn = 3
    script.target_error = lambda k: None
    fake_openrouter.handler = lambda r: key_echo(r, 500) if r.endpoint == "completion" else script.handler(r)
    run_dir = run(audit_config(audit_env / "out", "gateway.max_retries=1", *FAST))
    first = read(run_dir / "audited_responses" / "001.json")
    assert "Authorization: [REDACTED]" in first["error"]  # the server did echo it; we kept only the shape
    assert not [p for p in run_dir.rglob("*") if p.is_file() and TEST_API_KEY.encode() in p.read_bytes()]
    auditor_prompts = [str(r.json) for r in fake_openrouter.chat_requests()]
    assert auditor_prompts and not [p for p in auditor_prompts if TEST_API_KEY in p]
