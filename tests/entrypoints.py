"""Start the real entrypoints (``python -m audit ...``) the way the end-to-end tests need, warm or cold.

Why warm: a fresh interpreter pays ~3.5 CPU-seconds importing litellm before the entrypoint does
anything, and the end-to-end tests start hundreds of them (on 2 cores that was most of the suite).
Here each pytest process starts one *fork server* on first use: an interpreter that imports what
the entrypoints import (``audit.app.warm_imports``, the warm launcher's list, plus
:data:`ALSO_IMPORTED`) once, then forks one child per launch. The child becomes exactly what
``python -m <module> <args>`` would be before it runs anything: its own pid (signal it, kill it,
its exit code is its own, ``-N`` when a signal ends it), the given ``cwd`` and ``env``
(``os.environ`` replaced before the module runs), the given stdin/stdout/stderr (pipes, files,
``DEVNULL``, ``STDOUT``), the signal dispositions a fresh ``python`` started by this process would
have (``SIGINT`` raises KeyboardInterrupt unless ignored here, ``SIGPIPE`` ignored, the rest
default), a new session or process group when asked, ``preexec_fn`` run in the child. Then
``runpy.run_module(module, run_name="__main__", alter_sys=True)`` runs the entrypoint, and the child
ends as ``python -m`` does (SystemExit's code, a traceback and 1 for an uncaught error, death by
SIGINT for an uncaught KeyboardInterrupt, non-daemon threads joined, atexit handlers, the garbage's
finalizers), short of tearing down the modules it shares with the server (``teardown=True`` asks for
that too: :func:`_end_as_python_ends` says why and what it leaves out). The run is real end to end:
the real entrypoint over real HTTP to the loopback server; nothing is patched.

What a fork cannot give a child is what the interpreter read before the fork: its start-up
variables (``PYTHON*``) and any variable a module read while being imported. The server records
every variable read during its imports and the client refuses (``ValueError``) a launch whose
environment differs in one of them, rather than run it with the wrong value: such a test runs cold.

Why cold as well: the warm path must not become the only way the suite starts the program, or an
import-time fault (a slow or network-touching import, an import-order bug, a variable read at
import) would never be seen. These tests start a truly fresh interpreter on purpose, with
:mod:`subprocess` itself: the README's commands (``tests/test_docs.py``), the import-time budget
of ``--help`` (``tests/test_main.py``, ``tests/jobs/test_cli_help.py``), the missing-key line
(``tests/censorship/test_main.py``), the key-leak corpus (``tests/test_key_leak.py``), and at
least one full run of each entrypoint (marked "cold on purpose" where they are). Setting
``AUDIT_TEST_COLD=1`` runs every launch through this module cold as well (``bench/bench_suite.py``
compares the two).
"""

from __future__ import annotations

import atexit
import gc
import io
import json
import locale
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

PIPE, STDOUT, DEVNULL = subprocess.PIPE, subprocess.STDOUT, subprocess.DEVNULL
COLD_ENV = "AUDIT_TEST_COLD"
"""Set to 1 to start every entrypoint in a fresh interpreter (the old way, for comparison)."""
LAUNCH_LOG_ENV = "AUDIT_TEST_LAUNCH_LOG"
"""A file to append one line per launch to (``cold audit``, ``warm audit.epistemic``), for bench/bench_suite.py."""
ROOT = Path(__file__).resolve().parent.parent
FIRST_RUN_IMPORTS = (
    # Hydra's first run: its plugin scan (the launchers' multiprocessing), the override parser, OmegaConf.select
    "multiprocessing", "concurrent.futures.process", "antlr4.LL1Analyzer", "omegaconf._impl", "encodings.unicode_escape",
    # what the entrypoints import inside functions: the cards, the comparison, pandas' writers
    "audit.app.sweep_end", "audit.epistemic.cards", "audit.epistemic.conditions", "audit.compare.build", "pandas.core.methods.to_dict",
    "pandas.io.formats.csvs", "pandas.io.formats.string")
