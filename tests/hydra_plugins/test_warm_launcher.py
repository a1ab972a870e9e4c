"""Where the warm launcher forks its job workers from (``job_context``), and how a worker starts."""

from __future__ import annotations

import subprocess
import sys
import threading

from hydra_plugins.audit_warm_launcher import warm_launcher


def test_a_process_running_one_thread_forks_the_workers_itself_with_the_job_modules_loaded() -> None:
    """A fork of this process, once it has imported what the jobs need, instead of a fork server that
    would import them a second time (in a warm process: ~4.5 CPU-s a sweep for nothing)."""
    context = warm_launcher.job_context()
    assert context.get_start_method() == "fork"
    assert all(name in sys.modules for name in warm_launcher.PRELOAD)


def test_a_second_thread_running_sends_the_workers_to_a_fork_server() -> None:
    """A fork copies the calling thread only: a lock the other thread held would stay held in each job."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="holder")
    other.start()
    try:
        assert warm_launcher.job_context().get_start_method() == "forkserver"
    finally:
        stop.set()
        other.join()


WORKER_START = """
import signal, sys
from hydra_plugins.audit_warm_launcher.warm_launcher import _start_worker
signal.signal(signal.SIGTERM, lambda *_: None)  # the sweep's handlers, as a fork inherits them
signal.signal(signal.SIGHUP, signal.SIG_IGN)  # started under nohup
_start_worker()
name = lambda h: getattr(h, "name", repr(h))
print(name(signal.getsignal(signal.SIGINT)), name(signal.getsignal(signal.SIGTERM)), name(signal.getsignal(signal.SIGHUP)))
"""


def test_a_forked_worker_drops_the_sweep_s_signal_handlers_and_keeps_what_was_ignored() -> None:
    """As a worker of the fork server would start: Ctrl-C ignored while no job runs, SIGTERM back to its
    default (the sweep's handler would turn it into an interrupt of a worker running no job), SIGHUP
    still ignored under ``nohup``."""
    out = subprocess.run([sys.executable, "-c", WORKER_START], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["SIG_IGN", "SIG_DFL", "SIG_IGN"]
