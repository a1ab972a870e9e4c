"""Gateway benchmark: CLI start-up, per-call overhead, and throughput at 32 and 128 calls in flight.

Everything is measured side by side in one run against the loopback OpenRouter server,
so the ratios hold on a noisy shared machine where absolute times do not. The server runs
in its own process (in-process, its handler threads would compete with the client for the
GIL and the benchmark would measure the server), and so does every contender of the
throughput table: a fresh interpreter each, so one contender's litellm settings cannot leak
into another's, and ``time.process_time()`` there is that client's CPU alone. The server
counts the TCP connections each contender opened (``GET /_fake/stats``). Run:

    python bench/bench_gateway.py [--calls 400] [--repeats 2]

"× ideal" is wall time ÷ (calls / concurrency × 0.2 s); at 128, 400 calls are 3.1 waves, so
even a perfect client needs 4 × 0.2 s = 1.28 × ideal. "× bare aiohttp" is wall time ÷ that of bare
aiohttp on the same route and concurrency in this run, with the load average beside each row.
"route's client alone" is the HTTP client litellm drives on that route (its own handler on chat, the OpenAI SDK
on raw completions), on the gateway's pool without litellm: between it and "gateway" is litellm's per-call
path and the gateway's own work. "of it GC/call" is the garbage collector's CPU inside "CPU/call" (``gc.callbacks``). A last, longer
run at 128 in flight (``--long-calls``, a sweep's length) sets the gateway beside itself with
litellm's import-time objects unfrozen, the full collections that costs, and their CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

LATENCY_S = 0.2
ROUTES = ("chat", "raw completions")
CLIENT = "route's client alone"
"""The HTTP client litellm drives on each route, on the gateway's pool, without litellm: its own handler on
chat, the OpenAI SDK on raw completions (as litellm calls it: ``with_raw_response``, then ``parse``). What
a call costs below litellm, and why the raw route costs more than chat."""
CONTENDERS = ("gateway", "plain litellm", CLIENT, "bare aiohttp", "bare httpx")
UNFROZEN = "gateway, gc unfrozen"
"""The gateway with litellm's import-time objects handed back to the garbage collector (``gc.unfreeze``
after the warm-up call): what every full collection cost before the gateway froze them."""
BASELINE = "bare aiohttp"
"""What every contender's wall time is divided by, measured in the same run just before it."""
PROMPT = "The quick brown fox"


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
def loopback_server(latency_s: float, *options: str) -> Iterator[str]:
    """Start `python -m audit.testing.fake_openrouter` (with ``options``) in a subprocess; yield its base URL."""
    process = subprocess.Popen([sys.executable, "-m", "audit.testing.fake_openrouter", "--latency", str(latency_s),
                                *options], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=10)


class ServerStats:
    """Reads the server's counters over one kept-alive connection, so reading them opens none."""

    def __init__(self, base_url: str):
        parts = urlsplit(base_url)
        self._conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)

    def connections(self) -> int:
        self._conn.request("GET", "/_fake/stats")
        return json.loads(self._conn.getresponse().read())["connections_opened"]

    def close(self) -> None:
        self._conn.close()


# -- one contender, in its own process -------------------------------------------------------

def body(chat: bool, i: int) -> dict[str, Any]:
    """A distinct request per call (no cache or single-flight can merge them)."""
    return {"messages": [{"role": "user", "content": f"{PROMPT} {i}"}]} if chat else {"prompt": f"{PROMPT} {i}"}