"""What every launch imported anew after the fork until they were listed here (the modules its run added to
``sys.modules``, grouped by what imports them, in an audit that fails its first call, an audit with a judge,
a sweep and an epistemic run): with litellm's first call (:data:`audit.app.warm_imports.FIRST_CALL`, which
the server imports first, as a sweep's does), 120-220 modules and ~0.45 of a warm launch's ~0.9 CPU-s, paid
again by every launch of the suite. Imported in the server, a child finds them loaded."""
ALSO_IMPORTED = ("hydra", "hydra.utils", "hydra.compose", "hydra._internal.utils", "hydra._internal.config_loader_impl",
                 "hydra._internal.logging_config", "hydra.core.override_parser.overrides_parser",
                 "hydra.experimental.callback", "rdflib.plugins.stores.memory", "rdflib.plugins.parsers.notation3",
                 "pyshacl", "pandas", "audit.app.hydra_app", "audit.jobs.sweep", "audit.export.writing",
                 "audit.epistemic.pipeline", "audit.epistemic.report", "audit.compare.report", "audit.compare.tables",
                 "audit.rescore.rescore", "audit.judge_check.check", "audit.judge_check.report", "audit.runs.index",
                 "audit.benchmark.run", *FIRST_RUN_IMPORTS)
"""What the other entrypoints import beyond the sweep jobs' list (measured with ``python -X importtime``:
Hydra's parser, the epistemic pipeline's rdflib and pyshacl, the reports' pandas). Never an entrypoint's
own ``__main__`` or ``audit.doctor``: ``python -m`` runs those as ``__main__``, not as themselves."""
OTHER_REPORTS = ("audit.compare.report", "audit.judge_check.report", "audit.runs.index")
"""The pages the other entrypoints write, compiled in the server as the sweep jobs' are
(:data:`audit.app.warm_imports.JOB_REPORTS`): a child renders them without compiling them."""
RESET_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGCHLD", "SIGTSTP",
                 "SIGTTIN", "SIGTTOU")
"""Signals whose disposition the child takes from this process (ignored stays ignored, as across exec)."""
MESSAGE_BYTES = 1 << 22


# -- the client: subprocess's API for ``python -m`` ----------------------------------------------

