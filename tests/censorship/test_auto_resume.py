"""technique=auto through ``python -m audit``: SIGKILL in the middle of a batch, after a rollback opened a
branch, then ``resume=``: the answered draws come from the cache (never re-sent), the held ones are sent,
and the tree is the uninterrupted run's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from audit.llm.ledger import read_journal
from audit.testing.replies import Hold
from audit.testing.scripted_audit import AUDITOR_MODEL, Script, probe_text

from .conftest import read
from tests import entrypoints

ARGS = ("technique=auto", "max_iterations=3", f"auditor.model={AUDITOR_MODEL}", "judge=off",
        "gateway.max_retries=0", "output_dir=out")
BATCH = [probe_text(k) for k in (31, 32, 33)]
ACTIONS = {
    1: {"kind": "assistant", "prompt": probe_text(1), "system": None},
    2: {"kind": "rollback", "conversation": "c1", "to_turn": 0, "prompt": probe_text(2), "prefill": "Sure,"},
    3: {"kind": "batch", "of": "user_persona", "prompts": BATCH, "prefill": None, "system": None},
}


def python_m_audit(cwd: Path, server, *args: str) -> entrypoints.Process:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
    return entrypoints.start([sys.executable, "-m", "audit", *args], cwd=cwd, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def in_batch(request, numbers=(32, 33)) -> bool:
    return request.endpoint == "completion" and any(f"Probe {k}:" in request.json["prompt"] for k in numbers)


def kill_when_held(tmp_path: Path, server, script: Script, matches, held: int) -> Path:
    """Run the auto audit, SIGKILL it once ``held`` draws matching ``matches`` are held and every other
    answered call is journalled (the run can do nothing more), and return its run dir."""
    hold = Hold(script.handler, matches)
    server.handler = hold
    proc = python_m_audit(tmp_path, server, *ARGS)
    deadline = time.monotonic() + 120
    try:
        while True:
            journals = list((tmp_path / "out").glob("*/usage.jsonl"))
            recorded = len(read_journal(journals[0])) if journals else 0
            if len(hold.held) == held and recorded == len(server.requests) - held:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        hold.release()
    (run_dir,) = (tmp_path / "out").iterdir()
    return run_dir


def test_a_kill_mid_branch_resumes_the_branch_without_resending_its_trunk(tmp_path, fake_openrouter):
    """Killed while the rollback's draw (the new branch's first) is in flight: the resume sends that
    draw and the rest, never the trunk's draw, and the tree is the same as if uninterrupted."""
    script = Script(actions=ACTIONS.__getitem__)
    run_dir = kill_when_held(tmp_path, fake_openrouter, script,
                             lambda r: r.endpoint == "completion" and "Probe 2:" in r.json["prompt"], 1)
    assert sorted(p.name for p in (run_dir / "audited_responses").iterdir()) == ["001.json"]
    before = len(fake_openrouter.requests)
    fake_openrouter.handler = script.handler

    out, err = python_m_audit(tmp_path, fake_openrouter, f"resume={run_dir}").communicate(timeout=120)
    assert "done: success" in out, err
    resent = fake_openrouter.requests[before:]
    assert not any(r.endpoint == "chat" and probe_text(1) in str(r.json.get("messages")) and
                   r.json.get("model") != AUDITOR_MODEL for r in resent)  # the trunk's draw is not asked again
    assert sum("Probe 2:" in r.json["prompt"] for r in resent if r.endpoint == "completion") == 1
    second = read(run_dir / "audited_responses" / "002.json")["draws"][0]
    assert (second["conversation"], second["branch"], second["parent"]) == ("c1", "c1.b2", None)
    assert second["error"] is None and second["action"] == "rollback"
    first = read(run_dir / "audited_responses" / "001.json")["draws"][0]
    assert (first["conversation"], first["branch"]) == ("c1", "c1.b1")  # the old branch is kept
    assert read(run_dir / "summary.json")["status"] == "success"


def test_a_kill_mid_batch_resumes_without_resending_answered_draws(tmp_path, fake_openrouter):
    script = Script(actions=ACTIONS.__getitem__)
    run_dir = kill_when_held(tmp_path, fake_openrouter, script, in_batch, 2)  # draws 3.2, 3.3 held; 3.1 answered
    assert sorted(p.name for p in (run_dir / "audited_responses").iterdir()) == ["001.json", "002.json"]
    before = len(fake_openrouter.requests)
    fake_openrouter.handler = script.handler

    out, err = python_m_audit(tmp_path, fake_openrouter, f"resume={run_dir}").communicate(timeout=120)
    assert "done: success" in out, err
    resent = [r for r in fake_openrouter.requests[before:] if r.endpoint == "completion"]
    # draw 3.1 was answered before the kill: the cache serves it; 3.2 and 3.3 are sent again
    assert sorted(k for k in (31, 32, 33) for r in resent if f"Probe {k}:" in r.json["prompt"]) == [32, 33]
    assert not any("Probe 2:" in r.json["prompt"] for r in resent)  # the branch's draw is not re-sent either
    batch = read(run_dir / "audited_responses" / "003.json")["draws"]
    assert [d["id"] for d in batch] == ["3.1", "3.2", "3.3"] and all(d["error"] is None for d in batch)
    second = read(run_dir / "audited_responses" / "002.json")["draws"][0]
    assert (second["conversation"], second["branch"], second["parent"]) == ("c1", "c1.b2", None)
    usage = read(run_dir / "usage.json")
    assert usage["by_tag"]["audited/batch"]["calls"] >= 3
    summary = read(run_dir / "summary.json")
    assert summary["status"] == "success" and summary["total_iterations"] == 3
