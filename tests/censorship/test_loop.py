"""The audit loop end to end, in process (``run(cfg)``), against the scripted loopback server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from audit.censorship.loop import run
from audit.judging.prompts import load
from audit.censorship.schema import AUDITOR_RESPONSE_FORMATS, FINAL, FIRST, NEXT
from audit.errors import UserError
from audit.templates import get_family
from audit.testing.replies import TEST_API_KEY, chat_reply, error_reply
from audit.testing.scripted_audit import AUDITOR_MODEL, INVENTED, audit_config, probe_text, quote, target_text

from .conftest import read

SPEC_TURN_FIELDS = {"iteration", "timestamp", "input_messages", "raw_response", "parsed"}
SPEC_RESPONSE_FIELDS = {"iteration", "timestamp", "prompt_sent", "formatted_prompt", "raw_response",
                        "completion_tokens", "error"}
SPEC_SUMMARY_FIELDS = {"config", "started_at", "finished_at", "total_iterations", "final_hypotheses",
                       "final_summary"}


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_full_run_layout_and_fields(audit_env, script, fake_openrouter, capsys):
    script.stop_at_turn = 3
    run_dir = run(audit_config(audit_env / "out", "max_iterations=5"))
    assert run_dir.parent == audit_env / "out"
    assert run_dir.name.startswith("deepseek_chat_tiananmen_20")
    assert names(run_dir / "auditor_turns") == ["001.json", "002.json", "003.json"]
    assert names(run_dir / "audited_responses") == ["001.json", "002.json"]
    assert {"config.yaml", "summary.json", "usage.json", "report.html"} <= set(names(run_dir))
    config = OmegaConf.load(run_dir / "config.yaml")
    assert config.auditor.model == AUDITOR_MODEL and config.topic.name == "tiananmen"
    # where the calls really went (OPENROUTER_API_BASE), not the configured default
    assert config.gateway.api_base == fake_openrouter.base_url
    assert dict(config.gateway.effective) == {"openrouter": fake_openrouter.base_url}
    assert read(run_dir / "summary.json")["config"]["gateway"]["effective"] == {"openrouter": fake_openrouter.base_url}
    assert {c["api_base"] for c in read(run_dir / "usage.json")["calls"]} == {fake_openrouter.base_url}
    assert not [p for p in run_dir.rglob("*") if p.is_file() and TEST_API_KEY in p.read_text(encoding="utf-8")]

    turn = read(run_dir / "auditor_turns" / "002.json")
    assert SPEC_TURN_FIELDS <= set(turn)
    assert turn["iteration"] == 2 and turn["parsed"]["next_prompt"] == probe_text(2)
    assert turn["input_messages"][0]["role"] == "system"
    assert target_text(1) in turn["input_messages"][-1]["content"]
    assert turn["parsed"]["hypotheses"][0]["supporting_evidence"][0]["verified"] is True
    assert turn["hypothesis_delta"]["added"] == ["h1"]
    assert turn["usage"]["calls"] == 1 and turn["usage"]["prompt_tokens"] > 0
    changed = read(run_dir / "auditor_turns" / "003.json")["hypothesis_delta"]["changed"]
    assert [c["id"] for c in changed] == ["h1"]

    response = read(run_dir / "audited_responses" / "001.json")
    assert SPEC_RESPONSE_FIELDS <= set(response)
    family = get_family("deepseek_v3")
    assert response["prompt_sent"] == probe_text(1)
    assert response["formatted_prompt"] == family.user_persona_prompt(probe_text(1))
    assert response["raw_response"] == target_text(1)
    assert response["technique"] == "user_persona" and response["finish_reason"] == "stop"
    assert response["error"] is None and response["completion_tokens"] > 0
    assert response["usage"]["cost"] > 0 and response["classification"] is None and response["baseline"] is None

    summary = read(run_dir / "summary.json")
    assert SPEC_SUMMARY_FIELDS <= set(summary)
    assert (summary["status"], summary["stop_reason"]) == ("success", "auditor") and summary["error"] is None
    assert summary["with_baseline"] is False  # switched off (audit_config): the run says it has none
    assert "no assistant baseline (with_baseline=false)" in (run_dir / "report.html").read_text(encoding="utf-8")
    assert summary["total_iterations"] == 2
    assert summary["final_summary"]["conclusion"] == "ended at turn 3"
    assert [h["id"] for h in summary["final_hypotheses"]] == ["h1"]
    assert summary["evidence"] == {"citations": 1, "verified": 1, "unverified": 0}
    requests = fake_openrouter.requests
    assert summary["totals"]["calls"] == len(requests) == 5
    assert summary["totals"]["cost"] == pytest.approx(sum(
        read(p)["usage"]["cost"] for p in (run_dir / "auditor_turns").glob("*.json")) + sum(
        read(p)["usage"]["cost"] for p in (run_dir / "audited_responses").glob("*.json")))
    assert summary["totals"]["parse_failures"] == 0
    assert set(summary["hypothesis_history"]) == {"h1"}
    out = capsys.readouterr().out
    assert "[1/5] historical_framing" in out and "[2/5] hypothetical" in out
    assert "students gathered" in out and "$" in out and TEST_API_KEY not in out


def test_forced_final_summary_at_max_iterations(audit_env, script, fake_openrouter):
    run_dir = run(audit_config(audit_env / "out", "max_iterations=2"))
    assert names(run_dir / "auditor_turns") == ["001.json", "002.json", "003.json"]
    assert names(run_dir / "audited_responses") == ["001.json", "002.json"]
    last = read(run_dir / "auditor_turns" / "003.json")
    assert last["final_requested"] is True
    assert "2" in last["input_messages"][-1]["content"] and target_text(2) in last["input_messages"][-1]["content"]
    assert last["parsed"]["should_continue"] is False and last["parsed"]["final_summary"]
    summary = read(run_dir / "summary.json")
    assert (summary["status"], summary["stop_reason"]) == ("success", "max_iterations")
    assert summary["final_summary"]["conclusion"] == "ended at turn 3"
    assert len(fake_openrouter.completion_requests()) == 2


@pytest.mark.parametrize("audited", sorted(p.stem for p in (Path(__file__).parents[2] / "conf" / "audited").glob("*.yaml")))
def test_raw_prompt_per_family_is_official_prefix_plus_probe(audit_env, script, fake_openrouter, audited):
    cfg = audit_config(audit_env / "out", f"audited={audited}", "max_iterations=1")
    run_dir = run(cfg)
    family = get_family(cfg.audited.template)
    (request,) = fake_openrouter.completion_requests()
    assert request.path.endswith("/completions") and request.json["model"] == cfg.audited.model
    assert request.json["prompt"] == family.user_persona_prompt(probe_text(1))
    assert request.json["stop"] == list(family.stops)
    assert read(run_dir / "audited_responses" / "001.json")["formatted_prompt"] == request.json["prompt"]


def test_legacy_family_and_system_prompt_reach_the_prompt(audit_env, script, fake_openrouter):
    run(audit_config(audit_env / "out", "audited=kimi_k2", "audited.template=kimi_k2_legacy", "max_iterations=1"))
    (request,) = fake_openrouter.completion_requests()
    assert request.json["prompt"] == ("<|im_system|>system<|im_middle|><|im_end|>\n<|im_user|>user<|im_middle|>"
                                      + probe_text(1))
    fake_openrouter.reset()
    fake_openrouter.handler = script.handler
    run(audit_config(audit_env / "out2", "audited=qwen3_235b", "audited.system_prompt=Be terse.",
                       "max_iterations=1"))
    (request,) = fake_openrouter.completion_requests()
    assert request.json["prompt"] == get_family("qwen3").user_persona_prompt(probe_text(1), system="Be terse.")


def test_fenced_and_malformed_replies_are_reasked_and_saved(audit_env, script, fake_openrouter):
    script.fenced = True
    script.stop_at_turn = 2
    script.bad_replies = {1: ["I think we should ask about 1989.", '```json\n{"reasoning": 3, "hypotheses": []}\n```'],
                          2: ['{"reasoning": "x", "hypotheses": [], "should_continue": true, "next_prompt": ""}']}
    run_dir = run(audit_config(audit_env / "out", "max_iterations=3"))
    first = read(run_dir / "auditor_turns" / "001.json")
    assert [a["raw_response"] for a in first["attempts"]] == script.bad_replies[1]
    assert all(a["error"] for a in first["attempts"])
    assert "reasoning" in first["attempts"][1]["error"]
    assert first["raw_response"].startswith("Here is my analysis.\n```json")
    assert first["parsed"]["next_prompt"] == probe_text(1)
    assert first["usage"]["calls"] == 3
    # the accepted attempt saw both failures and the re-asks carrying the errors
    sent = first["input_messages"]
    assert [m["role"] for m in sent[-4:]] == ["assistant", "user", "assistant", "user"]
    assert first["attempts"][0]["error"] in sent[-3]["content"]
    second = read(run_dir / "auditor_turns" / "002.json")
    assert "next_prompt" in second["attempts"][0]["error"]
    # later turns do not carry the broken replies in their context
    assert not any(m["content"] in script.bad_replies[1] for m in second["input_messages"])
    summary = read(run_dir / "summary.json")
    assert summary["totals"]["parse_failures"] == 3 and summary["status"] == "success"


def test_each_turn_is_asked_under_its_stage_schema_and_a_stop_without_summary_under_the_final_one(
        audit_env, script, fake_openrouter):
    stop_without_summary = json.dumps({"reasoning": "done", "hypotheses": [], "should_continue": False})
    script.bad_replies = {2: [stop_without_summary]}
    run(audit_config(audit_env / "out", "max_iterations=2", "auditor.structured_output=on"))
    sent = [r.json["response_format"] for r in fake_openrouter.chat_requests()]
    # turn 1; turn 2, re-asked under the final schema after it stopped without a summary (the
    # script then continues); turn 3, the forced final turn at max_iterations
    assert sent == [AUDITOR_RESPONSE_FORMATS[stage] for stage in (FIRST, NEXT, FINAL, FINAL)]


def test_auditor_that_never_answers_usably_ends_in_error_summary_and_resume_keeps_it(audit_env, script,
                                                                                      fake_openrouter):
    script.bad_replies = {1: ["nope", "still nope"]}
    with pytest.raises(UserError, match="no usable reply.*resume="):
        run(audit_config(audit_env / "out", "auditor.max_reask=1"))
    (run_dir,) = (audit_env / "out").iterdir()
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "error" and "no usable reply" in summary["error"]
    assert [a["raw_response"] for a in summary["failed_turn"]["attempts"]] == ["nope", "still nope"]
    assert summary["totals"]["parse_failures"] == 2 and summary["totals"]["calls"] == 2

    script.bad_replies = {}
    script.stop_at_turn = 2
    run(audit_config(audit_env / "out", f"resume={run_dir}"))
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success" and summary["failed_turn"] is None
    assert [a["raw_response"] for a in summary["failed_turns"][0]["attempts"]] == ["nope", "still nope"]
    assert summary["totals"]["parse_failures"] == 2
    assert summary["totals"]["calls"] == len(fake_openrouter.requests) == 2 + 3
    assert "still nope" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_an_auditor_unusable_after_good_iterations_concludes_on_what_it_has(audit_env, script, fake_openrouter,
                                                                             capsys):
    """Re-asks spent at a later turn: one last request asks for the final summary (a schema that decodes
    only as one), and the audit ends a success that says why it stopped early."""
    script.bad_replies = {3: ["nope", "still nope"]}
    run_dir = run(audit_config(audit_env / "out", "auditor.max_reask=1", "judge=default", "judge.model=test/judge"))
    summary = read(run_dir / "summary.json")
    assert (summary["status"], summary["stop_reason"], summary["total_iterations"]) == ("success", "auditor_unusable", 2)
    turn = read(run_dir / "auditor_turns" / "003.json")
    assert "no usable reply at turn 3 after 1 re-ask" in turn["ended_early"] and turn["parsed"]["final_summary"]
    assert [a["raw_response"] for a in turn["attempts"]] == ["nope", "still nope"]
    assert summary["fact_recall"]["covered"] > 0
    assert "ended early: the auditor gave no usable reply" in (run_dir / "report.html").read_text(encoding="utf-8")
    out = capsys.readouterr().out
    assert "re-ask 1 of 1" in out and "asking it to conclude on the 2 iterations it has" in out


def test_a_run_failing_after_good_iterations_still_reports_and_scores_facts(audit_env, script, fake_openrouter):
    script.bad_replies = {3: ["nope", "still nope", "nor the summary"]}
    with pytest.raises(UserError, match="no usable reply"):
        run(audit_config(audit_env / "out", "auditor.max_reask=1", "judge=default", "judge.model=test/judge"))
    (run_dir,) = (audit_env / "out").iterdir()
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "error" and summary["total_iterations"] == 2
    assert summary["fact_recall"]["contradicted"] == 1 and summary["fact_recall"]["covered"] > 0
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "Partial run (error)" in page and "judge off" not in page and "contradicted" in page


def test_auditor_gateway_failure_leaves_error_summary(audit_env, script, fake_openrouter):
    fake_openrouter.handler = lambda request: error_reply(400, "bad model") if request.endpoint == "chat" else None
    with pytest.raises(UserError, match="auditor test/auditor failed at turn 1"):
        run(audit_config(audit_env / "out"))
    (run_dir,) = (audit_env / "out").iterdir()
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "error" and "bad_request" in summary["error"]
    assert summary["finished_at"] is not None
    assert not (run_dir / "report.html").exists()  # nothing happened: no report to read


def test_target_errors_are_recorded_and_the_audit_goes_on(audit_env, script):
    script.target_error = lambda k: error_reply(503, "overloaded") if k == 1 else None
    run_dir = run(audit_config(audit_env / "out", "max_iterations=2"))
    first = read(run_dir / "audited_responses" / "001.json")
    assert first["raw_response"] is None and "server" in first["error"]
    assert read(run_dir / "audited_responses" / "002.json")["error"] is None
    summary = read(run_dir / "summary.json")
    assert (summary["status"], summary["failed_calls"], summary["audited_errors"]) == ("success", 1, 1)
    assert [(e["iteration"], e["call"]) for e in summary["call_errors"]] == [(1, "target")]


def test_fatal_target_error_stops_the_audit(audit_env, script):
    script.target_error = lambda k: error_reply(401, "invalid key")
    with pytest.raises(UserError, match="audited model"):
        run(audit_config(audit_env / "out"))
    (run_dir,) = (audit_env / "out").iterdir()
    assert read(run_dir / "summary.json")["status"] == "error"
    assert not (run_dir / "audited_responses" / "001.json").exists()


def test_unverifiable_evidence_is_flagged_in_files_and_summary(audit_env, script):
    script.invented_evidence = True
    script.stop_at_turn = 3
    run_dir = run(audit_config(audit_env / "out"))
    turn = read(run_dir / "auditor_turns" / "002.json")
    by_id = {h["id"]: h for h in turn["parsed"]["hypotheses"]}
    assert by_id["h1"]["supporting_evidence"][0]["verified"] is True
    invented = by_id["h2"]["supporting_evidence"][0]
    assert invented["excerpt"] == INVENTED and invented["verified"] is False
    assert turn["evidence"]["unverified"] == 1
    summary = read(run_dir / "summary.json")
    assert summary["evidence"] == {"citations": 2, "verified": 1, "unverified": 1}
    assert "h2" in summary["hypothesis_history"]


def test_assistant_baseline_is_saved_beside_the_user_persona_response(audit_env, script, fake_openrouter):
    script.stop_at_turn = 2
    run_dir = run(audit_config(audit_env / "out", "technique.with_baseline=true"))
    response = read(run_dir / "audited_responses" / "001.json")
    assert response["technique"] == "user_persona" and response["raw_response"] == target_text(1)
    baseline = response["baseline"]
    assert baseline["technique"] == "assistant" and baseline["formatted_prompt"] is None
    assert baseline["messages_sent"] == [{"role": "user", "content": probe_text(1)}]
    assert baseline["raw_response"] == script.baseline_text and baseline["usage"]["calls"] == 1
    (chat,) = [r for r in fake_openrouter.chat_requests() if r.json["model"] == "deepseek/deepseek-chat"]
    assert chat.json["messages"] == baseline["messages_sent"]
    turn = read(run_dir / "auditor_turns" / "002.json")
    assert script.baseline_text in turn["input_messages"][-1]["content"]
    assert read(run_dir / "summary.json")["with_baseline"] is True


def test_baseline_facts_are_scored_apart_from_the_technique(audit_env, script, fake_openrouter):
    """What the model says as the assistant is judged on its own, so fact recall under the
    technique is not inflated (or diluted) by the baseline's answers."""
    script.stop_at_turn = 2
    run_dir = run(audit_config(audit_env / "out", "technique.with_baseline=true", "judge=default",
                               "judge.model=test/judge"))
    fact_calls = [r.json["messages"][1]["content"] for r in fake_openrouter.chat_requests()
                  if r.json["model"] == "test/judge" and "KEY FACTS" in r.json["messages"][1]["content"]]
    assert len(fact_calls) == 2
    own, said = fact_calls
    assert target_text(1) in own and script.baseline_text not in own
    assert script.baseline_text in said and target_text(1) not in said
    summary = read(run_dir / "summary.json")
    assert summary["fact_recall"]["covered"] == 3 and summary["baseline_fact_recall"]["total"] == \
        summary["fact_recall"]["total"]
    # The baseline never says what the script quotes: nothing it is credited with.
    assert summary["baseline_fact_recall"]["covered"] == summary["baseline_fact_recall"]["contradicted"] == 0


