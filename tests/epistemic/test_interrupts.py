"""Stopping an epistemic run: Ctrl-C, SIGTERM and SIGKILL mid-way, then ``resume=<run dir>``.

The run is a real ``python -m audit.epistemic`` subprocess against the loopback server,
with the response cache off, so every card a resume asks again is a request the server
counts. The server holds every request after the first ``ANSWERED`` (:class:`Hold`): the
run is stopped with exactly those answers saved and the held ones in flight.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.compare.collect import collect
from audit.io.journal import read_records
from audit.testing.replies import Hold, chat_reply
from audit.testing.server import FakeOpenRouter
from tests.signals import default_sigint
from tests import entrypoints
from tests.compare.cells import assert_same_cells, comparison_cells

from .test_main import run_cli

CARDS = 18  # cards.num_per_type=2 x 3 labels x 3 suites: ANSWERED saved, CONCURRENCY in flight, 4 never asked
ANSWERED = 10
CONCURRENCY = 4
ARGS = ("system=raw_llm", "system.model=acme/tiny", "cards.num_per_type=2", "gateway.max_retries=0",
        "gateway.cache.enabled=false", f"gateway.max_concurrency={CONCURRENCY}", "output_dir=out")


def answer(request) -> object:
    """A reply decided by the card alone (never by call order), so a resumed run gets the same ones."""
    question = request.json["messages"][-1]["content"]
    answer = ("YES", "NO", "UNKNOWN")[sum(map(ord, question)) % 3]
    return chat_reply(f'{{"answer": "{answer}"}}')


def start(cwd: Path, server: FakeOpenRouter, *args: str) -> entrypoints.Process:
    import os
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
    return entrypoints.start([sys.executable, "-m", "audit.epistemic", *args], cwd=cwd, env=env, text=True, preexec_fn=default_sigint,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def stopped_with_answers_saved(tmp_path: Path, server: FakeOpenRouter, sig: signal.Signals,
                               *extra: str) -> tuple[Path, Hold, str]:
    """A run sent ``sig`` once ``ANSWERED`` answers are in its journal and every slot holds a call:
    it can send nothing more, so what it leaves is the same every time."""
    hold = Hold(answer, skip=ANSWERED)
    server.handler = hold
    proc = start(tmp_path, server, *ARGS, *extra)
    try:
        assert hold.wait(), "the run never reached its held requests"
        deadline = time.monotonic() + 60
        journal = None
        while journal is None or len(read_records(journal)) < ANSWERED or len(hold.held) < CONCURRENCY:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            journal = next((tmp_path / "out").glob("*/answers.jsonl"), None)
            time.sleep(0.02)  # settled, the run can do nothing more: a later look stops the same state
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        hold.release()
        if proc.poll() is None:
            proc.kill()
    (run_dir,) = (tmp_path / "out").iterdir()
    return run_dir, hold, err


def finished_run(cwd: Path, server: FakeOpenRouter, *args: str) -> Path:
    proc = run_cli(cwd, *args, env=server.env())
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.rsplit("run dir: ", 1)[1].strip())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same run never stopped, which each stopped and resumed one must equal: the cases only read it,
    and its replies are decided by the card alone, so one run (on a server of its own) serves them all."""
    cwd = tmp_path_factory.mktemp("reference")
    with FakeOpenRouter(handler=answer) as server:
        return finished_run(cwd, server, *ARGS[:-1], f"output_dir={cwd / 'reference'}")


@pytest.mark.parametrize(("sig", "workers"), [(signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGKILL, 1),
                                               (signal.SIGTERM, 2), (signal.SIGKILL, 2)],
                         ids=lambda v: v.name if isinstance(v, signal.Signals) else f"{v}-workers")