class Popen:
    """``subprocess.Popen([sys.executable, "-m", module, *args], ...)`` for a forked warm child.

    Takes the keyword arguments the tests use (``stdin``, ``stdout``, ``stderr``, ``cwd``, ``env``,
    ``text``, ``encoding``, ``errors``, ``preexec_fn``, ``start_new_session``, ``process_group``)
    and offers ``pid``, ``returncode``, ``poll``, ``wait``, ``communicate``, ``send_signal``,
    ``terminate``, ``kill`` and the ``with`` block, with subprocess's meaning. ``preexec_fn`` must
    pickle (a module-level function, or a ``functools.partial`` of one): it runs in the child.
    ``teardown``: end with the interpreter's whole teardown, for a test that reads what a teardown
    prints (see :func:`_end_as_python_ends`); without it the child skips only the teardown.
    """

    def __init__(self, args: Sequence[str | os.PathLike[str]], *, stdin: Any = None, stdout: Any = None,
                 stderr: Any = None, cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
                 text: bool = False, encoding: str | None = None, errors: str | None = None,
                 preexec_fn: Callable[[], object] | None = None, start_new_session: bool = False,
                 process_group: int | None = None, teardown: bool = False) -> None:
        self.args = list(args)
        module, argv = _module_args(self.args)
        self.returncode: int | None = None
        self.text = bool(text or encoding or errors)
        self.encoding = encoding or locale.getpreferredencoding(False)
        self.errors = errors or "strict"
        env = dict(os.environ if env is None else env)
        server = _server(env)
        server.check(env)
        child_fds, self._parent_ends = [], []
        self.stdin = self.stdout = self.stderr = None
        closing: list[int] = []
        for number, spec in enumerate((stdin, stdout, stderr)):
            if spec == STDOUT and number == 2:
                child_fds.append(child_fds[1])
                continue
            fd, parent, to_close = _child_end(number, spec)
            child_fds.append(fd)
            closing += to_close
            if parent is not None:
                setattr(self, ("stdin", "stdout", "stderr")[number], self._wrap(parent, writing=number == 0))
        self._status, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        launch = {"module": module, "argv": argv, "cwd": os.fspath(cwd or os.getcwd()), "env": env,
                  "new_session": start_new_session, "process_group": process_group, "teardown": teardown,
                  "ignored": [name for name in RESET_SIGNALS if signal.getsignal(getattr(signal, name)) == signal.SIG_IGN],
                  "preexec": pickle.dumps(preexec_fn).hex() if preexec_fn is not None else None}
        try:
            server.send(json.dumps(launch).encode(), [*child_fds, theirs.fileno()])
        finally:
            theirs.close()
            for fd in closing:
                os.close(fd)
        reply = self._status.recv(64)
        if not reply:
            raise RuntimeError(f"the warm server did not start {module} (it died; its stderr is in the test's output)")
        self.pid = int(reply)
        self._readers: dict[str, threading.Thread] = {}
        self._read: dict[str, list[bytes]] = {"stdout": [], "stderr": []}

    def _wrap(self, fd: int, *, writing: bool) -> IO[Any]:
        raw = open(fd, "wb" if writing else "rb")
        if not self.text:
            return raw
        return io.TextIOWrapper(raw, encoding=self.encoding, errors=self.errors, write_through=writing)

    # - the child's exit, read from its supervisor in the server -
    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                reply = self._status.recv(64, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return None
            self._ended(reply)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._status.settimeout(timeout)
            try:
                reply = self._status.recv(64)
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
            finally:
                self._status.settimeout(None)
            self._ended(reply)
        assert self.returncode is not None
        return self.returncode

    def _ended(self, reply: bytes) -> None:
        if not reply:
            raise RuntimeError(f"the warm server lost track of pid {self.pid}")
        code, cpu_s = reply.split()
        self.returncode = int(code)
        _count_cpu(float(cpu_s))
        self._status.close()

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    # - output -
    def communicate(self, input: str | bytes | None = None, timeout: float | None = None) -> tuple[Any, Any]:
        """Write ``input``, read both pipes to their end and wait, as subprocess does (threads, so a
        full stderr pipe cannot block a child writing stdout); a timeout leaves the child running and
        the readers reading, so a second call carries on."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if self.stdin is not None and not self._readers:
            if input:
                try:
                    self.stdin.write(input)
                except BrokenPipeError:
                    pass
            self.stdin.close()
        for name in ("stdout", "stderr"):
            stream = getattr(self, name)
            if stream is not None and name not in self._readers and not stream.closed:
                self._readers[name] = threading.Thread(target=self._drain, args=(name, stream.fileno()), daemon=True)
                self._readers[name].start()
        for reader in self._readers.values():
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self._output("stdout"), self._output("stderr")

    def _drain(self, name: str, fd: int) -> None:
        while chunk := os.read(fd, 1 << 16):
            self._read[name].append(chunk)

    def _output(self, name: str) -> Any:
        stream = getattr(self, name)
        if stream is None:
            return None
        stream.close()
        data = b"".join(self._read[name])
        if not self.text:
            return data
        return data.decode(self.encoding, self.errors).replace("\r\n", "\n").replace("\r", "\n")

    def __enter__(self) -> Popen:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdout, self.stderr, self.stdin):
            if stream is not None:
                stream.close()
        self.wait()


_warm_cpu_s = 0.0
_warm_cpu_lock = threading.Lock()


def _count_cpu(seconds: float) -> None:
    global _warm_cpu_s
    with _warm_cpu_lock:
        _warm_cpu_s += seconds


def warm_cpu_s() -> float:
    """CPU seconds of the warm children that have ended so far in this process (the fork server's
    own are not among them). A cold child's count in ``RUSAGE_CHILDREN`` once waited for; a warm one
    is a grandchild, which reaches this process's count only when the server ends, so its
    supervisor reports it (``tests/cpu_time.py`` reads it per test)."""
    return _warm_cpu_s


def server_cpu_s() -> float:
    """The fork server's own CPU seconds so far (its imports), 0 when none was started."""
    if _started is None or _started.process.poll() is not None:
        return 0.0
    return process_cpu_s(_started.process.pid) or 0.0


def server_pid() -> int | None:
    """The fork server's pid while it runs (``tests/cpu_time.py`` counts its CPU apart from the tests')."""
    return None if _started is None or _started.process.poll() is not None else _started.process.pid


def process_cpu_s(pid: int) -> float | None:
    """A running process's CPU seconds so far (user and system, from ``/proc``), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def run(args: Sequence[str | os.PathLike[str]], *, input: str | bytes | None = None, capture_output: bool = False,
        timeout: float | None = None, check: bool = False, cold: bool = False,
        **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` for ``[sys.executable, "-m", module, ...]``: warm, or cold when ``cold`` (or
    ``AUDIT_TEST_COLD=1``). A timeout kills the child and raises, as subprocess.run does."""
    if _cold(args, cold):
        kwargs.pop("teardown", None)  # a fresh interpreter always tears itself down
        return subprocess.run(args, input=input, capture_output=capture_output, timeout=timeout, check=check, **kwargs)
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = PIPE
    if input is not None:
        kwargs["stdin"] = PIPE
    with Popen(args, **kwargs) as process:
        try:
            out, err = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    if check:
        done.check_returncode()
    return done


Process = Popen | subprocess.Popen
"""What :func:`start` returns: the two answer the same calls."""


def start(args: Sequence[str | os.PathLike[str]], *, cold: bool = False, **kwargs: Any) -> Process:
    """``subprocess.Popen`` for ``[sys.executable, "-m", module, ...]``: a warm :class:`Popen`, or a
    real :class:`subprocess.Popen` when ``cold`` (or ``AUDIT_TEST_COLD=1``)."""
    if _cold(args, cold):
        kwargs.pop("teardown", None)  # a fresh interpreter always tears itself down
        return subprocess.Popen(args, **kwargs)
    return Popen(args, **kwargs)


def _cold(args: Sequence[str | os.PathLike[str]], cold: bool) -> bool:
    """Whether this launch runs cold; noted in ``$AUDIT_TEST_LAUNCH_LOG`` when set (the bench counts them)."""
    cold = cold or os.environ.get(COLD_ENV) == "1"
    if log := os.environ.get(LAUNCH_LOG_ENV):
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"{'cold' if cold else 'warm'} {os.fspath(args[2]) if len(args) > 2 else args}\n")
    return cold