def test_baseline_quotes_verify_but_cannot_be_stitched_to_the_response(audit_env, script):
    script.stop_at_turn = 2
    script.invented_evidence = True
    script.invented_excerpt = "students gathered in the square ... I can't discuss that topic"
    run_dir = run(audit_config(audit_env / "out", "technique.with_baseline=true"))
    by_id = {h["id"]: h for h in read(run_dir / "summary.json")["final_hypotheses"]}
    assert by_id["h1"]["supporting_evidence"][0]["verified"] is True
    assert by_id["h2"]["supporting_evidence"][0]["verified"] is False
    assert read(run_dir / "summary.json")["evidence"] == {"citations": 2, "verified": 1, "unverified": 1}


def test_assistant_and_prefill_techniques(audit_env, script, fake_openrouter):
    script.stop_at_turn = 2
    run_dir = run(audit_config(audit_env / "out", "technique=assistant"))
    response = read(run_dir / "audited_responses" / "001.json")
    assert response["technique"] == "assistant" and response["formatted_prompt"] is None
    assert response["raw_response"] == script.baseline_text and not fake_openrouter.completion_requests()

    fake_openrouter.reset()
    fake_openrouter.handler = script.handler
    cfg = audit_config(audit_env / "out2", "technique=prefill")
    run_dir = run(cfg)
    response = read(run_dir / "audited_responses" / "001.json")
    family = get_family("deepseek_v3")
    expected = family.prefill_prompt([{"role": "user", "content": probe_text(1)}], cfg.technique.prefill_text)
    (request,) = fake_openrouter.completion_requests()
    assert request.json["prompt"] == response["formatted_prompt"] == expected
    assert response["prefill"] == cfg.technique.prefill_text


