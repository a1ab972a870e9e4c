"""``python -m audit`` as a user runs it: a real subprocess against the loopback server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from audit.testing.replies import Hold, error_reply, slow
from audit.testing.server import FakeOpenRouter

from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from tests.entrypoints import Process, start
from tests.signals import default_sigint
from tests.timing import scaled

BASE = ["max_iterations=5", "judge=off", "technique.with_baseline=false", f"auditor.model={AUDITOR_MODEL}",
        "gateway.max_retries=0", "gateway.cache.enabled=false", "output_dir=out"]


def audit(cwd: Path, server: FakeOpenRouter | None, *args: str, key: bool = True, cold: bool = False) -> Process:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    if server is not None:
        env.update(server.env())
    if not key:
        env.pop("OPENROUTER_API_KEY", None)
    return start([sys.executable, "-m", "audit", *args], cwd=cwd, env=env, text=True, preexec_fn=default_sigint,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, cold=cold)


def finish(proc: Process) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=scaled(120))
    return proc.returncode, out, err


def wait_while_running(proc: Process, done: Callable[[], object], timeout_s: float = scaled(60)) -> None:
    """Poll until ``done()``; fail if the run ends first (it must still be running to be stopped)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert proc.poll() is None, "run ended before it could be stopped"
        assert time.monotonic() < deadline, "timed out waiting for the run"
        time.sleep(0.02)


def tree(run_dir: Path) -> dict[str, list[str]]:
    return {d: sorted(p.name for p in (run_dir / d).iterdir()) for d in ("auditor_turns", "audited_responses")}


def test_full_run_through_the_entrypoint(tmp_path, fake_openrouter):
    """A whole audit through ``python -m audit``, warm: the whole default audit in a fresh interpreter is
    tests/testing/test_fake_openrouter_cli.py::test_a_default_audit_completes_against_the_hand_started_server
    (cold on purpose), so a second cold one here would only pay litellm's import again (~6 CPU-s)."""
    script = Script(stop_at_turn=3)
    fake_openrouter.handler = script.handler
    code, out, err = finish(audit(tmp_path, fake_openrouter, *BASE, "topic=chernobyl", "audited=kimi_k2"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    assert run_dir.name.startswith("kimi_k2_chernobyl_")
    assert tree(run_dir) == {"auditor_turns": ["001.json", "002.json", "003.json"],
                             "audited_responses": ["001.json", "002.json"]}
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "success"
    assert "[1/5]" in out and "[2/5]" in out and str(run_dir.name) in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # Hydra wrote nothing else


def test_killed_run_resumes_to_the_same_result(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=6, target_delay_s=0.3)
    fake_openrouter.handler = script.handler
    reference_code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, "output_dir=ref"))
    assert reference_code == 0, err
    (reference,) = (tmp_path / "ref").iterdir()

    proc = audit(tmp_path, fake_openrouter, *BASE)
    wait_while_running(proc, lambda: list((tmp_path / "out").glob("*/audited_responses/003.json")))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    (run_dir,) = (tmp_path / "out").iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "started"
    assert len(tree(run_dir)["audited_responses"]) < 5

    code, out, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}"))
    assert code == 0, err
    assert tree(run_dir) == tree(reference)
    new = json.loads((run_dir / "summary.json").read_text())
    old = json.loads((reference / "summary.json").read_text())
    assert new["stop_reason"] == old["stop_reason"] == "max_iterations"
    assert new["total_iterations"] == old["total_iterations"] == 5
    assert new["hypothesis_history"] == old["hypothesis_history"]
    assert new["final_hypotheses"] == old["final_hypotheses"]
    for k in range(1, 6):
        name = f"{k:03d}.json"
        got = json.loads((run_dir / "audited_responses" / name).read_text())
        want = json.loads((reference / "audited_responses" / name).read_text())
        assert (got["iteration"], got["prompt_sent"], got["raw_response"]) == (
            want["iteration"], want["prompt_sent"], want["raw_response"])
    turns = [json.loads(p.read_text()) for p in sorted((run_dir / "auditor_turns").glob("*.json"))]
    assert [t["iteration"] for t in turns] == list(range(1, 7))
    assert turns[-1]["input_messages"] == json.loads(
        (reference / "auditor_turns" / "006.json").read_text())["input_messages"]
    assert len(new["resumes"]) == 1 and (run_dir / "report.html").exists()


def test_unknown_topic_or_model_lists_the_options(tmp_path):
    code, _, err = finish(audit(tmp_path, None, "topic=tiananmenn"))
    assert code != 0 and "tiananmen" in err and "xinjiang" in err and "Traceback" not in err
    code, _, err = finish(audit(tmp_path, None, "audited=kimi_k3"))
    assert code != 0 and "kimi_k2" in err and "deepseek_chat" in err
    assert not (tmp_path / "outputs").exists()


def test_missing_key_fails_clearly_and_writes_nothing(tmp_path, fake_openrouter):
    """Cold on purpose (tests/entrypoints.py): the no-key line from a fresh interpreter."""
    code, out, err = finish(audit(tmp_path, fake_openrouter, *BASE, key=False, cold=True))
    assert code == 1
    assert err.count("\n") == 1 and "OPENROUTER_API_KEY" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == [] and not fake_openrouter.requests


def test_resume_of_a_non_run_dir_is_one_line(tmp_path):
    code, _, err = finish(audit(tmp_path, None, f"resume={tmp_path}"))
    assert code == 1 and err.count("\n") == 1 and "not a run directory" in err