def _module_args(args: list[str | os.PathLike[str]]) -> tuple[str, list[str]]:
    if len(args) < 3 or args[0] != sys.executable or args[1] != "-m":
        raise ValueError(f"only [sys.executable, '-m', module, ...] starts warm, not {args[:3]}; use subprocess")
    return str(args[2]), [os.fspath(a) for a in args[3:]]


def _child_end(number: int, spec: Any) -> tuple[int, int | None, list[int]]:
    """(the fd the child gets, this side's end of a new pipe or None, fds to close once sent)."""
    if spec is None:
        try:
            os.fstat(number)
            return number, None, []
        except OSError:
            spec = DEVNULL
    if spec == DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        return fd, None, [fd]
    if spec == PIPE:
        read, write = os.pipe()
        return (read, write, [read]) if number == 0 else (write, read, [write])
    if isinstance(spec, int):
        return spec, None, []
    return spec.fileno(), None, []


class _Server:
    """This process's fork server: started on first use, ended when this process exits."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env  # the first launch's (a caller in a pool thread must not read os.environ)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen([sys.executable, __file__, str(theirs.fileno())], pass_fds=[theirs.fileno()],
                                        cwd=ROOT, env=self.env, stdin=DEVNULL, stdout=DEVNULL)
        theirs.close()
        self.socket, self.lock = ours, threading.Lock()
        ready = ours.recv(MESSAGE_BYTES)
        if not ready:
            raise RuntimeError(f"the warm server failed to start (exit {self.process.wait()}); see its stderr above")
        imports = json.loads(ready)
        self.read_at_import: dict[str, str | None] = imports["read"]
        self.added_at_import: dict[str, str] = imports["added"]
        atexit.register(self.close)

    def close(self) -> None:
        """The server ends when its socket does; wait for it, so its CPU time counts as this process's."""
        self.socket.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def check(self, env: Mapping[str, str]) -> None:
        """Refuse what a forked child would get wrong: an environment that differs from the server's
        in a variable the interpreter or an import read before the fork (a variable the imports
        set themselves only when unset may also be unset, or set to that value)."""
        differ = sorted(k for k in set(self.env) | set(env) if k.startswith("PYTHON") and self.env.get(k) != env.get(k))
        for key, value in sorted(self.read_at_import.items()):
            allowed = (None, self.added_at_import[key]) if key in self.added_at_import else (value,)
            if not key.startswith("PYTHON") and env.get(key) not in allowed:
                differ.append(key)
        if differ:
            raise ValueError(f"{', '.join(differ)} differ(s) from the warm server's, which read them while importing: "
                             "start this one cold (cold=True)")

    def send(self, message: bytes, fds: list[int]) -> None:
        with self.lock:
            socket.send_fds(self.socket, [message], fds)


