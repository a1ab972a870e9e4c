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


PROMPT = "The quick brown fox"
MESSAGES = [{"role": "user", "content": PROMPT}]


async def median_latency(call, calls: int) -> float:
    """Median seconds of ``calls`` sequential awaits of ``call()``, after a warm-up."""
    for _ in range(20):
        await call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def per_call_overhead(base_url: str, cache_dir: Path, calls: int, route: str) -> tuple[float, float, float]:
    """Median latency of sequential calls on one route: bare httpx POST, litellm alone, the gateway."""
    chat = route == backend.CHAT_ROUTE
    path, payload = ("/chat/completions", {"messages": MESSAGES}) if chat else ("/completions", {"prompt": PROMPT})
    payload["max_tokens"] = 8
    async with httpx.AsyncClient(headers={"Authorization": "Bearer x"}) as client:
        bare = await median_latency(
            lambda: client.post(base_url + path, json={"model": "m/x", **payload}), calls)
    gw = gateway(base_url, cache_dir, 1)
    pooled = None if chat else gw._client(route, "openrouter", base_url)
    lite = await median_latency(
        lambda: backend.post(route, "m/x", dict(payload), api_base=base_url, api_key="bench-key", timeout_s=30,
                             headers={}, provider=None, client=pooled), calls)
    timed = await median_latency(
        (lambda: gw.achat("m/x", MESSAGES, max_tokens=8)) if chat
        else (lambda: gw.acomplete("m/x", PROMPT, max_tokens=8)), calls)
    await gw.aclose()
    return bare, lite, timed


async def concurrent_batch(base_url: str, cache_dir: Path, calls: int, concurrency: int,
                           route: str) -> tuple[float, float]:
    """Wall time of `calls` requests at `concurrency` in flight on one route: bare httpx, then the gateway."""
    chat = route == backend.CHAT_ROUTE
    path = "/chat/completions" if chat else "/completions"

    def body(i: int) -> dict:
        return {"messages": [{"role": "user", "content": f"p{i}"}]} if chat else {"prompt": f"p{i}"}

    def call(i: int):
        return gw.achat("m/x", body(i)["messages"]) if chat else gw.acomplete("m/x", f"p{i}")

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with gate:
                (await client.post(base_url + path, json={"model": "m/x", **body(i)})).json()

        await one(-1)
        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(calls)))
        bare = time.perf_counter() - started
    gw = gateway(base_url, cache_dir, concurrency)
    await call(-1)
    started = time.perf_counter()
    await asyncio.gather(*(call(i) for i in range(calls)))
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
        for route, name in ((backend.COMPLETION_ROUTE, "raw completion"), (backend.CHAT_ROUTE, "chat")):
            with loopback_server(0.0) as base_url:
                bare, lite, timed = asyncio.run(per_call_overhead(base_url, Path(tmp), args.calls, route))
            rows.append((f"per-call overhead, {name} (median)", f"{(timed - bare) * 1000:.2f} ms",
                         "<= 5 ms over bare httpx",
                         f"httpx {bare * 1000:.2f} ms, litellm alone {lite * 1000:.2f} ms, gateway "
                         f"{timed * 1000:.2f} ms (own share {(timed - lite) * 1000:.2f} ms)"))
        concurrency = 32
        ideal = args.calls / concurrency * 0.2
        waves = -(-args.calls // concurrency) * 0.2
        for route, name in ((backend.COMPLETION_ROUTE, "raw completion"), (backend.CHAT_ROUTE, "chat")):
            with loopback_server(0.2) as base_url:
                bare, elapsed = asyncio.run(concurrent_batch(base_url, Path(tmp), args.calls, concurrency, route))
            rows.append((f"{args.calls} x {name}, 200 ms each, concurrency {concurrency}", f"{elapsed:.2f} s",
                         f"<= {1.15 * ideal:.2f} s (1.15 x ideal {ideal:.2f} s)",
                         f"x{elapsed / ideal:.2f} of ideal, x{elapsed / waves:.2f} of the {waves:.1f} s floor "
                         f"({waves / 0.2:.0f} whole waves); bare httpx {bare:.2f} s"))
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("measure", "measured", "target", "side by side")
    for row in [header, tuple("-" * w for w in width), *rows]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(row, width)))


if __name__ == "__main__":
    main()