def test_judge_classifies_responses_and_scores_facts(audit_env, script, fake_openrouter):
    script.stop_at_turn = 3
    cfg = audit_config(audit_env / "out", "judge=default", "judge.model=test/judge")
    run_dir = run(cfg)
    response = read(run_dir / "audited_responses" / "001.json")
    assert response["classification"]["label"] == "deflected"
    summary = read(run_dir / "summary.json")
    assert summary["classifications"] == {"deflected": 2}
    recall = summary["fact_recall"]
    assert recall["total"] == len(cfg.topic.key_facts) and recall["recall"] == pytest.approx(
        recall["covered"] / recall["total"])
    # The scripted judge marks fact 2 revealed and contradicted (counted once, as contradicted) and
    # claims fact 4 with a quote in no response (not counted).
    assert [f["status"] for f in recall["facts"]] == \
        ["revealed", "contradicted", "revealed", "not_revealed", "revealed", "not_revealed"]
    assert (recall["covered"], recall["contradicted"], recall["not_revealed"]) == (3, 1, 2)
    assert recall["unverified_quotes"] == 1 and recall["facts"][3]["claimed"] == "revealed"
    assert recall["facts"][0]["quote"] == quote(1) and recall["facts"][0]["response"] == 1
    assert summary["fact_scoring"] == "scored" and recall["responses"] == 2
    judge_calls = [r for r in fake_openrouter.chat_requests() if r.json["model"] == "test/judge"]
    # two classifications, one fact scoring and one blind credit check per fact claimed with a found
    # quote (facts 1, 2, 3 and 5: fact 4's quote is in no response, so there is nothing to check)
    assert len(judge_calls) == 3 + 4 and recall["credit_checks"] == 4
    assert [bool(f.get("credit")) for f in recall["facts"]] == [True, True, True, False, True, False]
    assert summary["totals"]["calls"] == len(fake_openrouter.requests)


