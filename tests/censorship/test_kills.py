"""SIGKILL at chosen moments of a real ``python -m audit`` run, then ``resume=``.

Each kill point is reached deterministically where a model call follows it: the loopback
server holds that request (:class:`Hold`) and the run is killed only once every request it
can send there is held and every other answered call is in its journal, so what the kill
leaves is the same every time. Between two writes
with no call between them (the run dir being built, the final summary before the report,
the report before ``usage.json``) the run dir is polled every 2 ms for the file that marks
the point, and the kill lands at or after it; the test checks that it did land mid-run.

After each kill, ``resume=`` must give what an uninterrupted run gives (the same files,
turns, responses, labels, fact scores and status), and the ledger must be complete:
``usage.json`` counts every request the server answered in both sessions; only the calls
held in flight at the kill (and a journal line cut by it) are missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from audit.censorship.loop import run
from audit.compare.collect import collect
from audit.judging.prompts import load
from audit.llm.ledger import read_journal
from audit.testing.replies import Hold, RecordedRequest
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import AUDITOR_MODEL, JUDGE_MODEL, Script, audit_config

from .conftest import read
from .test_faults import outcome
from tests import entrypoints
from tests.compare.cells import assert_same_cells, comparison_cells

ARGS = (f"auditor.model={AUDITOR_MODEL}", "judge=default", f"judge.model={JUDGE_MODEL}",
        "technique.with_baseline=true", "gateway.max_retries=0", "gateway.cache.enabled=false",
        "auditor.context=full")  # as audit_config names it, so the killed command and the reference are one config
STOP_AT_TURN = 4  # turns 1-4, responses 1-3, then two fact-scoring calls (technique and baseline)


def body(request: RecordedRequest) -> dict:
    return request.json or {}


def auditor(request: RecordedRequest) -> bool:
    return body(request).get("model") == AUDITOR_MODEL


def target(request: RecordedRequest) -> bool:
    return request.endpoint == "completion"


def baseline(request: RecordedRequest) -> bool:
    return request.endpoint == "chat" and body(request).get("model") not in (AUDITOR_MODEL, JUDGE_MODEL)


def label(request: RecordedRequest) -> bool:
    return body(request).get("model") == JUDGE_MODEL and not facts(request)


def facts(request: RecordedRequest) -> bool:
    messages = body(request).get("messages") or [{}]
    return body(request).get("model") == JUDGE_MODEL and messages[0].get("content") == load("judge_facts_system")


@dataclass(frozen=True)
class HeldCall:
    """Kill while the server holds the calls ``matches`` picks (after the first ``skip``): ``held`` of them."""

    matches: Callable[[RecordedRequest], bool]
    skip: int = 0
    held: int = 1
    torn_journal: bool = False  # then cut the journal's last line in half, as a kill mid-append would


@dataclass(frozen=True)
class FileMark:
    """Kill as soon as ``reached(out dir)`` is true (no call follows this point)."""

    reached: Callable[[Path], bool]


def _summary_status(out: Path) -> str | None:
    found = list(out.glob("*/summary.json"))
    try:
        return read(found[0])["status"] if found else None
    except ValueError:
        return None


POINTS = {
    "building the run dir": FileMark(lambda out: out.is_dir() and any(out.iterdir())),
    "config written, nothing asked": HeldCall(auditor),
    "first turn written": HeldCall(target),  # the baseline call goes out with it
    "judge labelling response 1": HeldCall(label, held=2),
    "first response written": HeldCall(auditor, skip=1),
    "baseline 2 in flight": HeldCall(baseline, skip=1),
    "mid usage.jsonl": HeldCall(auditor, skip=2, torn_journal=True),
    "final turn written, fact scoring": HeldCall(facts),
    "baseline fact scoring": HeldCall(facts, skip=1),
    "final summary, before the report": FileMark(lambda out: _summary_status(out) == "success"),
    "report, before usage.json": FileMark(lambda out: any(out.glob("*/report.html"))),
}


POLL_S = {FileMark: 0.002, HeldCall: 0.02}
"""How often the kill point is looked for. A file mark every 2 ms: the run goes on past it, so the kill must
land soon after. A held call every 20 ms: once settled the run can do nothing more, so a later look kills
the same state; each look reads the journal (2 ms looks cost ~0.5 CPU-s a case, as much as the run)."""


def start(cwd: Path, server: FakeOpenRouter) -> entrypoints.Process:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
    return entrypoints.start([sys.executable, "-m", "audit", *ARGS, "output_dir=out"], cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_at(point: HeldCall | FileMark, cwd: Path, server: FakeOpenRouter, script: Script) -> tuple[int, bool]:
    """Run the audit and SIGKILL it at ``point``; return (calls held in flight, whether the kill
    landed mid-run)."""
    hold = Hold(script.handler, point.matches, skip=point.skip) if isinstance(point, HeldCall) else None
    server.handler = hold or script.handler
    proc = start(cwd, server)
    deadline = time.monotonic() + 120
    try:
        while not (settled(cwd / "out", server, hold, point.held) if hold else point.reached(cwd / "out")):
            assert proc.poll() is None or hold is None, "the run ended before the kill point"
            if proc.poll() is not None:
                break
            assert time.monotonic() < deadline, "timed out waiting for the kill point"
            time.sleep(POLL_S[type(point)])
        landed = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if hold is not None:
            hold.release()
        if proc.poll() is None:
            proc.kill()
    return (len(hold.held) if hold else 0), landed


def settled(out: Path, server: FakeOpenRouter, hold: Hold, held: int) -> bool:
    """``held`` calls held, and every other call the server answered is in the run's journal:
    the run can do nothing more until the held calls return."""
    journals = list(out.glob("*/usage.jsonl"))
    recorded = len(read_journal(journals[0])) if journals else 0
    return len(hold.held) >= held and recorded == len(server.requests) - len(hold.held)


def tear_last_line(journal: Path) -> None:
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])


def files(run_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same audit never killed, which every killed and resumed one must equal: the cases only read it,
    and the script's replies are decided by the turn alone, so one run on a server of its own serves all
    eleven (before, each case ran its own, ~0.7 CPU-s each)."""
    with FakeOpenRouter(handler=Script(stop_at_turn=STOP_AT_TURN).handler) as server, \
            pytest.MonkeyPatch.context() as env:
        for key, value in server.env().items():
            env.setenv(key, value)
        return run(audit_config(tmp_path_factory.mktemp("reference") / "out", *ARGS))


