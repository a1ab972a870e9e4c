"""The warm launcher of the tests (``tests/entrypoints.py``) against a fresh interpreter, side by side:
a child forked from the warm server must look, from inside and outside, like ``python -m``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import entrypoints
from tests.signals import default_sigint, ignore_sigint

PROBE = '''
import json, os, signal, sys, threading
what = sys.argv[1]
if what == "report":
    print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "name": __name__,
                      "env": os.environ.get("PROBE"), "stdin": sys.stdin.read(),
                      "sigint": repr(signal.getsignal(signal.SIGINT)), "sigterm": repr(signal.getsignal(signal.SIGTERM)),
                      "sigpipe": repr(signal.getsignal(signal.SIGPIPE)), "pgid_is_pid": os.getpgid(0) == os.getpid(),
                      "stdout_tty": sys.stdout.isatty(), "line_buffered": sys.stdout.line_buffering}))
    print("to stderr", file=sys.stderr)
elif what == "exit":
    sys.exit(int(sys.argv[2]))
elif what == "message":
    sys.exit("one line")
elif what == "raise":
    raise ValueError("boom")
elif what == "interrupt":
    raise KeyboardInterrupt
elif what == "atexit":
    import atexit
    atexit.register(lambda: print("atexit ran", flush=True))
    threading.Thread(target=lambda: (__import__("time").sleep(0.3), print("thread joined", flush=True))).start()
elif what == "interrupted_at_exit":  # Ctrl-C while the interpreter joins a thread at its end
    def late():
        __import__("time").sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)
        __import__("time").sleep(0.5)
        print("thread done", flush=True)
    threading.Thread(target=late).start()
elif what == "buffered":
    sys.stdout.write("in the buffer, never flushed by the program")
elif what == "garbage":  # a coroutine never awaited, in a cycle only the collector frees
    async def never():
        pass
    cycle = [never()]
    cycle.append(cycle)
    del cycle
elif what == "held":  # an object only an imported module holds: destroyed by the interpreter's teardown alone
    class Held:
        def __del__(self):
            print("destroyed at teardown", flush=True)
    json.held = Held()
elif what == "wait":
    try:
        print("waiting", flush=True)
        signal.pause()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise
'''


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    (tmp_path / "probe.py").write_text(PROBE)
    return tmp_path


def both(cwd: Path, *args: str, **kwargs) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    argv = [sys.executable, "-m", "probe", *args]
    kwargs = {"cwd": cwd, "capture_output": True, "text": True, "timeout": 120, **kwargs}
    return entrypoints.run(argv, **kwargs), entrypoints.run(argv, cold=True, **kwargs)


def test_the_child_sees_what_python_m_would(probe, monkeypatch):
    env = {**os.environ, "PROBE": "given"}
    warm, cold = both(probe, "report", env=env, input="from stdin")
    assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr) == (0, "to stderr\n")
    assert json.loads(warm.stdout) == json.loads(cold.stdout)
    assert json.loads(warm.stdout)["env"] == "given" and json.loads(warm.stdout)["stdin"] == "from stdin"
    monkeypatch.setenv("PROBE", "the parent's")  # the environment is replaced, not added to
    assert json.loads(both(probe, "report", env={k: v for k, v in env.items() if k != "PROBE"})[0].stdout)["env"] is None


@pytest.mark.parametrize("args", [("exit", "3"), ("exit", "0"), ("exit", "-1"), ("message",), ("raise",),
                                  ("interrupt",), ("atexit",), ("interrupted_at_exit",), ("buffered",), ("garbage",)])
def test_the_child_ends_as_python_m_would(probe, args):
    warm, cold = both(probe, *args)
    assert warm.returncode == cold.returncode
    assert warm.stdout == cold.stdout
    # a traceback's first frames differ (the warm server's runpy frames); its last lines do not
    assert warm.stderr.splitlines()[-1:] == cold.stderr.splitlines()[-1:]
    assert ("Traceback" in warm.stderr) == ("Traceback" in cold.stderr)


def test_only_a_child_asked_to_tear_down_runs_what_the_teardown_alone_runs(probe):
    """The one difference left on purpose (``tests/entrypoints.py``, ``_end_as_python_ends``): an object
    only an imported module holds is destroyed by a fresh interpreter's teardown, and by a warm child's only when
    asked (``teardown=True``), as the tests that read such output do."""
    warm, cold = both(probe, "held")
    torn_down = entrypoints.run([sys.executable, "-m", "probe", "held"], cwd=probe, capture_output=True, text=True,
                                timeout=120, teardown=True)
    assert cold.stdout == torn_down.stdout == "destroyed at teardown\n"
    assert warm.stdout == "" and warm.returncode == cold.returncode == torn_down.returncode == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_signal_reaches_the_child_and_its_exit_says_so(probe, sig):
    ends = []
    for cold in (False, True):
        # default SIGINT handling for the child even when the suite runs with SIGINT ignored (`cmd &`)
        with entrypoints.start([sys.executable, "-m", "probe", "wait"], cold=cold, cwd=probe, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_sigint) as child:
            try:
                assert child.stdout.readline() == "waiting\n"
                child.send_signal(sig)
                out, err = child.communicate(timeout=60)
            finally:  # a child the signal did not end must not hang the suite in the block's wait
                if child.poll() is None:
                    child.kill()
            ends.append((child.returncode, out, err.splitlines()[-1:]))
    assert ends[0] == ends[1]
    assert ends[0][0] == -sig


def test_sigint_ignored_at_start_stays_ignored_and_a_new_session_is_its_own_group(probe):
    warm, cold = both(probe, "report", preexec_fn=ignore_sigint, start_new_session=True)
    assert json.loads(warm.stdout) == json.loads(cold.stdout)
    assert json.loads(warm.stdout)["sigint"] == repr(signal.SIG_IGN) and json.loads(warm.stdout)["pgid_is_pid"]


def test_a_timeout_kills_the_child_and_raises(probe):
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        entrypoints.run([sys.executable, "-m", "probe", "wait"], cwd=probe, capture_output=True, timeout=2)
    assert time.monotonic() - started < 60


def test_a_variable_read_while_the_server_imported_is_refused_rather_than_run_wrong(probe):
    with pytest.raises(ValueError, match="LITELLM_LOG"):
        entrypoints.run([sys.executable, "-m", "probe", "exit", "0"], cwd=probe, env={**os.environ, "LITELLM_LOG": "DEBUG"})


def test_only_python_m_starts_warm(probe):
    with pytest.raises(ValueError, match="only"):
        entrypoints.run([sys.executable, "-c", "pass"], cwd=probe)