_started: _Server | None = None
_starting = threading.Lock()


def _server(env: dict[str, str]) -> _Server:
    global _started
    with _starting:
        if _started is None or _started.process.poll() is not None:
            _started = _Server(env)
        return _started


# -- the server (this file run as a script) ------------------------------------------------------

class _RecordingReads:
    """While the server imports: every environment variable read through ``os.environ``, with the
    value it had (None when unset), so the client can tell which launches a fork would get wrong."""

    def __init__(self) -> None:
        self.read: dict[str, str | None] = {}
        self.original = type(os.environ).__getitem__

    def __enter__(self) -> _RecordingReads:
        record, original = self.read, self.original

        def getitem(environ: Any, key: str) -> str:
            try:
                value = original(environ, key)
            except KeyError:
                record.setdefault(key, None)
                raise
            record.setdefault(key, value)
            return value

        type(os.environ).__getitem__ = getitem  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        type(os.environ).__getitem__ = self.original  # type: ignore[method-assign]


def _warm(control: socket.socket) -> dict[str, str]:
    """Import what the entrypoints import; tell the client which variables that read. Returns the
    variables the imports added to the environment (the children get them as defaults, as a fresh
    interpreter would set them when it imports the same modules)."""
    import importlib

    before = dict(os.environ)
    with _RecordingReads() as reads:
        for name in ("audit.app.warm_imports", *ALSO_IMPORTED):
            importlib.import_module(name)
        from audit.pages import compile_all
        for name in OTHER_REPORTS:
            compile_all(importlib.import_module(name).page_environment())
    added = {k: v for k, v in os.environ.items() if k not in before}
    gc.collect()
    gc.freeze()  # the imported objects are never collected: a child's collections skip them (no copy-on-write)
    control.send(json.dumps({"read": reads.read, "added": added}).encode())
    return added


def _serve(control: socket.socket) -> dict[str, Any] | None:
    """Fork a supervisor per launch; return (in the child only) the launch to become. None: client gone."""
    while True:
        _reap(os.WNOHANG)
        message, fds, _, _ = socket.recv_fds(control, MESSAGE_BYTES, 8)
        if not message:
            _reap(0)  # the client has ended: its children's CPU time counts as its own
            return None
        if os.fork():
            for fd in fds:
                os.close(fd)
            continue
        control.close()
        launch = json.loads(message)
        *std, status_fd = fds
        status = socket.socket(fileno=status_fd)
        child = os.fork()
        if child == 0:
            status.detach()
            os.close(status_fd)
            launch["fds"] = std
            return launch
        for fd in set(std):
            os.close(fd)
        status.send(str(child).encode())
        _, wait_status, usage = os.wait4(child, 0)
        try:  # the exit code, and the CPU seconds of the child and the processes it waited for
            status.send(f"{os.waitstatus_to_exitcode(wait_status)} {usage.ru_utime + usage.ru_stime:.3f}".encode())
        finally:
            os._exit(0)


def _reap(options: int) -> None:
    """Collect the finished supervisors (``os.WNOHANG``), or wait for all of them (0)."""
    while True:
        try:
            if os.waitpid(-1, options)[0] == 0:
                return
        except ChildProcessError:
            return


