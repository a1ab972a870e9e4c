"""A run's chat calls spread over several processes, with this process the single writer.

At 128 calls in flight the CPU of a run that answers thousands of cards is litellm's and the
gateway's work per call (about 3 ms a card on one event loop), not the server's latency. Forked
workers each run the same :class:`~audit.llm.gateway.Gateway`, built from the same config, on
their own event loop; :class:`WorkerGateway` stands in for the gateway in this process and keeps
everything a run must have one of:

- **one ledger and journal**: a worker's gateway keeps its call records in memory and sends each
  call's records back with its reply; only this process adds them to its ledger, so
  ``usage.jsonl`` has one writer and the run's answers journal stays the caller's.
- **one budget**: this process takes a slot (``gateway.max_concurrency`` over all workers) and
  asks the budget before a call goes to a worker, and charges what each record cost, as the
  gateway does in one process. (The one difference: a spent budget refuses a call before the
  response cache is asked, so a reply cached by an earlier run is refused too; the run stops
  ``budget`` either way.)
- **one response cache**: every worker opens the same SQLite file, which takes several
  processes (:mod:`audit.llm.cache`); identical requests go to the same worker (by a digest of
  the request), so a request in flight is still sent once. A worker that finds the cache damaged
  (or its disk full) sends the warning with its next reply instead of printing it: this process
  prints each kind once, so a run says it in one line however many workers found it.
- **no key in a message**: a worker's gateway redacts what it records; a worker's unexpected
  failure comes back as one line, redacted too.

Stopping: workers ignore Ctrl-C, SIGTERM and SIGHUP (a terminal or a scheduler sends them to every
process of the group or job); this process decides, and sends the caller's cancellation on, so a worker cuts its calls off
as the gateway does (recorded as ``cancelled``) and sends those records before it exits. A worker
whose parent is gone (SIGKILL) sees its socket close and exits, losing only the calls in flight,
as a killed run in one process does. A worker that dies fails the calls it had with one line
(:class:`WorkerCrashed`).

Workers are forked (no second import of litellm, ~3.5 CPU-s each), before the event loop runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import pickle
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from audit.errors import UserError
from audit.stop_signals import STOPS
from audit.llm import budget as budgets
from audit.llm.cache import print_warning
from audit.llm.types import Blocked, GatewayError, LLMResponse
from audit.runtime import long_lived_heap

if TYPE_CHECKING:  # a run checks its ``workers`` setting before it loads the gateway
    from audit.llm.gateway import Gateway
    from audit.llm.ledger import CallRecord, Ledger
    from audit.llm.settings import GatewaySettings

AUTO_MAX = 4
"""``workers=auto`` uses one worker per core this process may run on, at most this many: past a few
cores the parent's own share (journal, ledger, pickling) bounds the rate."""
STOP_S = 30.0
"""How long closing waits for the workers' last records before it kills them."""
_FRAME = struct.Struct(">I")


class WorkerCrashed(UserError):
    """A worker process ended before it was told to (killed, or a failure outside any call)."""


