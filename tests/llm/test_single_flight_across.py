"""Single-flight across processes (audit.llm.single_flight): a request in flight in another process
sharing the response cache is waited for and replayed from the cache, never paid twice.

Two gateways opening the same cache stand in for two jobs of a sweep: the lock is an ``flock`` on a
file each opens itself, which excludes another open of the same file in this process as it does in
another process. One test kills a real second process holding the lock."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from audit.llm.single_flight import SingleFlight
from audit.llm.types import GatewayError
from audit.testing.replies import completion_reply, error_reply
from audit.testing.server import FakeOpenRouter
from tests.llm.test_gateway import make_gateway

SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_second_holder_enters_only_after_the_first_leaves_and_no_lock_file_is_left(tmp_path):
    first, second = SingleFlight(tmp_path / "inflight"), SingleFlight(tmp_path / "inflight")
    events: list[str] = []

    async def hold(flights: SingleFlight, name: str, entered: asyncio.Event | None = None) -> None:
        async with flights.across_processes("k"):
            events.append(f"{name} in")
            if entered is not None:
                entered.set()
            await asyncio.sleep(0.2)
            events.append(f"{name} out")

    async def run() -> None:
        entered = asyncio.Event()
        one = asyncio.create_task(hold(first, "first", entered))
        await entered.wait()
        await asyncio.gather(hold(second, "second"), one)

    asyncio.run(run())
    assert events == ["first in", "first out", "second in", "second out"]
    assert list((tmp_path / "inflight").iterdir()) == []


def test_another_keys_lock_does_not_wait(tmp_path):
    first, second = SingleFlight(tmp_path / "inflight"), SingleFlight(tmp_path / "inflight")

    async def run() -> list[str]:
        order = []
        async with first.across_processes("k"):
            async with second.across_processes("other"):
                order.append("other in while k is held")
        return order

    assert asyncio.run(run()) == ["other in while k is held"]


def test_a_waiter_cancelled_lets_go_and_the_lock_stays_usable(tmp_path):
    """Ctrl-C while waiting on another process's request: the wait ends at once, holding nothing."""
    holder, waiter, later = (SingleFlight(tmp_path / "inflight") for _ in range(3))

    async def run() -> str:
        async with holder.across_processes("k"):
            waiting = asyncio.create_task(waiter.across_processes("k").__aenter__())
            await asyncio.sleep(0.2)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
        async with later.across_processes("k"):
            return "taken"

    assert asyncio.run(run()) == "taken"


def test_a_killed_holders_lock_goes_with_its_process(tmp_path):
    """A job killed while sending (SIGKILL, OOM) releases the lock: the waiting one then sends itself."""
    lock_dir = tmp_path / "inflight"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import asyncio, sys, time\n"
         "from pathlib import Path\n"
         "from audit.llm.single_flight import SingleFlight\n"
         "async def hold():\n"
         f"    async with SingleFlight(Path({str(lock_dir)!r})).across_processes('k'):\n"
         "        print('held', flush=True)\n"
         "        time.sleep(600)\n"
         "asyncio.run(hold())\n"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        fd = os.open(lock_dir / "k.lock", os.O_RDWR)
        with pytest.raises(BlockingIOError):  # held by the other process
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)
        holder.send_signal(signal.SIGKILL)
        holder.wait()

        async def take() -> str:
            async with SingleFlight(lock_dir).across_processes("k"):
                return "taken"

        assert asyncio.run(asyncio.wait_for(take(), 60)) == "taken"
    finally:
        holder.kill()
        holder.wait()


def test_two_gateways_sharing_a_cache_send_a_shared_request_once(fake_openrouter: FakeOpenRouter, tmp_path):
    """The second waits for the first's reply and replays it from the cache: counted ``cached`` (a reply
    another job paid for), not ``shared``; the server saw the request once."""
    fake_openrouter.latency_s = 0.5
    fake_openrouter.default_reply = completion_reply("one answer")
    first = make_gateway(fake_openrouter, tmp_path, usage_path=tmp_path / "first.json")
    second = make_gateway(fake_openrouter, tmp_path, usage_path=tmp_path / "second.json")

    async def both() -> list:
        replies = await asyncio.gather(first.acomplete("m/x", "same prompt"), second.acomplete("m/x", "same prompt"),
                                       second.acomplete("m/x", "same prompt"))
        await first.aclose()
        await second.aclose()
        return replies

    replies = asyncio.run(both())
    assert [r.text for r in replies] == ["one answer"] * 3
    assert len(fake_openrouter.requests) == 1
    paid, replayed = first.ledger.totals().as_dict(), second.ledger.totals().as_dict()
    assert (paid["calls"], paid["cached_calls"], paid["shared_calls"]) == (1, 0, 0)
    # the second gateway's own identical request joined its leader, whose reply was a replay: both replays
    assert (replayed["calls"], replayed["cached_calls"], replayed["shared_calls"]) == (2, 2, 0)
    assert replayed["cost"] == 0
    assert list((tmp_path / "inflight").iterdir()) == []


def test_a_failed_leader_leaves_the_waiting_one_to_send_itself(fake_openrouter: FakeOpenRouter, tmp_path):
    """A failed reply is never cached: the one that waited finds nothing and sends the request."""
    fake_openrouter.latency_s = 0.3
    fake_openrouter.push(error_reply(404, "No endpoints found for m/x."))
    fake_openrouter.default_reply = completion_reply("second try")
    first = make_gateway(fake_openrouter, tmp_path, usage_path=tmp_path / "first.json")
    second = make_gateway(fake_openrouter, tmp_path, usage_path=tmp_path / "second.json")

    async def both() -> list:
        replies = await asyncio.gather(first.acomplete("m/x", "same prompt"), second.acomplete("m/x", "same prompt"),
                                       return_exceptions=True)
        await first.aclose()
        await second.aclose()
        return replies

    failed, sent = asyncio.run(both())
    assert isinstance(failed, GatewayError) and sent.text == "second try"
    assert len(fake_openrouter.requests) == 2
    assert second.ledger.totals().as_dict()["cached_calls"] == 0