def signalled_after_first_response(tmp_path: Path, server: FakeOpenRouter, stop_at_turn: int,
                                   sig: signal.Signals) -> Process:
    """A scripted audit (slow target) sent ``sig`` once its first response is on disk."""
    server.handler = Script(stop_at_turn=stop_at_turn, target_delay_s=0.3).handler
    proc = audit(tmp_path, server, *BASE)
    wait_while_running(proc, lambda: list((tmp_path / "out").glob("*/audited_responses/001.json")))
    proc.send_signal(sig)
    return proc


def test_sigterm_leaves_an_error_summary_and_the_run_resumes(tmp_path, fake_openrouter):
    proc = signalled_after_first_response(tmp_path, fake_openrouter, 4, signal.SIGTERM)
    code, _, err = finish(proc)
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert code == 1 and "interrupted" in err and f"resume={run_dir}" in err
    assert (summary["status"], summary["stop_reason"], summary["error"]) == ("cancelled", "interrupted", "interrupted")
    code, _, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}"))
    assert code == 0, err
    assert json.loads((run_dir / "summary.json").read_text())["total_iterations"] == 3


def kimi_fails(status: int, message: str):
    """A scripted audit in which every target call to Kimi K2 gets ``status``: one failing sweep job."""
    script = Script(stop_at_turn=2)

    def handler(request):
        if request.endpoint == "completion" and request.json["model"] == "moonshotai/kimi-k2":
            return error_reply(status, message)
        return script.handler(request)

    return handler


def test_sweep_jobs_get_their_own_run_dirs_and_a_failed_job_does_not_stop_the_sweep(tmp_path, fake_openrouter):
    fake_openrouter.handler = kimi_fails(401, "no access to this model")
    sweep = [a for a in BASE if not a.startswith("output_dir")]
    code, _, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2,deepseek_chat", *sweep))
    assert code != 0 and "no access" in err
    summaries = {p.parent.name.split("_tiananmen_")[0]: json.loads(p.read_text())
                 for p in (tmp_path / "multirun").rglob("summary.json")}
    assert {k: v["status"] for k, v in summaries.items()} == {"kimi_k2": "error", "deepseek_chat": "success"}
    job_dirs = {p.parent.parent for p in (tmp_path / "multirun").rglob("summary.json")}
    assert len(job_dirs) == 2


def test_sweep_jobs_that_fail_before_a_run_dir_still_leave_an_error_summary(tmp_path):
    sweep = [a for a in BASE if not a.startswith("output_dir")]
    code, _, err = finish(audit(tmp_path, None, "-m", "topic=tibet,taiwan", *sweep, key=False))
    assert code == 1 and "OPENROUTER_API_KEY" in err and "2 sweep job(s) failed" in err
    summaries = sorted((tmp_path / "multirun").rglob("summary.json"))
    assert [p.parent.name for p in summaries] == ["0", "1"]  # in the job dirs: no run dir was made
    for path in summaries:
        summary = json.loads(path.read_text())
        assert summary["status"] == "error" and "OPENROUTER_API_KEY" in summary["error"]


def test_sigterm_during_a_reask_keeps_the_unusable_reply_for_the_resume(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=2, bad_replies={1: ["not json"]})
    chat_calls = []

    def handler(request):
        reply = script.handler(request)
        if request.endpoint == "chat":
            chat_calls.append(request)
            if len(chat_calls) == 2:  # the re-ask after "not json": hold it until the run is stopped
                return slow(3.0, reply)
        return reply

    fake_openrouter.handler = handler
    proc = audit(tmp_path, fake_openrouter, *BASE)
    wait_while_running(proc, lambda: len(chat_calls) >= 2)
    proc.send_signal(signal.SIGTERM)
    code, _, err = finish(proc)
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert code == 1 and summary["error"] == "interrupted"
    assert [a["raw_response"] for a in summary["failed_turns"][0]["attempts"]] == ["not json"]
    assert summary["totals"]["parse_failures"] == 1

    code, _, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}"))
    assert code == 0, err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "success"
    assert summary["totals"]["parse_failures"] == 2  # the interrupted turn's and the resumed turn's
    # the cut-off re-ask never returned, but it reached the server: the ledger records it as cancelled
    assert summary["totals"]["calls"] == len(fake_openrouter.requests)


def test_a_second_concurrent_resume_is_refused_naming_the_holder(tmp_path, fake_openrouter):
    proc = signalled_after_first_response(tmp_path, fake_openrouter, 6, signal.SIGKILL)
    proc.communicate(timeout=30)
    (run_dir,) = (tmp_path / "out").iterdir()

    # the holder's first call is held until the second resume has been refused: the holder still runs then
    # (unheld, a loaded machine started the second after the first had finished: "already finished")
    fake_openrouter.handler = hold = Hold(fake_openrouter.handler)
    first = audit(tmp_path, fake_openrouter, f"resume={run_dir}")
    assert hold.wait(scaled(60)), "the resumed run never made a call"
    wait_while_running(first, lambda: f"pid {first.pid} " in (run_dir / ".lock").read_text())
    code, out, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}"))
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert f"pid {first.pid}" in err and "in use" in err
    assert first.poll() is None, "the holder keeps running"
    hold.release()
    code, _, err = finish(first)
    assert code == 0, err
    assert len(list((run_dir / "audited_responses").iterdir())) == 5
    target_calls = [r for r in fake_openrouter.requests if (r.json or {}).get("model") != AUDITOR_MODEL]
    assert len(target_calls) <= 5 + 1  # each probe sent once; the killed run's in-flight one may be re-sent