def worker_count(value: Any, cores: int | None = None) -> int:
    """``workers``: a whole number of processes (1 = every call in this process) or ``auto``
    (one per core, at most :data:`AUTO_MAX`)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return max(1, min(cores if cores is not None else len(os.sched_getaffinity(0)), AUTO_MAX))
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"workers={value!r}: give a whole number of processes, at least 1, or workers=auto "
                        f"(one per core, at most {AUTO_MAX})")
    return value


def route_of(model: str, messages: Sequence[Mapping[str, Any]], options: Mapping[str, Any], workers: int) -> int:
    """The worker a request goes to: the same request always to the same one (its single-flight)."""
    text = json.dumps([model, messages, options], sort_keys=True, default=str, ensure_ascii=False)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") % workers


# -- the wire: length-prefixed pickles over a socketpair between a parent and its own fork -----

def _frame(message: tuple[Any, ...]) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _FRAME.pack(len(data)) + data


async def _receive(reader: asyncio.StreamReader) -> tuple[Any, ...] | None:
    """The next message, or None once the other end has closed."""
    try:
        size = _FRAME.unpack(await reader.readexactly(_FRAME.size))[0]
        return pickle.loads(await reader.readexactly(size))  # noqa: S301 - our own fork wrote it
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def _error_parts(exc: GatewayError) -> tuple[str, str, int | None, int, Blocked | None]:
    """A GatewayError as plain values (its constructor takes keywords, which pickling loses)."""
    return exc.kind, str(exc.args[0]), exc.status, exc.retries, exc.blocked


# -- this process's side ---------------------------------------------------------------------------

@dataclass
class _Worker:
    number: int
    pid: int
    sock: socket.socket
    waiting: dict[int, asyncio.Future[LLMResponse]] = field(default_factory=dict)
    writer: asyncio.StreamWriter | None = None
    reading: asyncio.Task[None] | None = None
    failure: Exception | None = None
    """Why no call can go to this worker any more (it died, or its records could not be written)."""
    said_bye: bool = False

    def fail(self, failure: Exception) -> None:
        """Fail the calls waiting for this worker, and every later one, with ``failure``."""
        self.failure = failure
        for reply in self.waiting.values():
            if not reply.done():
                reply.set_exception(failure)


class WorkerGateway:
    """The run's gateway (``gateway``: ledger, budget, cache, settings) with its chat calls made
    by ``count`` forked workers, each running the gateway ``make`` builds."""

    def __init__(self, gateway: Gateway, make: Callable[[], Gateway], count: int):
        self.gateway = gateway
        self._make = make
        self.count = count
        self._workers: list[_Worker] = []
        self._ids = itertools.count()
        self._slots: asyncio.Semaphore | None = None
        self._connected: asyncio.Future[None] | None = None
        self._warned: set[str] = set()
        if gateway.cache is not None:  # this process deletes from the cache too (``forget``)
            gateway.cache.warn = self.warn_once

    # the gateway's bookkeeping, which stays in this process
    @property
    def settings(self) -> GatewaySettings:
        return self.gateway.settings

    @property
    def ledger(self) -> Ledger:
        return self.gateway.ledger

    @property
    def budget(self) -> budgets.Budget | None:
        return self.gateway.budget

    def record_usage_in(self, usage_path: Any) -> None:
        self.gateway.record_usage_in(usage_path)

    def write_usage(self) -> Any:
        return self.gateway.write_usage()

    def forget(self, *responses: LLMResponse) -> None:
        """The cache is one file: this process deletes from it what a worker's call put there."""
        self.gateway.forget(*responses)

    def warn_once(self, kind: str, line: str) -> None:
        """A cache warning from this process or a worker, printed the first time its kind comes."""
        if kind not in self._warned:
            self._warned.add(kind)
            print_warning(kind, line)

    def start(self) -> None:
        """Fork the workers; call before the event loop runs (a fork inside one would carry it along)."""
        if self._workers:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        self.gateway.redact("")  # the redactor's tables are built here once, not in every worker
        for number in range(self.count):
            ours, theirs = socket.socketpair()
            # A stop signal is held while the fork runs and handled once it is done. Landing in the middle,
            # its handler ran inside a fork hook (logging's lock release), where Python prints the raised
            # interrupt as "Exception ignored" and drops it: the run carried on to exit 0 (found by
            # tests/jobs/test_signal_points.py; tests/llm/test_workers.py now lands one there on purpose).
            unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
            pid = os.fork()
            if pid == 0:  # the worker: never returns into the caller's code
                code = 70
                try:
                    for earlier in [ours, *(w.sock for w in self._workers)]:
                        earlier.close()  # else a worker's socket outlives the parent in its siblings
                    code = _serve(theirs, self._make, unblocked)
                finally:
                    os._exit(code)
            theirs.close()
            self._workers.append(_Worker(number, pid, ours))
            signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)  # a signal held meanwhile is handled here

    async def achat(self, model: str, messages: Sequence[Mapping[str, Any]], **options: Any) -> LLMResponse:
        """:meth:`Gateway.achat` in the worker the request routes to."""
        await self._connect()
        assert self._slots is not None
        worker = self._workers[route_of(model, messages, options, self.count)]
        async with self._slots:
            if worker.failure is not None:
                raise worker.failure
            if self.budget is not None:  # when the call takes its slot, as in the gateway
                self.budget.check(f"{options.get('tag') or 'chat'} call to {model}")
            number = next(self._ids)
            reply: asyncio.Future[LLMResponse] = asyncio.get_running_loop().create_future()
            worker.waiting[number] = reply
            assert worker.writer is not None
            worker.writer.write(_frame(("call", number, model, list(messages), options)))
            try:
                return await reply
            except asyncio.CancelledError:
                if worker.failure is None and not worker.writer.is_closing():
                    worker.writer.write(_frame(("cancel", number)))  # its cut-off record still comes back
                raise
            finally:
                worker.waiting.pop(number, None)

    async def _connect(self) -> None:
        """The workers' streams on this event loop (once; concurrent first calls wait for it)."""
        if self._connected is None:
            self._connected = asyncio.ensure_future(self._open())
        await asyncio.shield(self._connected)

    async def _open(self) -> None:
        if not self._workers:
            raise RuntimeError("WorkerGateway.start() must run before the event loop (a fork inside one carries it)")
        self._slots = asyncio.Semaphore(self.settings.max_concurrency)
        for worker in self._workers:
            reader, worker.writer = await asyncio.open_unix_connection(sock=worker.sock)
            worker.reading = asyncio.ensure_future(self._read(worker, reader))

    async def _read(self, worker: _Worker, reader: asyncio.StreamReader) -> None:
        """Records into the ledger (charged to the budget), then the reply to whoever waits for it.

        A record that cannot be written (a full disk) fails the calls as it would in one process."""
        try:
            while (message := await _receive(reader)) is not None:
                for kind, line in message[-2]:
                    self.warn_once(kind, line)
                for record in message[-1]:
                    self.ledger.add(record)
                    if self.budget is not None:
                        self.budget.charge(record.usage.cost)
                if message[0] == "bye":
                    worker.said_bye = True
                    return
                _, number, outcome, value = message[:4]
                reply = worker.waiting.get(number)
                if reply is None or reply.done():
                    continue
                if outcome == "ok":
                    reply.set_result(value)
                elif outcome == "gateway":
                    kind, text, status, retries, blocked = value
                    reply.set_exception(GatewayError(kind, text, status=status, retries=retries, blocked=blocked))
                elif outcome == "failed":
                    reply.set_exception(WorkerCrashed(f"gateway worker {worker.number + 1} failed: {value}"))
                else:
                    reply.cancel()
        except Exception as exc:  # noqa: BLE001 - handed to every call waiting here, which raises it
            worker.fail(exc)
            return
        worker.fail(WorkerCrashed(f"gateway worker {worker.number + 1} (pid {worker.pid}) {_ended(worker.pid)}"))

    async def aclose(self) -> None:
        """Tell every worker to stop (its calls in flight cut off and recorded), take its last records,
        reap it (killed after :data:`STOP_S`), then close the gateway."""
        try:
            live = [w for w in self._workers if w.writer is not None and w.failure is None]
            for worker in live:
                assert worker.writer is not None
                worker.writer.write(_frame(("stop",)))
            readers = [w.reading for w in self._workers if w.reading is not None]
            if readers:
                _, late = await asyncio.wait(readers, timeout=STOP_S)
                for task in late:
                    task.cancel()
            for worker in self._workers:
                if worker.writer is not None:
                    worker.writer.close()
                worker.sock.close()
                _reap(worker.pid)
            self._workers = []
        finally:
            await self.gateway.aclose()


