"""Jobs of one sweep running at once (the default warm launcher) against a slow loopback server: a
request they share is sent once, whichever job asks first; the other job waits for it and replays it
from the response cache (:mod:`audit.llm.single_flight`), as a later job does under the basic launcher."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

from audit.testing.replies import RecordedRequest, Reply
from audit.testing.scripted_audit import Script
from tests.censorship.test_main import audit, finish
from tests.jobs.test_sweep import SWEEP
from tests.timing import scaled


def test_two_jobs_at_once_send_the_requests_they_share_once(tmp_path, fake_openrouter):
    """``max_failed_draws`` changes no request, so the two jobs ask the very same things. The first
    reply is held until both jobs have started, and every reply takes a second: the job behind replays
    what is cached and catches up with the other's request in flight, which it must wait for, not send."""
    script = Script(stop_at_turn=3)
    both_started = threading.Event()

    def handler(request: RecordedRequest) -> Reply | None:
        deadline = time.monotonic() + scaled(60)
        while not both_started.is_set() and time.monotonic() < deadline:
            if len(list(tmp_path.glob("multirun/*/[01]"))) == 2:
                both_started.set()
            time.sleep(0.05)
        return script.handler(request)

    fake_openrouter.handler = handler
    fake_openrouter.latency_s = 1.0
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", "max_failed_draws=3,4",
                                  *[a for a in SWEEP if "cache" not in a]))
    assert code == 0, err
    assert both_started.is_set(), "the second job never started while the first waited for its reply"
    sent = Counter(json.dumps(r.json, sort_keys=True) for r in fake_openrouter.requests if r.json)
    assert sent and max(sent.values()) == 1, "a request the jobs share reached the server twice"
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    ledgers = [json.loads(p.read_text())["totals"] for p in sorted(sweep_dir.glob("*/*/usage.json"))]
    assert len(ledgers) == 2
    # each job made every call; each call was paid by one job and replayed (counted cached) by the other
    assert [t["calls"] for t in ledgers] == [sum(sent.values())] * 2
    assert sum(t["calls"] - t["cached_calls"] for t in ledgers) == sum(sent.values())
    assert sum(t["cached_calls"] for t in ledgers) == sum(sent.values())
    assert all(t["shared_calls"] == 0 for t in ledgers)
