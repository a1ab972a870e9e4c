"""Whole audits against the loopback server playing the replies OpenRouter documents (shapes and sources
in :mod:`audit.testing.documented`): ``python -m audit`` in a subprocess where the test reads what the
entrypoint prints or how it ends, else in this process through the loop it runs
(:func:`~tests.censorship.conftest.audit_in_process`; a warm start each cost ~0.4 CPU-s more)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pandas as pd

from audit.compare.collect import collect
from audit.compare.tables import audit_records
from audit.testing import documented
from audit.testing.providers import stripping_special_tokens
from audit.testing.replies import COMPLETION, completion_reply, error_reply
from audit.testing.scripted_audit import JUDGE_MODEL, Script, chat_role, target_text
from tests import entrypoints
from tests.censorship.test_main import BASE, audit, finish

from .conftest import audit_in_process

JUDGED = [*BASE, "judge=default", f"judge.model={JUDGE_MODEL}", "topic.key_facts=[]"]


class FirstCalls:
    """The script, except that the first completion requests get ``replies`` (in order)."""

    def __init__(self, script: Script, *replies):
        self.script, self.replies, self.lock = script, list(replies), threading.Lock()

    def __call__(self, request):
        if request.endpoint == COMPLETION:
            with self.lock:
                if self.replies:
                    return self.replies.pop(0)
        return self.script.handler(request)


def run_dir_of(tmp_path: Path) -> Path:
    (run_dir,) = (tmp_path / "out").iterdir()
    return run_dir


def judge_inputs(server) -> list[str]:
    return [r.json["messages"][-1]["content"] for r in server.chat_requests() if chat_role(r.json) == "judge"]


def test_error_finish_and_empty_reply_are_retried_and_never_judged(tmp_path, fake_openrouter):
    """An error finish with partial text, then "no content generated", then the real draw: the draw
    saved and judged is the third; the partial text reaches no file, judge or auditor."""
    partial = "PARTIAL-TEXT the square was cleared on the night of"
    fake_openrouter.handler = FirstCalls(Script(stop_at_turn=2), documented.error_finish(COMPLETION, partial),
                                         documented.empty(COMPLETION))
    audit_in_process(fake_openrouter, tmp_path, *JUDGED, "gateway.max_retries=3", "gateway.backoff_initial_s=0.01",
                     "gateway.backoff_max_s=0.02")
    run_dir = run_dir_of(tmp_path)
    response = json.loads((run_dir / "audited_responses" / "001.json").read_text())
    assert response["raw_response"] == target_text(1) and response["usage"]["retries"] == 2
    assert response["outcome"] == "answer" and response["classification"]["label"] == "deflected"
    every_file = "".join(p.read_text() for p in run_dir.rglob("*.json*"))
    assert "PARTIAL-TEXT" not in every_file
    assert not any("PARTIAL-TEXT" in json.dumps(r.json) for r in fake_openrouter.chat_requests())
    assert len(judge_inputs(fake_openrouter)) == 1


def test_an_empty_draw_is_its_own_outcome_and_a_compressed_prompt_is_recorded_on_its_draw(tmp_path, fake_openrouter):
    """One run, two replies OpenRouter documents (each once a run of its own):

    The model ended the user turn at once (empty text, finish "stop"): saved as outcome ``empty``,
    counted in the summary, never sent to the judge (it would be labelled a refusal).

    OpenRouter's router metadata names a ``context_compression`` stage (middle-out) when the prompt
    was cut before the model saw it (router metadata guide, "Pipeline Stages"); a prompt billed at a
    fraction of what was sent says the same with no stage. Before, both were dropped from the draw."""
    fake_openrouter.handler = FirstCalls(Script(stop_at_turn=4), completion_reply(""), documented.compressed(COMPLETION),
                                         completion_reply(" I was there.", usage={"prompt_tokens": 2}))
    audit_in_process(fake_openrouter, tmp_path, *JUDGED)
    run_dir = run_dir_of(tmp_path)
    first, second, third = (json.loads((run_dir / "audited_responses" / f"00{k}.json").read_text()) for k in (1, 2, 3))
    assert (first["raw_response"], first["outcome"], first["classification"]) == ("", "empty", None), "empty draw"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["served"]["outcomes"] == {"answer": 2, "empty": 1}, "the empty draw is counted"
    assert len(judge_inputs(fake_openrouter)) == 2, "the empty draw is never judged"  # the later two only
    assert second["served"]["compressed"] == "context compression (middle-out, 100 prompt to 20)"
    assert second["served"]["routing"]["pipeline"][0]["type"] == "context_compression"
    assert third["served"]["compressed"].startswith("prompt billed 2 tokens, about "), "a fraction billed"
    served = summary["served"]
    assert served["compressed"] == 2 and "2 draw(s) reached the model compressed" in served["flag"]


def test_mistyped_target_stops_with_error_after_the_first_failed_call(tmp_path, fake_openrouter):
    script = Script()
    fake_openrouter.handler = lambda r: documented.model_not_found(r.json["model"]) \
        if r.endpoint == COMPLETION else script.handler(r)
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, "audited.model=deepseek/deepseek-chta"))
    assert code != 0
    assert "model_not_found" in err and "openrouter.ai/models" in err and err.count("\n") <= 2
    summary = json.loads((run_dir_of(tmp_path) / "summary.json").read_text())
    assert summary["status"] == "error"
    assert len(fake_openrouter.completion_requests()) == 1 and len(fake_openrouter.chat_requests()) == 1


def test_consecutive_failed_draws_stop_the_run(tmp_path, fake_openrouter):
    """A target that fails every call (here 502s, retried and failing again) stops the run with
    status error after ``max_failed_draws`` draws, not after max_iterations paid auditor turns."""
    script = Script()
    fake_openrouter.handler = lambda r: error_reply(502, "Provider returned error") if r.endpoint == COMPLETION \
        else script.handler(r)
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, "max_iterations=10", "max_failed_draws=2"))
    assert code != 0 and "failed 2 draws in a row" in err
    summary = json.loads((run_dir_of(tmp_path) / "summary.json").read_text())
    assert summary["status"] == "error" and summary["total_iterations"] == 2
    assert len(fake_openrouter.completion_requests()) == 2


def test_a_transient_400_leaves_later_requests_their_schema(tmp_path, fake_openrouter):
    """One judge call answered "Provider returned error" (400, no parameter named): that judgment
    fails and is recorded; every later judge and auditor request still carries response_format."""
    script = Script(stop_at_turn=3)
    failed = []

    def handler(request):
        if chat_role(request.json) == "judge" and not failed:
            failed.append(request)
            return documented.transient_400()
        return script.handler(request)

    fake_openrouter.handler = handler
    audit_in_process(fake_openrouter, tmp_path, *JUDGED)
    later = [r for r in fake_openrouter.chat_requests() if r.received_at > failed[0].received_at]
    assert later and all("response_format" in r.json for r in later)
    summary = json.loads((run_dir_of(tmp_path) / "summary.json").read_text())
    assert len(summary["judge_failures"]) == 1


def test_a_run_served_by_two_providers_is_flagged_everywhere(tmp_path, fake_openrouter):
    """OpenRouter load-balances an unpinned model: draws from two providers are flagged in the
    summary, the end line, the report and compare's row."""
    script = Script(stop_at_turn=4)
    providers = iter(["DeepInfra", "Novita"] * 5)
    lock = threading.Lock()

    def handler(request):
        if request.endpoint == COMPLETION:
            with lock:
                provider = next(providers)
            k = script._probe_number(request.json["prompt"])
            # a choice's native_finish_reason and usage.completion_tokens_details.reasoning_tokens are the
            # documented places of the provider's own reason and the reasoning tokens (API reference,
            # "Create a completion": CompletionChoice, CompletionUsage)
            return completion_reply(target_text(k), provider=provider, native_finish_reason=f"eos-{k}",
                                    reasoning_tokens=k)
        return script.handler(request)

    fake_openrouter.handler = handler
    code, out, err = finish(audit(tmp_path, fake_openrouter, *BASE))
    assert code == 0, err
    run_dir = run_dir_of(tmp_path)
    # each draw file keeps who served it, the provider's own finish reason and its reasoning tokens
    for path in sorted((run_dir / "audited_responses").glob("*.json")):
        draw = json.loads(path.read_text())
        k = script._probe_number(draw["prompt_sent"])
        assert draw["served"]["provider"] in {"DeepInfra", "Novita"}
        assert (draw["served"]["native_finish_reason"], draw["served"]["reasoning_tokens"]) == (f"eos-{k}", k)
    served = json.loads((run_dir / "summary.json").read_text())["served"]
    assert served["providers"] == {"DeepInfra": 2, "Novita": 1}
    assert served["flag"] == "served by 2 providers (DeepInfra, Novita)"
    assert "WARNING: target draws served by 2 providers" in out
    report = (run_dir / "report.html").read_text()
    assert "Target draws served by 2 providers (DeepInfra, Novita)" in report
    (run,) = collect([tmp_path / "out"]).runs
    row, _, _ = audit_records(run)
    assert "served by 2 providers (DeepInfra, Novita)" in row["flags"]