@pytest.mark.parametrize("name", list(POINTS))
def test_a_kill_at_any_point_resumes_to_the_uninterrupted_result(name, audit_env, script, fake_openrouter, reference):
    script.stop_at_turn = STOP_AT_TURN

    point = POINTS[name]
    in_flight, landed = kill_at(point, audit_env, fake_openrouter, script)
    assert landed or isinstance(point, FileMark)
    lost = in_flight
    visible = [p for p in (audit_env / "out").iterdir() if not p.name.startswith(".")]
    if not visible:  # killed while the run dir was built: no run dir, nothing was asked
        assert name == "building the run dir" and not fake_openrouter.requests
        assert not list((audit_env / "out").rglob("summary.json"))  # the hidden leftover is no run to compare
        return
    (run_dir,) = visible
    if isinstance(point, HeldCall) and point.torn_journal:
        tear_last_line(run_dir / "usage.jsonl")
        lost += 1
    first_session = len(fake_openrouter.requests)
    # Under load a call the run sent together with the held one (the audited draw beside its
    # baseline) may reach the server between the settle check and the kill: it is lost as well.
    journal = run_dir / "usage.jsonl"
    unrecorded = first_session - (len(read_journal(journal)) if journal.exists() else 0)
    assert unrecorded >= lost
    lost = unrecorded
    found = collect([audit_env / "out"])  # the comparison lists a killed run as killed, never as a result
    if _summary_status(audit_env / "out") == "success":
        assert [r.status for r in found.runs] == ["success"] and not found.failures
    else:
        assert [f.status for f in found.failures] == ["killed"] and not found.runs

    fake_openrouter.reset()
    fake_openrouter.handler = script.handler
    finished = (run_dir / "usage.json").exists()
    if finished:  # the kill came after the last write: nothing left to do, and resume says so
        with pytest.raises(Exception, match="already finished"):
            run(audit_config(audit_env / "elsewhere", f"resume={run_dir}", *ARGS))
    else:
        assert run(audit_config(audit_env / "elsewhere", f"resume={run_dir}", *ARGS)) == run_dir
    assert files(run_dir) == files(reference)
    assert outcome(run_dir) == outcome(reference) and outcome(run_dir)["status"] == "success"
    # the resumed run keeps every key of its cells (issue 37): the comparison puts it where its twin is
    assert_same_cells(comparison_cells(run_dir), comparison_cells(reference))
    summary, usage = read(run_dir / "summary.json"), read(run_dir / "usage.json")
    assert summary["total_iterations"] == STOP_AT_TURN - 1
    assert usage["totals"]["calls"] == first_session + len(fake_openrouter.requests) - lost
    assert {k: summary["totals"][k] for k in usage["totals"]} == usage["totals"]


def test_resume_after_the_final_summary_only_rebuilds_what_is_missing(audit_env, script, fake_openrouter):
    """The exact states a kill after the final summary leaves (the kill test may land a little later)."""
    script.stop_at_turn = 3
    run_dir = run(audit_config(audit_env / "out", *ARGS))
    usage, summary = (run_dir / "usage.json").read_bytes(), (run_dir / "summary.json").read_bytes()
    turns = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*.json") if p.parent != run_dir}
    for missing in (["usage.json"], ["report.html", "usage.json"]):
        for name in missing:
            (run_dir / name).unlink()
        fake_openrouter.reset()
        assert run(audit_config(audit_env / "elsewhere", f"resume={run_dir}", *ARGS)) == run_dir
        assert not fake_openrouter.requests and (run_dir / "report.html").is_file()
        assert (run_dir / "usage.json").read_bytes() == usage and (run_dir / "summary.json").read_bytes() == summary
        assert {p: p.stat().st_mtime_ns for p in turns} == turns