def test_a_stopped_run_resumes_in_its_directory_asking_only_the_rest(tmp_path, fake_openrouter, reference, sig,
                                                                     workers):
    """With ``workers=2`` the calls cut off in flight are the workers' and still reach the one ledger; a
    SIGKILL of the run leaves its workers to see their socket close and end. A third resume of the finished
    run is refused as already finished: checked in one case (the refusal reads the summary, the answers and
    the outputs, which every case's resume leaves the same; each check was a ~1 CPU-s start)."""
    run_dir, hold, err = stopped_with_answers_saved(tmp_path, fake_openrouter, sig, f"workers={workers}")
    summary = json.loads((run_dir / "summary.json").read_text())
    if sig == signal.SIGKILL:
        assert summary["status"] == "started"  # what compare shows as killed
    else:
        (line,) = err.strip().splitlines()
        assert "Traceback" not in err and f"resume={run_dir}" in line and "interrupted" in line
        assert (summary["status"], summary["stop_reason"]) == ("cancelled", "interrupted")
        assert summary["answered"] == ANSWERED
        # the calls cut off in flight reached the server: they are in the ledger, as cancelled
        assert summary["expected_answers"] == CARDS and summary["usage"]["calls"] == ANSWERED + CONCURRENCY
    assert not (run_dir / "results.jsonl").exists()
    (listed,) = collect([tmp_path / "out"]).failures  # the comparison lists it as what it is
    assert listed.status == ("killed" if sig == signal.SIGKILL else "cancelled")
    assert f"{ANSWERED}/{CARDS} answers on disk" in listed.problem and f"resume={run_dir}" in listed.problem
    first_session = len(fake_openrouter.requests)
    assert first_session == ANSWERED + CONCURRENCY == ANSWERED + len(hold.held)

    fake_openrouter.reset()
    fake_openrouter.handler = answer
    assert finished_run(tmp_path, fake_openrouter, f"resume={run_dir}") == run_dir
    assert len(fake_openrouter.requests) == CARDS - ANSWERED  # answered cards are never asked again
    assert [p.name for p in (tmp_path / "out").iterdir()] == [run_dir.name]  # the same directory

    def rows(d: Path) -> list[dict]:
        return [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines()]

    assert rows(run_dir) == rows(reference)
    # the resumed run keeps every key of its cells (issue 37): the comparison puts it where its twin is
    assert_same_cells(comparison_cells(run_dir), comparison_cells(reference))
    assert json.loads((run_dir / "metrics.json").read_text()) == json.loads((reference / "metrics.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "success" and summary["systems"] == json.loads(
        (reference / "summary.json").read_text())["systems"]
    usage = json.loads((run_dir / "usage.json").read_text())
    # both sessions' calls, each request the server received once; a kill leaves no record of the held ones
    recorded = first_session - (len(hold.held) if sig == signal.SIGKILL else 0)
    assert usage["totals"]["calls"] == recorded + CARDS - ANSWERED
    cancelled = [c for c in usage["calls"] if (c.get("error") or "").startswith("cancelled")]
    assert len(cancelled) == (0 if sig == signal.SIGKILL else CONCURRENCY)
    assert not (run_dir / "answers.jsonl").exists() and (run_dir / "report.html").is_file()

    if (sig, workers) == (signal.SIGKILL, 2):  # once: every case's resumed run is a finished success alike
        again = run_cli(tmp_path, f"resume={run_dir}", env=fake_openrouter.env())
        assert again.returncode == 1 and "already finished" in again.stderr and again.stderr.count("\n") == 1


def test_a_run_being_resumed_is_locked(tmp_path, fake_openrouter):
    run_dir, hold, _ = stopped_with_answers_saved(tmp_path, fake_openrouter, signal.SIGKILL)
    hold = Hold(answer)
    fake_openrouter.handler = hold
    first = start(tmp_path, fake_openrouter, f"resume={run_dir}")
    try:
        assert hold.wait()
        second = run_cli(tmp_path, f"resume={run_dir}", env=fake_openrouter.env())
        assert second.returncode == 1 and second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
        assert f"pid {first.pid}" in second.stderr and "in use" in second.stderr
    finally:
        hold.release()
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err


def test_ctrl_c_stops_a_sweep_instead_of_starting_the_next_job(tmp_path, fake_openrouter):
    hold = Hold(answer)
    fake_openrouter.handler = hold
    # one job after another, so there is a next job not to start (the default warm launcher runs both
    # at once: tests/jobs/test_warm_ctrl_c.py)
    sweep = start(tmp_path, fake_openrouter, "-m", "system=raw_llm", "system.model=acme/a,acme/b",
                  "cards.num_per_type=1", "gateway.cache.enabled=false", "hydra/launcher=basic")
    try:
        assert hold.wait(), "the first job never asked anything"
        sweep.send_signal(signal.SIGINT)
        _, err = sweep.communicate(timeout=60)
    finally:
        hold.release()
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 1 and "Traceback" not in err and "interrupted" in err
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()) == ["0"]
    (summary,) = (sweep_dir / "0").rglob("summary.json")
    assert json.loads(summary.read_text())["status"] == "cancelled"
    assert {r.json["model"] for r in fake_openrouter.requests} == {"acme/a"}
