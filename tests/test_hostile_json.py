"""End to end: model replies that nest JSON thousands deep or run to megabytes are unusable replies
like any other bad JSON, on every path that reads model JSON, and a resume never replays one.

Before the one reader (``audit.model_json``) checked depth and size first, such a reply raised
``RecursionError``: a traceback, a summary left ``started`` (then ``running``), and the same crash on every resume
because the reply was cached.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from audit.model_json import MAX_CHARS
from audit.testing.replies import chat_reply, nested_json
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import ANSWER, AUDITOR, AUDITOR_MODEL, JUDGE, Script, chat_role

AUDIT = (f"auditor.model={AUDITOR_MODEL}", "gateway.max_retries=0", "max_iterations=4", "output_dir=out")
HUGE = '{"answer": "' + "x" * (MAX_CHARS + 10) + '"}'


def _run(module: str, cwd: Path, server: FakeOpenRouter, *args: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env={**base, **server.env()},
                          capture_output=True, text=True, timeout=180)


def _clean(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr[-3000:]


def _read(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_an_auditor_reply_nested_thousands_deep_is_re_asked(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=3, bad_replies={2: [nested_json()]})
    fake_openrouter.handler = script.handler
    proc = _run("audit", tmp_path, fake_openrouter, *AUDIT, "judge=off", "gateway.cache.enabled=false")
    _clean(proc)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    assert _read(run_dir / "summary.json")["status"] == "success"
    (attempt,) = _read(run_dir / "auditor_turns" / "002.json")["attempts"]
    assert "nests deeper than" in attempt["error"]


def test_judge_replies_too_deep_or_too_large_are_recorded_errors(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=4)
    bad = {"Probe 1": nested_json(), "Probe 2": HUGE}

    def handler(request):
        said = str((request.json or {}).get("messages"))
        if chat_role(request.json or {}) == JUDGE and (hit := [t for p, t in bad.items() if p in said]):
            return chat_reply(hit[0])
        return script.handler(request)

    fake_openrouter.handler = handler
    proc = _run("audit", tmp_path, fake_openrouter, *AUDIT, "judge=default", "judge.model=test/judge",
                "gateway.cache.enabled=false")
    _clean(proc)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    first, second, third = (_read(run_dir / "audited_responses" / f"00{k}.json") for k in (1, 2, 3))
    assert "nests deeper than" in first["classification"]["error"]
    assert "characters, over the" in second["classification"]["error"]
    assert third["classification"]["label"] == "deflected"  # the iterations after go on as before
    assert _read(run_dir / "summary.json")["status"] == "success"


def test_answers_too_deep_or_too_large_are_recorded_and_the_run_goes_on(tmp_path, fake_openrouter):
    script = Script()
    order = itertools.count()
    lock = threading.Lock()

    def handler(request):
        if chat_role(request.json or {}) == ANSWER:
            with lock:
                n = next(order)
            if n < 2:
                return chat_reply(nested_json() if n == 0 else HUGE)
        return script.handler(request)

    fake_openrouter.handler = handler
    proc = _run("audit.epistemic", tmp_path, fake_openrouter, "system=raw_llm", "cards.num_per_type=2",
                "gateway.max_retries=0", "gateway.cache.enabled=false")
    _clean(proc)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "outputs" / "epistemic").iterdir()
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    errors = sorted(r["error"] for r in rows if r.get("error"))
    assert len(rows) == 18 and len(errors) == 2, [e[:200] for e in errors]
    assert errors[0].startswith("unparseable") and "characters, over the" in errors[1]


def test_a_resume_does_not_replay_the_reply_that_failed_its_turn(tmp_path, fake_openrouter):
    """The auditor answers turn 2 too deep every time: the run stops; the resume asks afresh and completes."""
    script = Script(stop_at_turn=3)
    broken = {"on": True}

    def handler(request):
        if broken["on"] and chat_role(request.json or {}) == AUDITOR and "Probe 1" in str(request.json):
            return chat_reply(nested_json())
        return script.handler(request)

    fake_openrouter.handler = handler
    cache = ("gateway.cache.enabled=true", f"gateway.cache.path={tmp_path / 'cache.sqlite'}")
    first = _run("audit", tmp_path, fake_openrouter, *AUDIT, "judge=off", *cache)
    _clean(first)
    assert first.returncode == 1 and len(first.stderr.strip().splitlines()) == 1, first.stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    assert _read(run_dir / "summary.json")["status"] == "error"

    broken["on"] = False
    resumed = _run("audit", tmp_path, fake_openrouter, f"resume={run_dir}", *cache)
    _clean(resumed)
    assert resumed.returncode == 0, resumed.stderr
    assert _read(run_dir / "summary.json")["status"] == "success"