def test_provider_and_reasoning_settings_reach_every_role(tmp_path, fake_openrouter):
    """The same ``provider`` and ``reasoning`` settings on the audited model, the auditor and the judge;
    a reasoning target's chat draws get ``assistant_max_tokens`` (its reasoning counts against it)."""
    script = Script(stop_at_turn=2)
    fake_openrouter.handler = script.handler
    audit_in_process(fake_openrouter, tmp_path, *JUDGED, "audited=deepseek_r1", "technique.with_baseline=true",
                     "audited.provider={only:[deepinfra],allow_fallbacks:false}", "auditor.provider={only:[anthropic]}",
                     "auditor.reasoning={exclude:true}", "judge.provider={order:[openai]}")
    by_role = {}
    for request in fake_openrouter.requests:
        role = "target" if request.endpoint == COMPLETION else chat_role(request.json)
        by_role.setdefault("baseline" if role == "baseline" else role, request.json)
    assert by_role["target"]["provider"] == {"only": ["deepinfra"], "allow_fallbacks": False}
    assert by_role["target"]["reasoning"] == {"exclude": True}
    assert by_role["baseline"]["provider"] == {"only": ["deepinfra"], "allow_fallbacks": False}
    assert by_role["baseline"]["max_tokens"] == 4000 and by_role["target"]["max_tokens"] == 500
    assert by_role["auditor"]["provider"] == {"only": ["anthropic"]}
    assert by_role["auditor"]["reasoning"] == {"exclude": True}
    assert by_role["judge"]["provider"] == {"order": ["openai"]}


