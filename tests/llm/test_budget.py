"""The spending cap in the gateway's call path, against the loopback server (real HTTP, no mocks)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from audit.llm.budget import BUDGET_FILE, Budget
from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.types import GatewayError
from audit.testing.replies import completion_reply
from audit.testing.server import FakeOpenRouter

KEY = "sk-or-v1-fake-test-key-do-not-leak-0123"


def gateway(server: FakeOpenRouter, tmp_path: Path, budget: Budget, *, concurrency: int = 8,
            usage_path: Path | None = None) -> Gateway:
    settings = GatewaySettings(api_base=server.base_url, timeout_s=5.0, max_retries=0, max_concurrency=concurrency,
                               cache_enabled=False)
    return Gateway(settings, KEY, usage_path=usage_path, rng=random.Random(0), budget=budget)


def burst(gw: Gateway, prompts: int) -> list:
    """``prompts`` distinct calls at once; each result is a reply or the GatewayError it raised."""
    async def go() -> list:
        results = await asyncio.gather(*(gw.acomplete("m/x", f"prompt {i}") for i in range(prompts)),
                                       return_exceptions=True)
        await gw.aclose()
        return results
    return asyncio.run(go())


@pytest.mark.parametrize("concurrency", [1, 3])
def test_calls_queued_for_a_slot_see_the_charges_ahead_of_them(fake_openrouter, tmp_path, concurrency):
    """Each call costs $1 against a $0.50 cap: only the calls that start together (one slot each)
    go out; the ones queued behind them are refused when their turn comes, not sent on an old total."""
    fake_openrouter.latency_s = 0.1
    fake_openrouter.default_reply = completion_reply("an answer", usage={"cost": 1.0})
    budget = Budget(0.5)
    results = burst(gateway(fake_openrouter, tmp_path, budget, concurrency=concurrency), 6)
    refused = [r for r in results if isinstance(r, GatewayError)]
    assert len(fake_openrouter.requests) == concurrency and len(refused) == 6 - concurrency
    assert all(r.kind == "budget" and "budget.max_cost_usd=0.5 is spent" in str(r) for r in refused)
    assert budget.spent() == pytest.approx(concurrency * 1.0)  # past the cap only by the calls in flight


def test_a_resumed_run_counts_what_its_earlier_sessions_spent(fake_openrouter, tmp_path):
    """A single run's budget lives in memory; a new session of the same run (a resume) starts from
    its ledger's total, so it cannot spend the cap a second time."""
    fake_openrouter.default_reply = completion_reply("an answer", usage={"cost": 0.75})
    usage = tmp_path / "run" / "usage.json"
    first = burst(gateway(fake_openrouter, tmp_path, Budget(1.0), usage_path=usage), 2)
    assert not any(isinstance(r, Exception) for r in first)
    sent = len(fake_openrouter.requests)

    budget = Budget(1.0)
    resumed = burst(gateway(fake_openrouter, tmp_path, budget, usage_path=usage), 1)
    assert budget.spent() == pytest.approx(1.5)
    assert isinstance(resumed[0], GatewayError) and resumed[0].kind == "budget"
    assert len(fake_openrouter.requests) == sent  # nothing sent

    raised = Budget(2.0)  # a resume with a higher cap goes on from the same total
    again = burst(gateway(fake_openrouter, tmp_path, raised, usage_path=usage), 1)
    assert not isinstance(again[0], Exception) and raised.spent() == pytest.approx(2.25)


def test_a_sweep_budget_file_is_not_charged_twice_for_earlier_sessions(fake_openrouter, tmp_path):
    """In a sweep the shared file already holds every session's charges; opening a run's ledger again adds nothing."""
    fake_openrouter.default_reply = completion_reply("an answer", usage={"cost": 0.25})
    usage = tmp_path / "run" / "usage.json"
    shared = tmp_path / BUDGET_FILE
    burst(gateway(fake_openrouter, tmp_path, Budget(5.0, shared), usage_path=usage), 2)
    later = Budget(5.0, shared)
    gateway(fake_openrouter, tmp_path, later, usage_path=usage).close()
    assert later.spent() == pytest.approx(0.5)