async def contender_call(name: str, chat: bool, base_url: str, concurrency: int
                         ) -> tuple[Callable[[int], Awaitable[Any]], Callable[[], Awaitable[int | None]]]:
    """``(call(i), close())`` for one contender; ``close`` returns the connections it counted itself."""
    path = "/chat/completions" if chat else "/completions"
    if name in ("gateway", UNFROZEN):
        from audit.llm.gateway import Gateway
        from audit.llm.settings import GatewaySettings

        settings = GatewaySettings(api_base=base_url, max_concurrency=concurrency, cache_enabled=False,
                                   cache_path=Path(tempfile.gettempdir()) / "bench-unused.sqlite", timeout_s=30)
        gw = Gateway(settings, "bench-key", rng=random.Random(0))

        async def close_gateway() -> int:
            opened = gw.connections_opened
            await gw.aclose()
            return opened

        if chat:
            return (lambda i: gw.achat("m/x", body(True, i)["messages"])), close_gateway
        return (lambda i: gw.acomplete("m/x", body(False, i)["prompt"])), close_gateway
    if name == CLIENT:
        from audit.llm import backend
        from audit.llm.settings import GatewaySettings

        pool = backend.Pool(base_url, "bench-key", 30, concurrency, GatewaySettings.max_reply_bytes)

        async def close_pool() -> int:
            opened = pool.connections_opened
            await pool.close()
            return opened

        if chat:
            return (lambda i: pool.chat.post(base_url + path, json={"model": "m/x", **body(True, i)})), close_pool

        async def sdk_call(i: int) -> Any:
            raw = await pool.completion.completions.with_raw_response.create(model="m/x", **body(False, i))
            return raw.parse()

        return sdk_call, close_pool
    if name == "plain litellm":  # litellm as a user calls it: its defaults, its own clients
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline price map
        import litellm

        litellm.suppress_debug_info = True
        common = {"api_base": base_url, "api_key": "bench-key", "timeout": 30}

        async def close_litellm() -> None:
            await litellm.close_litellm_async_clients()

        if chat:
            return (lambda i: litellm.acompletion(model="openrouter/m/x", **body(True, i), **common)), close_litellm
        return (lambda i: litellm.atext_completion(model="text-completion-openai/m/x", **body(False, i),
                                                   **common)), close_litellm
    if name == "bare aiohttp":
        import aiohttp

        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))

        async def post_aiohttp(i: int) -> Any:
            async with session.post(base_url + path, json={"model": "m/x", **body(chat, i)}) as reply:
                return await reply.json()

        async def close_aiohttp() -> None:
            await session.close()

        return post_aiohttp, close_aiohttp
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client = httpx.AsyncClient(limits=limits, timeout=30)

    async def post_httpx(i: int) -> Any:
        return (await client.post(base_url + path, json={"model": "m/x", **body(chat, i)})).json()

    async def close_httpx() -> None:
        await client.aclose()

    return post_httpx, close_httpx


class CollectorTime:
    """CPU seconds the garbage collector spent while installed, and its full (oldest-generation)
    collections: each of those walks every object the process holds, litellm's import included."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.full = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()  # the collection runs in the thread that triggered it
            return
        self.cpu += time.thread_time() - self._started
        self.full += info["generation"] == 2


async def run_contender(name: str, chat: bool, base_url: str, concurrency: int, calls: int) -> dict[str, Any]:
    """Wall and CPU seconds of ``calls`` calls at ``concurrency`` in flight, after one warm-up call,
    and the garbage collector's share of that CPU."""
    call, close = await contender_call(name, chat, base_url, concurrency)
    gate = asyncio.Semaphore(concurrency)  # the gateway bounds itself too; the others need it

    async def one(i: int) -> None:
        async with gate:
            await call(i)

    await call(-1)  # the gateway's first call imports litellm (and freezes what it made)
    if name == UNFROZEN:
        gc.unfreeze()
    collector = CollectorTime()
    gc.callbacks.append(collector)
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(calls)))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    gc.callbacks.remove(collector)
    return {"wall": wall, "cpu": cpu, "gc": collector.cpu, "full_gc": collector.full, "own_count": await close()}


