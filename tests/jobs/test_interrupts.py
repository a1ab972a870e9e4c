"""SIGTERM stops a run whatever SIGINT's disposition, and the one line is the only line.

A process started with SIGINT ignored (``cmd &`` in a non-interactive shell script, some batch
schedulers) used to ignore SIGTERM as well: SIGTERM was turned into SIGINT, which it ignored, so
the run went on to ``completed``. And a stopped run sometimes added ``RuntimeWarning: coroutine ...
was never awaited`` and a tracemalloc hint after its one line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.testing.replies import Hold, chat_reply
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from tests.signals import default_sigint
from tests.signals import ignore_sigint as ignore_sigint_at_start
from tests import entrypoints

AUDIT = ("audit", "max_iterations=5", "judge=off", f"auditor.model={AUDITOR_MODEL}", "gateway.max_retries=0",
         "gateway.cache.enabled=false", "output_dir=out")
EPISTEMIC = ("audit.epistemic", "system=raw_llm", "cards.num_per_type=4", "gateway.max_retries=0",
             "gateway.cache.enabled=false", "gateway.max_concurrency=4", "output_dir=out")


def _start(cwd: Path, server: FakeOpenRouter, args: tuple[str, ...], *, ignore_sigint: bool) -> entrypoints.Process:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
    # As `cmd &` in a script does: the child inherits SIGINT ignored across exec.
    preexec = ignore_sigint_at_start if ignore_sigint else default_sigint
    # teardown: what it prints at the interpreter's end is read (never awaited, tracemalloc)
    return entrypoints.start([sys.executable, "-m", *args], cwd=cwd, env=env, text=True, preexec_fn=preexec,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, teardown=True)


def _stop_midway(tmp_path: Path, server: FakeOpenRouter, args: tuple[str, ...], *, ignore_sigint: bool,
                 sig: signal.Signals) -> tuple[int, str, dict]:
    """Start a run, hold its calls once some answers are saved, send ``sig``; its exit code, stderr, summary."""
    if args[0] == "audit":
        script = Script(stop_at_turn=4)
        hold = Hold(script.handler, lambda r: r.endpoint == "completion", skip=1)
    else:
        hold = Hold(lambda r: chat_reply('{"answer": "YES"}'), skip=5)
    server.handler = hold
    proc = _start(tmp_path, server, args, ignore_sigint=ignore_sigint)
    try:
        assert hold.wait(), "the run never reached its held requests"
        time.sleep(0.3)  # the saved step is on disk and the held calls are in flight
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        hold.release()
        if proc.poll() is None:
            proc.kill()
    (run_dir,) = (tmp_path / "out").iterdir()
    return proc.returncode, err, json.loads((run_dir / "summary.json").read_text())


@pytest.mark.parametrize("args", [AUDIT, EPISTEMIC], ids=["audit", "epistemic"])
@pytest.mark.parametrize("ignore_sigint", [True, False], ids=["sigint-ignored", "sigint-default"])
def test_sigterm_stops_the_run_as_interrupted_with_one_line(tmp_path, fake_openrouter, args, ignore_sigint):
    code, err, summary = _stop_midway(tmp_path, fake_openrouter, args, ignore_sigint=ignore_sigint,
                                      sig=signal.SIGTERM)
    assert (summary["status"], summary["stop_reason"]) == ("cancelled", "interrupted"), (summary["status"], err)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "interrupted" in err, err
    assert "never awaited" not in err and "tracemalloc" not in err


def test_sighup_ends_the_run_as_sigterm_does(tmp_path, fake_openrouter):
    """A closed terminal or a dropped SSH session (before: the run died and its summary said ``started``).

    Once an audit shows SIGHUP reaching the stop, the epistemic run has nothing of its own to show:
    ``audit.jobs.interrupts`` registers SIGHUP beside SIGTERM in one list, for every entrypoint, with one
    handler, so an epistemic run stopped by SIGHUP takes the path ``test_sigterm_...[sigint-default-epistemic]``
    proves (that case was run here too, ~4 CPU-s, until issue 40 cut the suite's cost)."""
    code, err, summary = _stop_midway(tmp_path, fake_openrouter, AUDIT, ignore_sigint=False, sig=signal.SIGHUP)
    assert (summary["status"], summary["stop_reason"]) == ("cancelled", "interrupted"), (summary["status"], err)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "interrupted" in err, err


def test_no_line_follows_the_one_line_whenever_the_signal_lands(tmp_path):
    """Stopped at moments spread over the first calls (litellm's slowest, set up in a worker thread):
    before the fix about half such runs added a 'coroutine ... was never awaited' warning and a
    tracemalloc hint after the one line."""
    extra = []
    with FakeOpenRouter(latency_s=0.05, handler=Script(stop_at_turn=30).handler) as server:
        for k, sig in enumerate([signal.SIGTERM, signal.SIGINT] * 2):
            cwd = tmp_path / str(k)
            cwd.mkdir()
            proc = _start(cwd, server, (*AUDIT[:1], "max_iterations=30", *AUDIT[2:]), ignore_sigint=False)
            deadline = time.monotonic() + 60
            while not list(cwd.glob("out/*/config.yaml")):
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
                time.sleep(0.01)
            time.sleep(0.4 * k)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 1 and "interrupted" in err, err
            if len(err.strip().splitlines()) != 1:
                extra.append(err)
    assert not extra, extra[0]
