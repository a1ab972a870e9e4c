"""``python -m audit.testing.fake_openrouter`` started by hand plays a whole audit and answers
epistemic cards, so the two experiments' entrypoints complete against it with their shipped models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from audit.epistemic.metrics import PREDS
from audit.testing.replies import TEST_API_KEY
from tests import entrypoints


@contextmanager
def hand_started(cwd: Path, *args: str) -> Iterator[str]:
    """``python -m audit.testing.fake_openrouter <args>`` in its own process; yields the base URL it prints
    first. Forked warm (``tests/entrypoints.py``: ~0.1 CPU-s against ~0.8 for a fresh interpreter, seven
    times here); the CLI's cold start is tests/testing/test_fake_openrouter.py's ``--echo`` and ``--reply``."""
    command = [sys.executable, "-m", "audit.testing.fake_openrouter", *args]
    with entrypoints.start(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd) as process:
        try:
            yield process.stdout.readline().strip()
        finally:
            process.terminate()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The CLI server with its defaults."""
    with hand_started(tmp_path) as url:
        yield url


def run(module: str, *args: str, base_url: str, cwd: Path, cold: bool = False) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")},
           "OPENROUTER_API_BASE": base_url, "OPENROUTER_API_KEY": TEST_API_KEY}
    return entrypoints.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=300, cold=cold)


def only(parent: Path, name: str) -> Path:
    (found,) = parent.rglob(name)
    return found


def test_a_default_audit_completes_against_the_hand_started_server(served, tmp_path):
    done = run("audit", "max_iterations=3", "output_dir=out", base_url=served, cwd=tmp_path, cold=True)  # on purpose:
    assert done.returncode == 0, done.stdout + done.stderr  # the docs' by-hand command, in a fresh interpreter
    summary = json.loads(only(tmp_path / "out", "summary.json").read_text())
    assert summary["stop_reason"] == "max_iterations" and summary["total_iterations"] == 3
    assert summary["final_summary"]["conclusion"] and summary["evidence"]["verified"] > 0
    assert summary["classifications"] == {"deflected": 3}  # the shipped judge model was answered as the judge
    assert summary["fact_recall"]["covered"] is not None
    assert summary["config"]["auditor"]["model"] == "anthropic/claude-sonnet-4"


def test_an_epistemic_llm_run_completes_against_the_hand_started_server(served, tmp_path):
    done = run("audit.epistemic", "system=raw_llm", "cards.num_per_type=5", "cards.suites=[standard]",
               "output_dir=out", base_url=served, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in only(tmp_path / "out", "results.jsonl").read_text().splitlines()]
    assert len(rows) == 15 and not any(r["error"] for r in rows)
    assert {r["pred"] for r in rows} == set(PREDS)
    assert json.loads(only(tmp_path / "out", "metrics.json").read_text())


def test_the_hand_started_server_plays_the_assessment_in_a_benchmark_and_an_audit(served, tmp_path):
    """Issue 37: the server failed 16 of 16 benchmark assessments ("your reply contains no JSON object"), so
    the honesty and awareness verdicts could not be tried by hand. It now answers the assessment's schema:
    every one comes back, in the benchmark and in an audit with judge.assess=true."""
    done = run("audit.benchmark", "questions.limit=4", "rollouts=2", "output_dir=bench", base_url=served, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    draws = [json.loads(line) for line in only(tmp_path / "bench", "draws.jsonl").read_text().splitlines()]
    assert len(draws) == 16 and [d["assessment"].get("honesty") for d in draws] == ["evasive"] * 16, draws[0]
    assert json.loads(only(tmp_path / "bench", "summary.json").read_text())["judge_failures"] == 0
    done = run("audit", "max_iterations=2", "judge.assess=true", "output_dir=out", base_url=served, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(only(tmp_path / "out", "summary.json").read_text())
    assert summary["assessment_failures"] == [] and summary["total_iterations"] == 2
    responses = [json.loads(p.read_text()) for p in sorted((tmp_path / "out").rglob("audited_responses/*.json"))]
    assert [r["classification"]["assessment"]["honesty"] for r in responses] == ["honest", "honest"]


def test_a_technique_auto_audit_completes_against_the_hand_started_server(served, tmp_path):
    """The scripted auditor sees technique=auto's output format and answers with actions (it used to
    send a next_prompt, which failed turn 1)."""
    done = run("audit", "technique=auto", "max_iterations=3", "output_dir=out", base_url=served, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(only(tmp_path / "out", "summary.json").read_text())
    assert summary["status"] == "success" and summary["total_iterations"] == 3
    assert summary["draw_classifications"] == {"user_persona": {"deflected": 3}}


@pytest.fixture
def served_with(tmp_path: Path, request) -> Iterator[str]:
    """The CLI server with the options the test passes (``indirect``)."""
    with hand_started(tmp_path, *request.param) as url:
        yield url


@pytest.mark.parametrize("served_with", [["--providers", "Honest,Wrapper:wraps", "--fault", "error_finish",
                                          "--every", "2"]], indirect=True)
def test_documented_modes_by_hand(served_with, tmp_path):
    """Load-balanced providers and a documented error finish on every second draw: the run retries the
    error finishes, never keeps their partial text, and flags its two providers."""
    done = run("audit", "max_iterations=3", "output_dir=out", "gateway.backoff_initial_s=0.01", base_url=served_with,
               cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(only(tmp_path / "out", "summary.json").read_text())
    assert summary["served"]["flag"] == "served by 2 providers (Honest, Wrapper)"
    assert "WARNING: target draws served by 2 providers" in done.stdout
    assert "cleared on the night of" not in "".join(p.read_text() for p in (tmp_path / "out").rglob("*.json"))


@pytest.mark.parametrize("served_with", [["--providers", "Honest,Sneaky:hidden", "--template", "kimi_k2"]],
                         indirect=True)
def test_the_doctor_catches_a_hidden_wrap_played_by_hand(served_with, tmp_path):
    """A provider that wraps the prompt but bills it as sent: the bill passes it, the content canary does
    not. Before the content canary it passed as OK and could be offered as the pin."""
    done = run("audit.doctor", "audited=kimi_k2", base_url=served_with, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    sneaky = done.stdout.split("provider Sneaky:")[1]
    assert "billed 8, 8" in sneaky and "verdict: WRAPPING" in sneaky
    assert "decided by:    content canary: 0 of" in sneaky
    assert "pin to paste: 'audited.provider={only:[honest],allow_fallbacks:false}'" in done.stdout


@pytest.mark.parametrize("served_with", [["--fault", "availability.region_restricted", "--every", "1"]],
                         indirect=True)
def test_a_region_403_played_by_hand_stops_the_run_with_its_hint(served_with, tmp_path):
    """Errors guide, "Availability codes": ``region_restricted``, 403 typed ``permission_denied``. The audit
    stops at the first target call with the region's hint, never "check OPENROUTER_API_KEY"."""
    done = run("audit", "max_iterations=3", "output_dir=out", "judge=off", base_url=served_with, cwd=tmp_path)
    said = done.stdout + done.stderr
    assert "pin another with the role's provider setting" in said and "availability: region_restricted" in said, said
    assert "OPENROUTER_API_KEY" not in said and "lacks the permission" not in said
    summary = json.loads(only(tmp_path / "out", "summary.json").read_text())
    assert summary["status"] == "error"
