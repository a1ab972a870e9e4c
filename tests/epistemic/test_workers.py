"""``workers=2``: a run's calls made by two forked processes, end to end against the loopback server.

The run must be the run of one process: the same answers and metrics for a server that answers by
the card alone, every call once in one ledger, the budget stopping it, and a worker that dies
stopping it with one line that says how to resume.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from audit.io.journal import read_records
from audit.testing.replies import Hold

from .test_interrupts import ARGS, CARDS, answer, finished_run, start
from .test_main import run_cli


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def test_two_workers_give_the_answers_and_metrics_of_one(tmp_path, fake_openrouter):
    fake_openrouter.handler = answer
    one = finished_run(tmp_path, fake_openrouter, *ARGS[:-1], f"output_dir={tmp_path / 'one'}")
    assert len(fake_openrouter.requests) == CARDS
    fake_openrouter.reset()
    fake_openrouter.handler = answer
    proc = run_cli(tmp_path, *ARGS[:-1], f"output_dir={tmp_path / 'two'}", "workers=2", env=fake_openrouter.env())
    assert proc.returncode == 0, proc.stderr
    assert "calls made by 2 worker processes" in proc.stdout and proc.stderr == ""
    two = Path(proc.stdout.rsplit("run dir: ", 1)[1].strip())
    assert len(fake_openrouter.requests) == CARDS  # each card asked once, by one of the two
    assert rows(two) == rows(one)
    assert json.loads((two / "metrics.json").read_text()) == json.loads((one / "metrics.json").read_text())
    usage = [json.loads((d / "usage.json").read_text()) for d in (one, two)]
    assert usage[1]["totals"] == usage[0]["totals"] | {"latency_s": usage[1]["totals"]["latency_s"]}
    # one writer: the journal holds each call once, whole lines only
    assert len(read_records(two / "usage.jsonl")) == len((two / "usage.jsonl").read_text().splitlines()) == CARDS


def test_the_budget_stops_a_run_with_workers_as_it_stops_one_without(tmp_path, fake_openrouter):
    """Checked as each call takes one of the run's slots: only the calls already in flight pass, and the
    first refusal stops the run (a spent budget is fatal: every later call would be refused too)."""
    sent = []
    for workers in (1, 2):
        fake_openrouter.reset()
        fake_openrouter.handler = answer
        proc = run_cli(tmp_path, *ARGS[:-1], f"output_dir={tmp_path / str(workers)}", f"workers={workers}",
                       "budget.max_cost_usd=0.0000001", env=fake_openrouter.env())
        (line,) = proc.stderr.strip().splitlines()
        assert proc.returncode == 1 and "budget.max_cost_usd=1e-07 is spent" in line and "resume=" in line
        (run_dir,) = (tmp_path / str(workers)).iterdir()
        assert json.loads((run_dir / "summary.json").read_text())["status"] == "error"
        sent.append(len(fake_openrouter.requests))
    # gateway.max_concurrency=4: at most the four calls that took a slot before the first charge reached
    # the server (how many of them did before the stop cancelled the rest is up to timing)
    assert all(1 <= n <= 4 for n in sent), sent


def test_a_killed_worker_stops_the_run_with_one_line_and_it_resumes(tmp_path, fake_openrouter):
    hold = Hold(answer, skip=10)
    fake_openrouter.handler = hold
    proc = start(tmp_path, fake_openrouter, *ARGS, "workers=2")
    try:
        assert hold.wait(), "the run never reached its held requests"
        deadline = time.monotonic() + 60
        children: list[str] = []
        while len(children) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            time.sleep(0.01)
        Path(f"/proc/{children[0]}/stat").read_text()  # a worker of this run, alive
        os.kill(int(children[0]), signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        hold.release()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (out, err)
    (line,) = err.strip().splitlines()
    (run_dir,) = (tmp_path / "out").iterdir()
    assert "gateway worker" in line and "killed by SIGKILL" in line and f"resume={run_dir}" in line
    assert "Traceback" not in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "error" and "killed by SIGKILL" in summary["error"]
    fake_openrouter.reset()
    fake_openrouter.handler = answer
    assert finished_run(tmp_path, fake_openrouter, f"resume={run_dir}") == run_dir
    assert len(rows(run_dir)) == CARDS and all(r["error"] is None for r in rows(run_dir))
