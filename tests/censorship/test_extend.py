"""Continuing what was started: a finished audit extended with ``resume=<run dir> max_iterations=N``,
and the fact scoring an interrupted audit gets."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from audit.testing.scripted_audit import JUDGE_MODEL, Script, probe_text
from tests.censorship.test_main import BASE, audit, finish, tree, wait_while_running

JUDGED = [a for a in BASE if a != "judge=off"] + ["judge=default", f"judge.model={JUDGE_MODEL}"]


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_an_extended_audit_continues_from_its_last_iteration(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script().handler  # the auditor never stops by itself
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, "max_iterations=2"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    before = {p.name: p.read_bytes() for p in (run_dir / "audited_responses").iterdir()}
    assert read(run_dir / "summary.json")["stop_reason"] == "max_iterations"
    final_before = (run_dir / "auditor_turns" / "003.json").read_bytes()
    sent = len(fake_openrouter.requests)

    code, out, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}", "max_iterations=4"))
    assert code == 0, err
    new = fake_openrouter.requests[sent:]
    # turn 3 again (now a normal turn), responses 3 and 4, turns 4 and 5 (the final one): nothing redone before
    assert len(new) == 5 and [r.endpoint for r in new].count("completion") == 2
    assert tree(run_dir) == {"auditor_turns": ["001.json", "002.json", "003.json", "003.superseded.json", "004.json",
                                               "005.json"],
                             "audited_responses": ["001.json", "002.json", "003.json", "004.json"]}
    assert all((run_dir / "audited_responses" / name).read_bytes() == data for name, data in before.items())
    assert (run_dir / "auditor_turns" / "003.superseded.json").read_bytes() == final_before
    assert read(run_dir / "audited_responses" / "003.json")["prompt_sent"] == probe_text(3)
    summary = read(run_dir / "summary.json")
    assert (summary["status"], summary["stop_reason"], summary["total_iterations"]) == ("success", "max_iterations", 4)
    assert summary["config"]["max_iterations"] == 4 and len(summary["resumes"]) == 1
    assert "max_iterations: 4" in (run_dir / "config.yaml").read_text()
    assert "continuing to max_iterations=4" in out

    # a smaller cap, and any other override, are refused in one line before anything changes
    for args, says in ((["max_iterations=3"], "give a larger max_iterations"), (["max_iterations=6", "topic=tibet"],
                                                                                 "topic cannot change")):
        code, _, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}", *args))
        assert code == 1 and err.count("\n") == 1 and says in err, err
    code, _, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}"))
    assert code == 1 and "already finished" in err and "max_iterations=N" in err


def test_an_audit_the_auditor_ended_cannot_be_extended(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script(stop_at_turn=2).handler
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    code, _, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}", "max_iterations=9"))
    assert code == 1 and "the auditor ended" in err and err.count("\n") == 1


def test_an_interrupted_audit_gets_its_fact_scoring(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script(stop_at_turn=5, target_delay_s=0.3).handler
    proc = audit(tmp_path, fake_openrouter, *JUDGED)
    wait_while_running(proc, lambda: list((tmp_path / "out").glob("*/audited_responses/001.json")))
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc)
    assert code == 1 and "interrupted" in err, err
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = read(run_dir / "summary.json")
    assert (summary["status"], summary["stop_reason"]) == ("cancelled", "interrupted")
    recall = summary["fact_recall"]
    assert recall is not None and recall["total"] > 0 and recall["covered"] is not None  # scored, not failed
    assert "scoring the key facts so far" in out
    facts_calls = [r for r in fake_openrouter.requests if r.endpoint == "chat"
                   and r.json["model"] == JUDGE_MODEL and "key facts" in json.dumps(r.json).lower()]
    assert facts_calls