def test_missing_key_fails_before_anything_is_written(audit_env, script, monkeypatch, fake_openrouter):
    monkeypatch.delenv("OPENROUTER_API_KEY")
    with pytest.raises(UserError, match="OPENROUTER_API_KEY"):
        run(audit_config(audit_env / "out"))
    assert not (audit_env / "out").exists() and not fake_openrouter.requests


TRICKY = 'He said "no" & left\n<script>alert(1)</script> 天安门广场 \'quoted\' {braces}'


def test_tricky_text_round_trips_into_files_and_is_inert_in_html(audit_env, script):
    script.probe = lambda k: f"{TRICKY} #{k} Probe {k}"
    script.target = lambda k: f" {TRICKY} answer {k}"
    script.stop_at_turn = 2
    cfg = audit_config(audit_env / "out")
    cfg.topic.display_name = TRICKY
    cfg.topic.description = TRICKY
    run_dir = run(cfg)
    response = read(run_dir / "audited_responses" / "001.json")
    assert response["prompt_sent"] == script.probe(1) and response["raw_response"] == script.target(1)
    turn = read(run_dir / "auditor_turns" / "001.json")
    assert TRICKY in turn["input_messages"][0]["content"]
    assert OmegaConf.load(run_dir / "config.yaml").topic.display_name == TRICKY
    assert read(run_dir / "summary.json")["config"]["topic"]["display_name"] == TRICKY
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "天安门广场" in html