def test_a_provider_that_is_no_routing_mapping_is_one_line(tmp_path, fake_openrouter):
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, "auditor.provider={pin:[anthropic]}"))
    assert code != 0 and not (tmp_path / "out").exists()
    (line,) = err.strip().splitlines()
    assert "auditor.provider must be a mapping of OpenRouter's routing fields" in line


GLM_RUN_ON = (" I was a student then, and I saw the tanks.<|assistant|>\n<think>The user describes 1989. I must"
              " not engage.</think>\nI'm sorry, but I can't discuss that topic.")
"""A GLM user-persona draw that ran on: the user's words, GLM's end-of-user marker, the assistant's reply."""


def test_a_glm_draw_that_ran_past_a_stripped_end_of_user_token_is_cut_flagged_and_counted(tmp_path, fake_openrouter):
    """A provider that strips GLM's ``<|assistant|>`` (a special token) before matching stops lets a
    user-persona draw run on into the assistant's reply, whose ``<think>`` survives. The draw keeps
    the user's words only, the assistant's part apart (``run_on``, never judged), and the run is
    flagged and counts it; a draw with no words of the user's before it is an empty outcome."""
    fake_openrouter.handler = FirstCalls(
        Script(stop_at_turn=4), completion_reply(stripping_special_tokens(GLM_RUN_ON)),
        completion_reply(stripping_special_tokens("<|assistant|>\n<think></think>\nI can't help with that.")))
    code, out, err = finish(audit(tmp_path, fake_openrouter, *JUDGED, "audited=glm_4_5"))
    assert code == 0, err
    run_dir = run_dir_of(tmp_path)
    first, second = (json.loads((run_dir / "audited_responses" / f"00{k}.json").read_text()) for k in (1, 2))
    assert first["raw_response"] == " I was a student then, and I saw the tanks."
    assert first["run_on"].startswith("\n<think>") and first["outcome"] == "answer"
    assert (second["raw_response"], second["outcome"], second["classification"]) == ("", "empty", None)
    served = json.loads((run_dir / "summary.json").read_text())["served"]
    assert served["run_on"] == 2 and "2 user-persona draw(s) ran on into the assistant's turn" in served["flag"]
    assert "ran on into the assistant's turn" in out
    judged = judge_inputs(fake_openrouter)
    assert len(judged) == 2 and not any("can't discuss" in j or "<think>" in j for j in judged)