def measure(name: str, route: str, base_url: str, concurrency: int, calls: int, stats: ServerStats) -> dict[str, Any]:
    """Run one contender in a fresh interpreter; add the connections the server saw it open."""
    before = stats.connections()
    out = subprocess.run([sys.executable, __file__, "--contender", name, "--route", route, "--base-url", base_url,
                          "--concurrency", str(concurrency), "--calls", str(calls)],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["connections"] = stats.connections() - before
    return result


# -- sequential per-call overhead (in this process) ------------------------------------------

async def median_latency(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    """Median seconds of ``calls`` sequential awaits of ``call()``, after a warm-up."""
    for _ in range(20):
        await call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def per_call_overhead(base_url: str, calls: int, chat: bool) -> tuple[float, float, float]:
    """Median latency of sequential calls on one route: bare httpx POST, litellm alone (on the gateway's pool), the gateway."""
    import httpx

    from audit.llm import backend
    from audit.llm.settings import GatewaySettings

    path, payload = ("/chat/completions", body(True, 0)) if chat else ("/completions", body(False, 0))
    payload["max_tokens"] = 8
    async with httpx.AsyncClient(headers={"Authorization": "Bearer x"}) as client:
        bare = await median_latency(lambda: client.post(base_url + path, json={"model": "m/x", **payload}), calls)
    route = backend.CHAT_ROUTE if chat else backend.COMPLETION_ROUTE
    pool = backend.Pool(base_url, "bench-key", 30, 1, GatewaySettings.max_reply_bytes)
    lite = await median_latency(
        lambda: backend.post(route, "m/x", dict(payload), api_base=base_url, api_key="bench-key", timeout_s=30,
                             headers={}, provider=None, client=pool.client(route)), calls)
    await pool.close()
    call, close = await contender_call("gateway", chat, base_url, 1)
    timed = await median_latency(lambda: call(0), calls)  # the cache is off: every call is sent
    await close()
    return bare, lite, timed


# -- the report ---------------------------------------------------------------------------------

def table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    width = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [header, tuple("-" * w for w in width), *rows]
    return "\n".join(" | ".join(cell.ljust(w) for cell, w in zip(row, width)) for row in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=2, help="runs per cell; the fastest is shown (load skews up)")
    parser.add_argument("--sequential-calls", type=int, default=200)
    parser.add_argument("--long-calls", type=int, default=2000,
                        help="calls of the long run (the garbage collector's full collections); 0 skips it")
    parser.add_argument("--contender", choices=(*CONTENDERS, UNFROZEN), help=argparse.SUPPRESS)
    parser.add_argument("--route", choices=ROUTES, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:  # worker mode: one contender, one JSON line
        result = asyncio.run(run_contender(args.contender, args.route == "chat", args.base_url, args.concurrency,
                                           args.calls))
        print(json.dumps(result))
        return

    rows = []
    help_s, imported = cli_startup()
    rows.append(("python -m audit --help", f"{help_s * 1000:.0f} ms", "< 1000 ms, litellm not imported",
                 f"litellm imported: {imported}"))
    for route in ROUTES:
        with loopback_server(0.0, "--echo") as base_url:
            bare, lite, timed = asyncio.run(per_call_overhead(base_url, args.sequential_calls, route == "chat"))
        rows.append((f"per-call overhead, {route} (median, sequential)", f"{(timed - bare) * 1000:.2f} ms",
                     "<= 5 ms over bare httpx",
                     f"httpx {bare * 1000:.2f} ms, litellm alone {lite * 1000:.2f} ms, gateway "
                     f"{timed * 1000:.2f} ms (own share {(timed - lite) * 1000:.2f} ms)"))
    print(table(rows, ("measure", "measured", "target", "side by side")), flush=True)

    print(f"\n{args.calls} calls x {LATENCY_S * 1000:.0f} ms, fastest of {args.repeats}; "
          f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    grid = []
    with loopback_server(LATENCY_S, "--echo") as base_url:
        stats = ServerStats(base_url)
        for route in ROUTES:
            for concurrency in (32, 128):
                ideal = args.calls / concurrency * LATENCY_S
                best_of = {}
                for name in (BASELINE, *(c for c in CONTENDERS if c != BASELINE)):  # the baseline first
                    runs = [measure(name, route, base_url, concurrency, args.calls, stats) for _ in range(args.repeats)]
                    best = best_of[name] = min(runs, key=lambda r: r["wall"])
                    own = f" (own count {best['own_count']})" if best["own_count"] is not None else ""
                    grid.append((route, str(concurrency), name, f"{best['wall']:.2f} s",
                                 f"{best['wall'] / ideal:.2f}x", f"{best['wall'] / best_of[BASELINE]['wall']:.2f}x",
                                 f"{best['cpu'] / args.calls * 1000:.2f} ms",
                                 f"{best['gc'] / args.calls * 1000:.2f} ms ({best['full_gc']} full)",
                                 f"{best['connections']}{own}",
                                 f"{os.getloadavg()[0]:.1f}"))
                    print(" | ".join(grid[-1]), flush=True)
        long_rows = []
        for route in ROUTES if args.long_calls else ():  # a sweep's length: full collections come every ~500 calls
            for name in (UNFROZEN, "gateway"):
                best = min((measure(name, route, base_url, 128, args.long_calls, stats) for _ in range(args.repeats)),
                           key=lambda r: r["cpu"])
                long_rows.append((route, name, f"{best['wall']:.2f} s", f"{best['cpu'] / args.long_calls * 1000:.2f} ms",
                                  f"{best['gc'] / args.long_calls * 1000:.2f} ms", str(best["full_gc"]),
                                  f"{os.getloadavg()[0]:.1f}"))
                print(" | ".join(long_rows[-1]), flush=True)
        stats.close()
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")
    print(table(grid, ("route", "concurrency", "contender", "wall", "x ideal", f"x {BASELINE}", "CPU/call",
                       "of it GC/call", "connections opened", "load")))
    if long_rows:
        print(f"\n{args.long_calls} calls at 128 in flight, least CPU of {args.repeats}:")
        print(table(long_rows, ("route", "contender", "wall", "CPU/call", "of it GC/call", "full collections",
                                "load")))
    print(f"\ntargets: gateway <= 1.2x ideal at 32 and < 2.5x {BASELINE} at 128 on both routes (measured side by "
          "side, load beside), CPU/call <= 2 ms, connections <= concurrency (the warm-up call included)")


if __name__ == "__main__":
    main()
