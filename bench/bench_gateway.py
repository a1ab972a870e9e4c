"""Foundation benchmark: CLI start-up, gateway overhead per call, and concurrency.

Everything is measured side by side in one run against the loopback OpenRouter server,
so the ratios hold on a noisy shared machine where absolute times do not. The server runs
in its own process: in-process, its handler threads would compete with the client for
the GIL and the benchmark would measure the server. Run:

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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from audit.llm import backend
from audit.llm.gateway import Gateway
from audit.llm.settings import GatewaySettings


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


@contextmanager
def loopback_server(latency_s: float) -> Iterator[str]:
    """Start `python -m audit.testing.fake_openrouter` in a subprocess; yield its base URL."""
    process = subprocess.Popen([sys.executable, "-m", "audit.testing.fake_openrouter", "--latency", str(latency_s)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=10)


def gateway(base_url: str, cache_dir: Path, concurrency: int) -> Gateway:
    settings = GatewaySettings(api_base=base_url, max_concurrency=concurrency, cache_enabled=False,
                               cache_path=cache_dir / "unused.sqlite", timeout_s=30)
    return Gateway(settings, "bench-key", rng=random.Random(0))


async def per_call_overhead(base_url: str, cache_dir: Path, calls: int) -> tuple[float, float, float]:
    """Median latency of sequential calls: bare httpx POST, litellm alone, the gateway; same payload."""
    body = {"model": "m/x", "prompt": "The quick brown fox", "max_tokens": 8}
    bare = []
    async with httpx.AsyncClient() as client:
        for _ in range(20):  # warm-up
            await client.post(base_url + "/completions", json=body)
        for _ in range(calls):
            started = time.perf_counter()
            (await client.post(base_url + "/completions", json=body,
                               headers={"Authorization": "Bearer x"})).json()
            bare.append(time.perf_counter() - started)
    gw = gateway(base_url, cache_dir, 1)
    for _ in range(20):
        await gw.acomplete("m/x", "The quick brown fox", max_tokens=8)
    client = gw._completion_client()
    bare_litellm = []
    for _ in range(calls):
        started = time.perf_counter()
        await backend.post(backend.COMPLETION_ROUTE, "m/x", {"prompt": "The quick brown fox", "max_tokens": 8},
                           api_base=base_url, api_key="bench-key", timeout_s=30, headers={}, provider=None,
                           client=client)
        bare_litellm.append(time.perf_counter() - started)
    timed = []
    for _ in range(calls):
        started = time.perf_counter()
        await gw.acomplete("m/x", "The quick brown fox", max_tokens=8)
        timed.append(time.perf_counter() - started)
    await gw.aclose()
    return statistics.median(bare), statistics.median(bare_litellm), statistics.median(timed)


async def concurrent_batch(base_url: str, cache_dir: Path, calls: int, concurrency: int) -> tuple[float, float]:
    """Wall time of `calls` requests at `concurrency` in flight: bare httpx, then the gateway."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                (await client.post(base_url + "/completions", json={"model": "m/x", "prompt": f"p{i}"})).json()

        await one(-1)
        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        bare = time.perf_counter() - started
    gw = gateway(base_url, cache_dir, concurrency)
    await gw.acomplete("m/x", "warm-up")
    started = time.perf_counter()
    await asyncio.gather(*(gw.acomplete("m/x", f"prompt {i}") for i in range(calls)))
    elapsed = time.perf_counter() - started
    await gw.aclose()
    return bare, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    rows = []
    help_s, imported = cli_startup()
    rows.append(("python -m audit --help", f"{help_s * 1000:.0f} ms", "< 1000 ms, litellm not imported",
                 f"litellm imported: {imported}"))
    with tempfile.TemporaryDirectory() as tmp:
        with loopback_server(0.0) as base_url:
            bare, lite, timed = asyncio.run(per_call_overhead(base_url, Path(tmp), args.calls))
        rows.append(("per-call overhead (median)", f"{(timed - bare) * 1000:.2f} ms",
                     "<= 5 ms over bare httpx", f"httpx {bare * 1000:.2f} ms, litellm alone {lite * 1000:.2f} ms, "
                                               f"gateway {timed * 1000:.2f} ms (own share {(timed - lite) * 1000:.2f} ms)"))
        concurrency = 32
        with loopback_server(0.2) as base_url:
            bare, elapsed = asyncio.run(concurrent_batch(base_url, Path(tmp), args.calls, concurrency))
        ideal = args.calls / concurrency * 0.2
        waves = -(-args.calls // concurrency) * 0.2
        rows.append((f"{args.calls} calls, 200 ms each, concurrency {concurrency}", f"{elapsed:.2f} s",
                     f"<= {1.15 * ideal:.2f} s (1.15 x ideal {ideal:.2f} s)",
                     f"x{elapsed / ideal:.2f} of ideal, x{elapsed / waves:.2f} of the {waves:.1f} s floor "
                     f"({waves / 0.2:.0f} whole waves); bare httpx {bare:.2f} s"))
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("measure", "measured", "target", "side by side")
    for row in [header, tuple("-" * w for w in width), *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, width)))


if __name__ == "__main__":
    main()