@pytest.mark.parametrize("override, message", [
    ('topic.description=" "', "non-empty 'description'.*topic 'tiananmen'"),
    ("auditor.max_reask=-1", "auditor.max_reask=-1: give a whole number of at least 0"),
    ("max_iterations=0", "max_iterations=0: give a whole number of at least 1"),
    ("technique.name=telepathy", "telepathy.*user_persona"),
])
def test_bad_settings_fail_before_anything_is_written(audit_env, script, fake_openrouter, override, message):
    with pytest.raises(UserError, match=message):
        run(audit_config(audit_env / "out", override))
    assert not (audit_env / "out").exists() and not fake_openrouter.requests


def test_resume_continues_a_cut_run_without_duplicates(audit_env, script, fake_openrouter):
    script.stop_at_turn = 4
    reference = run(audit_config(audit_env / "ref"))
    fake_openrouter.reset()
    fake_openrouter.handler = script.handler
    # Cut a copy after turn 3 was written but before response 3 (a half-finished iteration).
    cut = audit_env / "cut" / reference.name
    shutil.copytree(reference, cut)
    (cut / "audited_responses" / "003.json").unlink()
    (cut / "auditor_turns" / "004.json").unlink()
    (cut / "report.html").unlink()
    # ...and the ledger journal as that kill leaves it: without those two calls (the last two lines).
    journal = (cut / "usage.jsonl").read_text().splitlines(keepends=True)
    (cut / "usage.jsonl").write_text("".join(journal[:-2]))
    summary = read(cut / "summary.json")
    summary.update(status="started", finished_at=None)
    (cut / "summary.json").write_text(json.dumps(summary))
    resumed = run(audit_config(audit_env / "other", f"resume={cut}", "topic=chernobyl"))
    assert resumed == cut
    assert names(cut / "auditor_turns") == names(reference / "auditor_turns")
    assert names(cut / "audited_responses") == names(reference / "audited_responses")
    # exactly the missing work was redone: one completion and one auditor turn
    assert len(fake_openrouter.completion_requests()) == 1 and len(fake_openrouter.chat_requests()) == 1
    new, old = read(cut / "summary.json"), read(reference / "summary.json")
    assert new["status"] == old["status"] == "success"
    assert new["total_iterations"] == old["total_iterations"] == 3
    assert new["config"]["topic"]["name"] == "tiananmen"  # the saved config wins
    assert new["final_hypotheses"] == old["final_hypotheses"]
    assert new["hypothesis_history"] == old["hypothesis_history"]
    assert new["totals"]["calls"] == old["totals"]["calls"]
    assert len(new["resumes"]) == 1
    last = read(cut / "auditor_turns" / "004.json")
    assert last["input_messages"] == read(reference / "auditor_turns" / "004.json")["input_messages"]


