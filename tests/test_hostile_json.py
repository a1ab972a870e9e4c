"""End to end: model replies that nest JSON thousands deep or run to megabytes are unusable replies
like any other bad JSON, on every path that reads model JSON, and a resume never replays one.

Before the one reader (``audit.model_json``) checked depth and size first, such a reply raised
``RecursionError``: a traceback, a summary left ``started`` (then ``running``), and the same crash on every resume
because the reply was cached.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from audit.model_json import MAX_CHARS
from audit.testing.replies import chat_reply, nested_json
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import ANSWER, AUDITOR, AUDITOR_MODEL, JUDGE, JUDGE_MODEL, Script, chat_role
from tests import entrypoints

AUDIT = (f"auditor.model={AUDITOR_MODEL}", "gateway.max_retries=0", "max_iterations=4", "output_dir=out")
HUGE = '{"answer": "' + "x" * (MAX_CHARS + 10) + '"}'


def _run(module: str, cwd: Path, server: FakeOpenRouter, *args: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    return entrypoints.run([sys.executable, "-m", module, *args], cwd=cwd, env={**base, **server.env()},
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


def _cached_texts(cache: Path) -> list[str]:
    db = sqlite3.connect(cache)
    try:
        return [row[0] for row in db.execute("SELECT value FROM responses")]
    finally:
        db.close()


def test_judge_parse_failures_are_counted_never_cached_and_asked_afresh(tmp_path, fake_openrouter):
    """Judge replies nested too deep, too large and not JSON at all: each is a recorded failed
    judgment (``judge_failures``, ``unclassified``, so out of every share, and in the end line, the
    response's file naming the error) while the iterations after go on as before, none stays in the
    response cache, and a rescore that meets them again asks afresh on its resume instead of replaying
    them. (Until issue 40 cut the suite's cost, the errors in the files were a run of their own.)"""
    script = Script()  # four iterations, up to max_iterations
    bad = {"Probe 1:": nested_json(), "Probe 2:": HUGE, "Probe 3:": "Sure! label: refused {not json"}
    broken = {"on": True}
    judge_calls: list[str] = []

    def handler(request):
        said = json.dumps((request.json or {}).get("messages"))
        if chat_role(request.json or {}) == JUDGE and "KEY FACTS" not in said:
            judge_calls.append(said)
            if broken["on"] and (hit := [t for p, t in bad.items() if p in said]):
                return chat_reply(hit[0])
        return script.handler(request)

    fake_openrouter.handler = handler
    cache = tmp_path / "cache.sqlite"
    with_cache = ("gateway.cache.enabled=true", f"gateway.cache.path={cache}")
    proc = _run("audit", tmp_path, fake_openrouter, *AUDIT, "judge=default", f"judge.model={JUDGE_MODEL}", *with_cache)
    _clean(proc)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = _read(run_dir / "summary.json")
    assert [(f["iteration"], f["call"]) for f in summary["judge_failures"]] == [
        (k, call) for k in (1, 2, 3) for call in ("judge", "baseline judge")]  # the baseline is judged too
    assert summary["classifications"] == summary["baseline_classifications"] == {"deflected": 1, "unclassified": 3}
    assert summary["failed_calls"] == 0
    assert "6 judge failures (unclassified, out of every share)" in proc.stdout.strip().splitlines()[-1]
    deep, huge, _, fine = (_read(run_dir / "audited_responses" / f"00{k}.json")["classification"] for k in (1, 2, 3, 4))
    assert "nests deeper than" in deep["error"] and "characters, over the" in huge["error"], \
        "judge replies too deep or too large are recorded errors, each named"
    assert fine["label"] == "deflected", "the iterations after a bad judge reply go on as before"
    assert not [t for t in _cached_texts(cache) if "[[[[" in t or "x" * 1000 in t or "{not json" in t]

    # A rescore by the same judge meets the same bad replies: recorded failures, not cached...
    code = entrypoints.run([sys.executable, "-m", "audit.rescore", str(run_dir), f"judge.model={JUDGE_MODEL}",
                           *with_cache], cwd=tmp_path, capture_output=True, text=True, timeout=180,
                           env={**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")},
                               **fake_openrouter.env()})
    assert code.returncode == 0, code.stderr
    (judging,) = (run_dir / "judgings").iterdir()
    assert len(_read(judging / "judging.json")["judge_failures"]) == 6
    # ... and its resume asks those six afresh (the judge now answers) instead of replaying them.
    broken["on"] = False
    judge_calls.clear()
    again = entrypoints.run([sys.executable, "-m", "audit.rescore", str(run_dir), f"judge.model={JUDGE_MODEL}",
                            *with_cache], cwd=tmp_path, capture_output=True, text=True, timeout=180,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")},
                                **fake_openrouter.env()})
    assert again.returncode == 0, again.stderr
    assert sorted(p for p in bad for call in judge_calls if p in call) == sorted(2 * list(bad))
    judged = _read(judging / "judging.json")
    assert judged["judge_failures"] == [] and judged["classifications"] == {"deflected": 4}
    assert judged["baseline_classifications"] == {"deflected": 4}


def test_answers_that_fail_to_parse_are_errors_and_never_served_again(tmp_path, fake_openrouter):
    """Epistemic answers too deep, too large or not JSON: errors recorded in ``results.jsonl`` while the
    run goes on, counted in ``answer_errors`` and ``failed_calls`` (left out of every rate), and dropped
    from the cache, so a re-run asks afresh. (Until issue 40 cut the suite's cost, the recorded errors
    were a run of their own, without the cache: the answers are read by the one reader either way.)"""
    script = Script()
    bad_texts = [nested_json(), HUGE, "no JSON here {"]
    sent: list[str] = []
    lock = threading.Lock()

    def handler(request):
        if chat_role(request.json or {}) == ANSWER:
            said = json.dumps(request.json["messages"])
            with lock:
                if said not in sent and len(sent) < len(bad_texts):
                    sent.append(said)
                    return chat_reply(bad_texts[len(sent) - 1])
        return script.handler(request)

    fake_openrouter.handler = handler
    with_cache = ("gateway.cache.enabled=true", f"gateway.cache.path={tmp_path / 'cache.sqlite'}")
    args = ("system=raw_llm", "cards.num_per_type=2", "gateway.max_retries=0", *with_cache)
    proc = _run("audit.epistemic", tmp_path, fake_openrouter, *args)
    _clean(proc)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "outputs" / "epistemic").iterdir()
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    errors = sorted(r["error"] for r in rows if r.get("error"))
    assert len(rows) == 18 and len(errors) == 3, [e[:200] for e in errors]
    not_json, deep, huge = errors  # sorted: "unparseable: 'no JSON", "unparseable: '{...", "your reply is ..."
    assert deep.startswith("unparseable: '{\"answer\": [[[[") and not_json == "unparseable: 'no JSON here {'" \
        and "characters, over the" in huge, \
        "answers too deep or too large are recorded errors and the run goes on"
    summary = _read(run_dir / "summary.json")
    assert summary["failed_calls"] == 3 and list(summary["answer_errors"].values()) == [[3, 18]]
    (system,) = summary["systems"].values()
    assert system["n_errors"] == 3
    assert not [t for t in _cached_texts(tmp_path / "cache.sqlite") if "[[[[" in t or "x" * 1000 in t or "{" == t[-1]]
    again = _run("audit.epistemic", tmp_path, fake_openrouter, *args)  # the same cards: hits, and the three afresh
    assert again.returncode == 0, again.stderr
    runs = sorted((tmp_path / "outputs" / "epistemic").iterdir())
    second = _read(runs[-1] / "summary.json")
    assert second["failed_calls"] == 0 and second["usage"]["cached_calls"] == 15
