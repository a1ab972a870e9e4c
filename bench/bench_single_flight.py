"""What single-flight across processes adds to a request the response cache does not hold, side by side
in one run: the lock of :mod:`audit.llm.single_flight` (a file per request under ``<cache dir>/inflight/``,
created, ``flock``-ed, removed) against the same request path without it, and against a whole gateway
call to the loopback server (cache on, every prompt new). Ratios, with the load beside them: absolute
times on a shared machine say little.

Run: ``python bench/bench_single_flight.py [--requests 2000]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from pathlib import Path

from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.llm.single_flight import SingleFlight
from audit.testing.replies import TEST_API_KEY, completion_reply
from audit.testing.server import FakeOpenRouter


async def per_lock(flights: SingleFlight, n: int) -> float:
    """Seconds per request to take and let go of its lock (``lock_dir=None``: the path without one)."""
    started = time.perf_counter()
    for i in range(n):
        async with flights.across_processes(f"{i:064x}"):
            pass
    return (time.perf_counter() - started) / n


def per_call(root: Path, n: int) -> float:
    """Seconds per gateway call to the loopback server, each a new prompt (a cache miss, so locked)."""
    with FakeOpenRouter(default_reply=completion_reply("ok")) as server:
        settings = GatewaySettings(api_base=server.base_url, cache_path=root / "cache" / "responses.sqlite")
        gateway = Gateway(settings, TEST_API_KEY, rng=random.Random(0))

        async def calls() -> float:
            await gateway.acomplete("m/x", "warm-up")  # litellm's first-call imports
            started = time.perf_counter()
            for i in range(n):
                await gateway.acomplete("m/x", f"prompt {i}")
            elapsed = (time.perf_counter() - started) / n
            await gateway.aclose()
            return elapsed

        return asyncio.run(calls())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        load_before = os.getloadavg()[0]
        bare = asyncio.run(per_lock(SingleFlight(None), args.requests))
        locked = asyncio.run(per_lock(SingleFlight(root / "inflight"), args.requests))
        call = per_call(root, max(args.requests // 10, 50))
    print(f"per request, {args.requests} requests (load {load_before:.1f} -> {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} cores):")
    print(f"  the path without a lock   {bare * 1e6:8.1f} us")
    print(f"  with the lock             {locked * 1e6:8.1f} us   (+{(locked - bare) * 1e6:.1f} us)")
    print(f"  a whole gateway call      {call * 1e6:8.1f} us   (loopback server, cache on, a new prompt each)")
    print(f"the lock's share of a call: {(locked - bare) / call:.1%}")


if __name__ == "__main__":
    main()
