"""The ledger's journal: every call on disk as it completes, every session's calls in usage.json."""

from __future__ import annotations

import json
import random
from pathlib import Path

from audit.io.atomic import read_json
from audit.llm.gateway import Gateway
from audit.llm.ledger import CallRecord, Ledger, read_journal
from audit.record.usage import Usage
from audit.llm.settings import GatewaySettings
from audit.testing.replies import completion_reply, error_reply
from audit.testing.server import FakeOpenRouter


def _gateway(server: FakeOpenRouter, run: Path) -> Gateway:
    settings = GatewaySettings(api_base=server.base_url, timeout_s=5.0, max_retries=1, backoff_initial_s=0.01,
                               backoff_max_s=0.02, cache_enabled=False)
    return Gateway(settings, "k", usage_path=run / "usage.json", rng=random.Random(0))


def test_each_call_is_on_disk_when_it_returns(fake_openrouter, tmp_path):
    fake_openrouter.push(completion_reply("a"), completion_reply("b"), error_reply(400, "no"))
    gateway = _gateway(fake_openrouter, tmp_path / "run")
    journal = tmp_path / "run" / "usage.jsonl"
    try:
        gateway.complete("m/x", "1")
        assert len(read_journal(journal)) == 1  # before any write_usage() or close(): what a SIGKILL leaves
        gateway.complete("m/x", "2")
        try:
            gateway.complete("m/x", "3")
        except Exception:
            pass
        records = read_journal(journal)
        assert [r.error is None for r in records] == [True, True, False]
    finally:
        gateway.close()


def test_a_resumed_session_keeps_every_earlier_call(fake_openrouter, tmp_path):
    run = tmp_path / "run"
    fake_openrouter.default_reply = completion_reply("ok")
    first = _gateway(fake_openrouter, run)
    first.complete("m/x", "1")
    first.complete("m/x", "2")
    first.close()  # no write_usage: the session was killed
    second = _gateway(fake_openrouter, run)
    second.complete("m/x", "3")
    second.write_usage()
    second.close()
    usage = read_json(run / "usage.json")
    assert usage["totals"]["calls"] == 3 == len(usage["calls"]) == len(fake_openrouter.requests)
    assert usage["totals"] == second.ledger.totals().as_dict()


def test_a_line_cut_by_a_kill_is_skipped(tmp_path):
    journal = tmp_path / "usage.jsonl"
    ledger = Ledger(journal)
    ledger.add(CallRecord("t", "r", Usage(calls=1, prompt_tokens=1, completion_tokens=2, cost=0.5, model="m")))
    ledger.close()
    with journal.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"tag": "t", "route": "r"})[:12])
    resumed = Ledger(journal)
    assert [r.usage.cost for r in resumed.records] == [0.5]
    resumed.add(CallRecord("t", "r", Usage(calls=1, prompt_tokens=1, completion_tokens=2, cost=0.25, model="m")))
    resumed.close()
    assert [r.usage.cost for r in read_journal(journal)] == [0.5, 0.25]  # the new line is not glued to the torn one