def test_a_target_behind_a_content_filter_is_a_finding_not_a_failure(tmp_path, fake_openrouter):
    """Every target draw answered by OpenRouter's typed 400 ``content_policy_violation`` (errors guide,
    "Typed Error Codes"): each draw is saved as ``blocked`` with the filter's code, provider and reason,
    never judged (so never a refusal) and never a failure (``max_failed_draws=2`` does not stop the run);
    the auditor is told the draw was blocked; the run ends ``success`` and the summary, the report and
    the comparison's audits table count the blocked draws in a column of their own."""
    script = Script(stop_at_turn=4)
    fake_openrouter.handler = lambda r: documented.content_policy() if r.endpoint == COMPLETION \
        else script.handler(r)
    code, _, err = finish(audit(tmp_path, fake_openrouter, *JUDGED, "max_failed_draws=2"))
    assert code == 0, err
    run_dir = run_dir_of(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "success" and summary["total_iterations"] == 3
    assert summary["blocked"] == {summary["technique"]: 3}
    assert summary["classifications"] == {} and summary["audited_errors"] == 0 and summary["call_errors"] == []
    assert summary["served"]["outcomes"] == {"blocked": 3} and summary["served"]["providers"] == {}
    first = json.loads((run_dir / "audited_responses" / "001.json").read_text())
    assert (first["outcome"], first["error"], first["classification"]) == ("blocked", None, None)
    assert first["blocked"] == {"code": "content_policy_violation", "provider": "Moonshot AI",
                                "reason": "The request was rejected as sensitive"}
    assert judge_inputs(fake_openrouter) == []
    auditor = [r for r in fake_openrouter.chat_requests() if chat_role(r.json) == "auditor"]
    assert "blocked this draw" in auditor[1].json["messages"][-1]["content"]
    report = (run_dir / "report.html").read_text()
    assert "blocked" in report and "content_policy_violation" in report
    (run,) = collect([tmp_path / "out"]).runs
    row, responses, _ = audit_records(run)
    assert row["blocked"] == 3 and responses[0]["blocked"] == 3
    # warm (tests/entrypoints.py): python -m audit.compare in a fresh interpreter is tests/compare/test_main.py's
    compared = entrypoints.run([sys.executable, "-m", "audit.compare", "out", "--out", "cmp"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert compared.returncode == 0, compared.stderr
    cmap = pd.read_csv(tmp_path / "cmp" / "censorship_map.csv")
    assert (cmap["blocked"].tolist(), cmap["blocked_share"].tolist(), cmap["n_labelled"].tolist()) == ([3], [1.0], [0])
    assert "blocked 1.000" in (tmp_path / "cmp" / "comparison.html").read_text()


def test_an_auditor_behind_a_content_filter_stops_with_one_line_naming_it(tmp_path, fake_openrouter):
    """On the auditor a filter's block is no finding but an error: one line naming the code, the
    provider and the reason, status error."""
    script = Script()
    fake_openrouter.handler = lambda r: documented.content_policy() if chat_role(r.json or {}) == "auditor" \
        else script.handler(r)
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE))
    assert code != 0
    line = err.strip().splitlines()[-1]
    assert "content_policy_violation" in line and "Moonshot AI" in line and "rejected as sensitive" in line
    assert json.loads((run_dir_of(tmp_path) / "summary.json").read_text())["status"] == "error"