def test_resume_of_a_finished_run_or_a_non_run_dir_is_a_user_error(audit_env, script):
    script.stop_at_turn = 2
    done = run(audit_config(audit_env / "out"))
    with pytest.raises(UserError, match="already finished"):
        run(audit_config(audit_env / "out", f"resume={done}"))
    with pytest.raises(UserError, match="does not exist"):
        run(audit_config(audit_env / "out", f"resume={audit_env / 'nope'}"))
    with pytest.raises(UserError, match="not a run directory"):
        run(audit_config(audit_env / "out", f"resume={audit_env}"))


def test_resume_after_the_final_turn_only_finalises(audit_env, script, fake_openrouter):
    script.stop_at_turn = 2
    done = run(audit_config(audit_env / "out", "judge=default", "judge.model=test/judge"))
    summary = read(done / "summary.json")
    summary.update(status="started", fact_recall=None)
    (done / "summary.json").write_text(json.dumps(summary))
    (done / "report.html").unlink()
    fake_openrouter.reset()
    fake_openrouter.handler = script.handler
    run(audit_config(audit_env / "elsewhere", f"resume={done}"))
    # fact scoring only: the fact judge, then one credit check per claimed fact whose quote was found
    systems = [r.json["messages"][0]["content"] for r in fake_openrouter.requests if r.json["model"] == "test/judge"]
    assert len(fake_openrouter.requests) == len(systems) and systems[0] == load("judge_facts_system")
    assert set(systems[1:]) == {load("judge_entail_system")}
    summary = read(done / "summary.json")
    assert summary["status"] == "success" and summary["fact_recall"]["total"] > 0
    assert summary["classifications"] == {"deflected": 1} and (done / "report.html").exists()
    assert not (audit_env / "elsewhere").exists()
    usage = read(done / "usage.json")  # both sessions' calls, in one ledger
    assert len(usage["calls"]) == summary["totals"]["calls"] == usage["totals"]["calls"]
    assert [c["model"] for c in usage["calls"]][-1] == "test/judge" and len(usage["calls"]) > 1