def _ended(pid: int, wait_s: float = 5.0) -> str:
    """How a worker ended, for the one line. Waited for here, loop and all (it closed its socket as it
    went, so this takes milliseconds): no call may go to it meanwhile, and the run is stopping anyway."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return "ended unexpectedly"
        if done:
            if os.WIFSIGNALED(status):
                return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
            return f"ended unexpectedly with exit {os.WEXITSTATUS(status)}"
        time.sleep(0.005)
    return "closed its connection unexpectedly"


def _reap(pid: int, wait_s: float = 2.0) -> None:
    """Collect a worker's exit; one still there after ``wait_s`` (it said goodbye, or never will) is killed."""
    deadline = time.monotonic() + wait_s
    try:
        while os.waitpid(pid, os.WNOHANG)[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return
            time.sleep(0.005)
    except (ChildProcessError, ProcessLookupError):
        pass


# -- the worker's side ------------------------------------------------------------------------------

def _serve(sock: socket.socket, make: Callable[[], Gateway], unblocked: set[signal.Signals]) -> int:
    """A worker's life: the calls its parent sends, on a gateway of its own, until told to stop.
    ``unblocked``: the signal mask before the fork, restored once the stop signals are ignored here."""
    for stop in STOPS:  # the parent decides what a stop stops
        signal.signal(stop, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
    budgets.activate(None)  # the parent asks and charges the budget
    # The parent's heap (a knowledge graph, the cards) came along with the fork: frozen, the collections
    # the calls trigger do not rescan it (nor copy its pages in by touching them).
    with long_lived_heap():
        return asyncio.run(_calls(sock, make()))


async def _calls(sock: socket.socket, gateway: Gateway) -> int:
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    ledger, sent = gateway.ledger, 0
    tasks: dict[int, asyncio.Task[None]] = {}
    warnings: list[tuple[str, str]] = []
    if gateway.cache is not None:  # the parent prints it, once for all workers
        gateway.cache.warn = lambda kind, line: warnings.append((kind, line))

    def news() -> tuple[list[tuple[str, str]], list[CallRecord]]:
        """The cache warnings and call records not sent yet, which end every message to the parent."""
        nonlocal sent
        records = ledger.records[sent:]
        sent += len(records)
        said = warnings[:]
        warnings.clear()
        return said, records

    async def one(number: int, model: str, messages: list[dict[str, Any]], options: dict[str, Any]) -> None:
        try:
            outcome: tuple[str, Any] = ("ok", await gateway.achat(model, messages, **options))
        except GatewayError as exc:
            outcome = ("gateway", _error_parts(exc))
        except asyncio.CancelledError:
            outcome = ("cancelled", None)
        except Exception as exc:  # noqa: BLE001 - a bug: one line back to the parent, keys masked
            outcome = ("failed", gateway.redact(f"{type(exc).__name__}: {exc}"))
        finally:
            tasks.pop(number, None)
        writer.write(_frame(("done", number, *outcome, *news())))

    while (message := await _receive(reader)) is not None and message[0] != "stop":
        if message[0] == "call":
            tasks[message[1]] = asyncio.ensure_future(one(*message[1:]))
        elif message[0] == "cancel" and message[1] in tasks:
            tasks[message[1]].cancel()
    pending = list(tasks.values())
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    await gateway.aclose()
    if message is None:  # the parent is gone: nobody to tell
        return 0
    writer.write(_frame(("bye", *news())))
    await writer.drain()
    writer.close()
    return 0
