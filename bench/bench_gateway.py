"""Foundation benchmark: CLI start-up, gateway overhead per call, and concurrency.

Everything is measured side by side in one run against the loopback OpenRouter server,
so the ratios hold on a noisy shared machine where absolute times do not. Run:

    python bench/bench_gateway.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings
from audit.testing.fake_openrouter import FakeOpenRouter, completion_reply


def cli_startup(runs: int = 5) -> tuple[float, bool]:
    """Median wall time of `python -m audit --help`, and whether litellm got imported."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "audit", "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    probe = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "audit", "--help"], capture_output=True, text=True, check=True
    )
    return statistics.median(times), "litellm" in probe.stderr


def gateway(server: FakeOpenRouter, cache_dir: Path, concurrency: int) -> Gateway:
    settings = GatewaySettings(api_base=server.base_url, max_concurrency=concurrency, cache_enabled=False,
                               cache_path=cache_dir / "unused.sqlite", timeout_s=30)
    return Gateway(settings, "bench-key", rng=random.Random(0))


async def per_call_overhead(server: FakeOpenRouter, cache_dir: Path, calls: int) -> tuple[float, float]:
    """Median latency of sequential calls: bare httpx POST vs the gateway, same payload."""
    body = {"model": "m/x", "prompt": "The quick brown fox", "max_tokens": 8}
    bare = []
    async with httpx.AsyncClient() as client:
        for _ in range(20):  # warm-up
            await client.post(server.base_url + "/completions", json=body)
        for _ in range(calls):
            started = time.perf_counter()
            (await client.post(server.base_url + "/completions", json=body,
                               headers={"Authorization": "Bearer x"})).json()
            bare.append(time.perf_counter() - started)
    gw = gateway(server, cache_dir, 1)
    for _ in range(20):
        await gw.acomplete("m/x", "The quick brown fox", max_tokens=8)
    timed = []
    for _ in range(calls):
        started = time.perf_counter()
        await gw.acomplete("m/x", "The quick brown fox", max_tokens=8)
        timed.append(time.perf_counter() - started)
    await gw.aclose()
    return statistics.median(bare), statistics.median(timed)


async def concurrent_batch(server: FakeOpenRouter, cache_dir: Path, calls: int, concurrency: int) -> float:
    gw = gateway(server, cache_dir, concurrency)
    await gw.acomplete("m/x", "warm-up")
    started = time.perf_counter()
    await asyncio.gather(*(gw.acomplete("m/x", f"prompt {i}") for i in range(calls)))
    elapsed = time.perf_counter() - started
    await gw.aclose()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    rows = []
    help_s, imported = cli_startup()
    rows.append(("python -m audit --help", f"{help_s * 1000:.0f} ms", "< 1000 ms, litellm not imported",
                 f"litellm imported: {imported}"))
    with tempfile.TemporaryDirectory() as tmp, FakeOpenRouter(default_reply=completion_reply("ok")) as server:
        bare, timed = asyncio.run(per_call_overhead(server, Path(tmp), args.calls))
        rows.append(("per-call overhead (median)", f"{(timed - bare) * 1000:.2f} ms",
                     "<= 5 ms over bare httpx", f"httpx {bare * 1000:.2f} ms, gateway {timed * 1000:.2f} ms "
                                               f"(x{timed / bare:.2f})"))
        server.latency_s = 0.2
        concurrency = 32
        elapsed = asyncio.run(concurrent_batch(server, Path(tmp), args.calls, concurrency))
        ideal = args.calls / concurrency * 0.2
        waves = -(-args.calls // concurrency) * 0.2
        rows.append((f"{args.calls} calls, 200 ms each, concurrency {concurrency}", f"{elapsed:.2f} s",
                     f"<= {1.15 * ideal:.2f} s (1.15 x ideal {ideal:.2f} s)",
                     f"x{elapsed / ideal:.2f} of ideal; x{elapsed / waves:.2f} of the {waves:.1f} s floor "
                     f"of {waves / 0.2:.0f} whole waves"))
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("measure", "measured", "target", "side by side")
    for row in [header, tuple("-" * w for w in width), *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, width)))


if __name__ == "__main__":
    main()