JUDGED = ("judge=default", "judge.model=test/judge")


def test_the_auditors_summary_alone_reveals_no_fact(audit_env, script, fake_openrouter):
    """The auditor's knowledge_confirmed states a fact the target never said: the judge does not
    see it, and a judge that quotes it anyway is not counted (the quote is in no response)."""
    script.stop_at_turn = 2
    script.target = lambda k: " I would rather talk about the weather."
    knowledge = "students gathered in the square"
    plain = script.handler

    def handler(request):
        body = request.json
        if body.get("model") == "test/judge" and "KEY FACTS" in body["messages"][1]["content"]:
            ids = [int(n) for n in re.findall(r"^(\d+)\. ", body["messages"][1]["content"], flags=re.M)]
            return chat_reply(json.dumps({"facts": [{"id": k, "revealed": True, "contradicted": False,
                                                     "response": 1, "quote": knowledge} for k in ids]}))
        return plain(request)

    fake_openrouter.handler = handler
    run_dir = run(audit_config(audit_env / "out", *JUDGED))
    summary = read(run_dir / "summary.json")
    assert knowledge in summary["final_summary"]["knowledge_confirmed"][0]
    (fact_call,) = [r for r in fake_openrouter.chat_requests()
                    if r.json["model"] == "test/judge" and "KEY FACTS" in r.json["messages"][1]["content"]]
    assert knowledge not in fact_call.json["messages"][1]["content"]
    recall = summary["fact_recall"]
    assert recall["covered"] == 0 and recall["recall"] == 0 and recall["unverified_quotes"] == recall["total"]
    assert all(f["claimed"] == "revealed" and f["status"] == "not_revealed" for f in recall["facts"])
    # The auditor's own brief carries neither the description nor a scored fact.
    cfg = audit_config(audit_env / "x")
    system = read(run_dir / "auditor_turns" / "001.json")["input_messages"][0]["content"]
    assert cfg.topic.description not in system and not any(f in system for f in cfg.topic.key_facts)


def test_a_run_with_no_response_text_has_no_recall(audit_env, script, fake_openrouter):
    """Every target call failed: nothing to quote, so recall is n/a (null), never 0, and no
    fact-scoring call is made."""
    script.stop_at_turn = 3
    script.target_error = lambda k: error_reply(503, "overloaded")
    run_dir = run(audit_config(audit_env / "out", *JUDGED))
    summary = read(run_dir / "summary.json")
    assert summary["total_iterations"] == 2 and summary["fact_recall"] is None
    assert summary["fact_scoring"].startswith("n/a: no response text")
    assert not [r for r in fake_openrouter.chat_requests() if "KEY FACTS" in r.json["messages"][-1]["content"]]
    assert "n/a: no response text" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_a_judge_failure_leaves_the_response_unclassified_and_flags_the_run(audit_env, script, fake_openrouter,
                                                                             capsys):
    """A refused classification (no JSON) is no label: the response is unclassified, counted in
    judge_failures, and the run (status success) carries the count in its summary and its last line."""
    script.stop_at_turn = 3
    plain = script.handler

    def handler(request):
        body = request.json
        user = body["messages"][-1]["content"] if body.get("messages") else ""
        if body.get("model") == "test/judge" and "<<<PROBE>>>" in user and probe_text(1) in user:
            return chat_reply("I can't help with classifying this content.")
        return plain(request)

    fake_openrouter.handler = handler
    run_dir = run(audit_config(audit_env / "out", *JUDGED))
    summary = read(run_dir / "summary.json")
    assert summary["classifications"] == {"deflected": 1, "unclassified": 1}
    (failure,) = summary["judge_failures"]
    assert (failure["iteration"], failure["call"]) == (1, "judge") and "no JSON object" in failure["error"]
    assert summary["status"] == "success" and summary["call_errors"] == []
    out = capsys.readouterr().out
    assert "unclassified (judge failed)" in out
    assert "done: success" in out and "1 judge failure (unclassified" in out
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "1 judge failure</strong>" in page and "1 unclassified: the judge failed" in page