def _become(launch: dict[str, Any], defaults: dict[str, str]) -> None:
    """In the forked child: turn into ``python -m <module> <argv>`` started by the client, then run it."""
    import runpy
    import tempfile

    if launch["new_session"]:
        os.setsid()
    elif launch["process_group"] is not None:
        os.setpgid(0, launch["process_group"])
    for number, fd in enumerate(launch["fds"]):
        os.dup2(fd, number)
    for fd in set(launch["fds"]) - {0, 1, 2}:
        os.close(fd)
    os.chdir(launch["cwd"])
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for name in RESET_SIGNALS:  # exec keeps ignored signals ignored and resets handled ones
        sig = getattr(signal, name)
        signal.signal(sig, signal.SIG_IGN if name in launch["ignored"] else signal.SIG_DFL)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # subprocess's restore_signals
        signal.signal(sig, signal.SIG_DFL)
    if launch["preexec"] is not None:
        sys.path.insert(0, str(ROOT))
        preexec = pickle.loads(bytes.fromhex(launch["preexec"]))
        del sys.path[0]
        preexec()
    os.environ.clear()
    os.environ.update({**defaults, **launch["env"]})
    tempfile.tempdir = None  # read from TMPDIR on first use: this child's, not the server's
    # what the interpreter does at start-up
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)
    if signal.getsignal(signal.SIGINT) == signal.SIG_DFL:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stdout.reconfigure(line_buffering=os.isatty(1))  # type: ignore[union-attr]  # stderr: always by line
    sys.path[0] = os.getcwd()  # python -m puts the working directory first
    sys.argv = ["-m", *launch["argv"]]
    runpy.run_module(launch["module"], run_name="__main__", alter_sys=True)


def _end_as_python_ends(launch: dict[str, Any], defaults: dict[str, str]) -> NoReturn:
    """Become the launch and run it, then end as ``python -m`` ends, short of tearing the interpreter down.

    Why: the teardown (clearing every module, ~4,000 here) writes the reference count of every object
    the child shares with this server, so each page it touches is copied first. Measured with this
    server's imports: a forked child that exits normally spends 0.26-0.30 CPU-s doing so (42,000 page
    faults, 165 MB copied), against 0.015 s through ``os._exit``; that was about 40% of a warm start that
    fails on bad input (~0.6 CPU-s), and ~600 warm starts a suite run. A fresh ``python -m`` has nothing
    shared to copy, so the skipped work is the fork's cost, not the program's.

    What a user sees of the end is kept, in CPython's order (``Py_RunMain``, ``Py_FinalizeEx``): an uncaught
    exception's traceback and exit 1, ``SystemExit``'s code (None 0, a number itself, anything else
    printed and 1), non-daemon threads joined, ``atexit`` handlers run (logging's flush among them), the
    garbage collected (a task or coroutine left pending in garbage prints its warning), stdout and stderr
    flushed (120 if that fails), and death by SIGINT after an uncaught KeyboardInterrupt. Left out: the
    destructors the module teardown itself would run (an object only a module still holds). A test that
    reads what those print starts its child with ``teardown=True``; every cold start tears down as well.
    """
    code, interrupted = 0, False
    try:
        _become(launch, defaults)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException as exc:  # noqa: BLE001 - whatever ends the program, python prints it and exits 1
        sys.excepthook(type(exc), exc, exc.__traceback__)
        interrupted, code = isinstance(exc, KeyboardInterrupt), 1
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter calls first at its end
    except BaseException as exc:  # noqa: BLE001 - reported as the interpreter's unraisable hook does; the end goes on
        sys.stderr.write(f"Exception ignored in: {threading!r}\nTraceback (most recent call last):\n"
                         f"{''.join(traceback.format_tb(exc.__traceback__))}{type(exc).__qualname__}: {exc}\n")
    atexit._run_exitfuncs()
    gc.collect()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - python's exit status when the standard streams cannot be flushed
        code = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the children; the server waits for EOF
    _control = socket.socket(fileno=int(sys.argv[1]))
    _defaults = _warm(_control)
    _launch = _serve(_control)
    if _launch is not None and _launch["teardown"]:
        _become(_launch, _defaults)  # and the interpreter ends here, torn down as after any script
    elif _launch is not None:
        _end_as_python_ends(_launch, _defaults)
