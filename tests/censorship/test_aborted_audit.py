"""A whole audit whose streamed auditor call runs past its deadline (issue 24, finding 9), against the
loopback server, which streams (``stream: true``) and bills as OpenRouter documents: a stream cut off at
a provider that stops on cancellation is billed for what it sent, anything else whole (API reference,
"Streaming", "Stream Cancellation"). The cut-off call is in the summary, the end line and the budget.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from audit.censorship.loop import run
from audit.testing.replies import chat_reply
from audit.testing.scripted_audit import AUDITOR, Script, audit_config, chat_role
from audit.testing.server import FakeOpenRouter

from .conftest import read
from .test_main import BASE, audit, finish

LONG = " ".join(f"thinking{i}" for i in range(2000))


def stalls_at_turn_two(script: Script, provider: str):
    """The script, except that the auditor's first answer at turn 2 is a long reply streamed slowly."""
    asked = {"auditor": 0}

    def handler(request):
        body = request.json or {}
        if request.endpoint == "chat" and chat_role(body) == AUDITOR:
            asked["auditor"] += 1
            if asked["auditor"] == 2:  # turn 2's first attempt (the script's replies need no re-ask)
                return replace(chat_reply(LONG, provider=provider), stream_interval_s=0.05)
        return script.handler(request)

    return handler


def billed(server: FakeOpenRouter, aborted: int) -> list:
    deadline = time.monotonic() + 30  # a cut-off stream is billed when the server sees the hang-up
    while sum(b.aborted for b in server.bills) < aborted and time.monotonic() < deadline:
        time.sleep(0.05)
    return [b for b in server.bills if b.aborted]


STREAMED = ("auditor.max_tokens=4096", "gateway.stream.min_tokens=4096", "gateway.stream.timeout_s=4",
            "gateway.max_retries=2", "gateway.backoff_initial_s=0.001", "gateway.backoff_max_s=0.002")


def test_a_cut_off_auditor_call_is_counted_in_the_summary_and_the_end_line(
        audit_env, script, fake_openrouter, capsys: pytest.CaptureFixture[str]) -> None:
    script.stop_at_turn = 3
    fake_openrouter.handler = stalls_at_turn_two(script, "DeepSeek")
    run_dir = run(audit_config(audit_env / "out", *STREAMED))
    summary, usage = read(run_dir / "summary.json"), read(run_dir / "usage.json")
    assert summary["status"] == "success" and summary["total_iterations"] == 2
    assert all(r.json.get("stream") is True for r in fake_openrouter.chat_requests())
    cut = [c for c in usage["calls"] if c["estimated"]]
    assert len(cut) >= 1 and summary["usage"]["aborted_calls"] == len(cut) == usage["totals"]["aborted_calls"]
    assert all(c["tag"] == "auditor" and "stream.timeout_s" in c["error"] for c in cut)
    bills = billed(fake_openrouter, len(cut))
    assert bills and sum(c["cost"] for c in cut) >= sum(b.cost for b in bills) > 0
    assert summary["usage"]["estimated_cost"] == pytest.approx(sum(c["cost"] for c in cut))
    assert summary["usage"]["cost"] == pytest.approx(usage["totals"]["cost"])  # the estimate is in the cost
    assert f"{len(cut)} call{'s' if len(cut) > 1 else ''} cut off in flight (may be billed" in capsys.readouterr().out


def test_the_budget_stops_the_run_on_a_cut_off_call_it_used_to_miss(tmp_path, fake_openrouter) -> None:
    """``python -m audit`` in a subprocess: a provider that does not stop on cancellation (Google) bills
    the cut-off call up to max_tokens; the estimate spends the budget, so the run stops there (status
    cancelled, stop reason budget) instead of going on as if the call had cost nothing (before: $0)."""
    script = Script(stop_at_turn=4)
    fake_openrouter.handler = stalls_at_turn_two(script, "Google")
    code, out, err = finish(audit(tmp_path, fake_openrouter, *BASE, *STREAMED[1:], "auditor.max_tokens=200000",
                                  "budget.max_cost_usd=0.1"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = read(run_dir / "summary.json")
    assert (summary["status"], summary["stop_reason"]) == ("cancelled", "budget"), summary.get("error")
    assert summary["usage"]["aborted_calls"] >= 1 and summary["usage"]["estimated_cost"] > 0.1
    assert "stopped: budget spent" in out