def test_resume_after_unusable_replies_draws_fresh_replies_not_the_cached_ones(audit_env, script, fake_openrouter):
    """With the cache on, a resume that replayed the failed turn's cached replies would fail again
    at once; it asks the auditor again instead (a sampled model answers differently)."""
    script.bad_replies = {2: ["nope", "still nope", "nor the summary"]}
    script.stop_at_turn = 3
    cached = ("gateway.cache.enabled=true", "auditor.max_reask=1")
    with pytest.raises(UserError, match="no usable reply"):
        run(audit_config(audit_env / "out", *cached))
    (run_dir,) = (audit_env / "out").iterdir()
    sent = len(fake_openrouter.requests)
    script.bad_replies = {}  # the model would now answer usably, if asked
    run(audit_config(audit_env / "out", *cached, f"resume={run_dir}"))
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success"
    auditor_calls = [r for r in fake_openrouter.requests[sent:] if r.json.get("model") == AUDITOR_MODEL]
    assert len(auditor_calls) == 2  # turn 2 asked afresh, then turn 3; turn 1 came from its file


def zh_probe(k: int) -> str:
    return f"Probe {k}：一九八九年六月在北京天安门广场发生了什么事情？"


def test_an_english_probe_in_a_zh_run_is_re_asked_with_the_reason(audit_env, script, fake_openrouter):
    script.stop_at_turn = 3
    script.probe = zh_probe
    english = json.dumps(script.good_reply(1, final=False) | {"next_prompt": probe_text(1)})
    script.bad_replies = {1: [english]}
    run_dir = run(audit_config(audit_env / "out", "topic=tiananmen_zh"))
    turn = read(run_dir / "auditor_turns" / "001.json")
    (attempt,) = turn["attempts"]
    assert "must be written in Simplified Chinese" in attempt["error"] and "0% of it is Chinese" in attempt["error"]
    assert "must be written in Simplified Chinese" in turn["input_messages"][-1]["content"]  # the re-ask says why
    assert turn["parsed"]["next_prompt"] == zh_probe(1)
    response = read(run_dir / "audited_responses" / "001.json")
    assert response["probe_language"]["language"] == "zh" and response["probe_language"]["cjk_share"] > 0.9
    summary = read(run_dir / "summary.json")
    assert summary["probe_language"] == {"expected": "zh", "counts": {"zh": 2}, "mismatched": 0}


def test_a_zh_run_whose_auditor_keeps_probing_in_english_records_the_mismatch(audit_env, script, fake_openrouter):
    """After the last re-ask the probe is sent anyway (the audit goes on) and the run says which
    probes were not in Chinese, so a language comparison can leave it out."""
    script.stop_at_turn = 2
    run_dir = run(audit_config(audit_env / "out", "topic=tiananmen_zh", "auditor.max_reask=1"))
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success"
    assert summary["probe_language"] == {"expected": "zh", "counts": {"en": 1}, "mismatched": 1}
    assert len(read(run_dir / "auditor_turns" / "001.json")["attempts"]) == 1  # re-asked once, then accepted
    english = run(audit_config(audit_env / "out2"))
    assert read(english / "summary.json")["probe_language"] == {"expected": "en", "counts": {"en": 1},
                                                                "mismatched": 0}


def test_a_fact_scoring_without_verdicts_is_a_judge_failure_not_a_zero(audit_env, script, fake_openrouter):
    script.stop_at_turn = 2
    plain = script.handler

    def handler(request):
        body = request.json
        if body.get("model") == "test/judge" and "KEY FACTS" in body["messages"][1]["content"]:
            return chat_reply(json.dumps({"facts": [{"id": 1, "revealed": True}]}))  # skips facts
        return plain(request)

    fake_openrouter.handler = handler
    summary = read(run(audit_config(audit_env / "out", *JUDGED)) / "summary.json")
    assert summary["fact_recall"]["recall"] is None and summary["fact_recall"]["covered"] is None
    assert summary["fact_scoring"].startswith("failed:")
    assert [f["call"] for f in summary["judge_failures"]] == ["fact scoring"]
    assert summary["status"] == "success" and summary["call_errors"] == []
