"""``hydra/launcher=warm``: the joblib launcher's jobs, each in a process forked from a warm server.

Hydra's joblib launcher runs every job in a loky worker, a fresh interpreter that imports the heavy
libraries (litellm ~3.5 CPU-s) itself: a 12-job sweep with ``n_jobs=12`` paid the import 12 times,
which on 2 cores is most of the sweep. This launcher keeps the joblib launcher's settings and its
per-job code (Hydra's ``execute_job``: the job's config, its own sweep subdir) and changes only
where jobs run: :mod:`audit.app.warm_imports` is imported once, and each worker process is forked
with those modules already loaded (:func:`job_context` says from where). Jobs still run in processes
of their own (a job's state and signals; a Ctrl-C of the sweep is passed to each running job once);
``n_jobs`` workers run at once (``-1``: one per job, since jobs wait on the network, not on a core).
Linux and macOS only (fork). It is the default launcher of every experiment's ``-m`` sweep: jobs at
once still pay for a request they share once (:mod:`audit.llm.single_flight`).

It lives in the ``hydra_plugins`` namespace because Hydra instantiates launchers from there only;
Hydra imports this module at every start, so the joblib launcher's code loads in :meth:`launch`.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from multiprocessing.context import BaseContext
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, setup_globals
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
from audit.counted import counted
from audit.stop_signals import STOPS

log = logging.getLogger(__name__)
PRELOAD = ["audit.app.warm_imports"]


class WarmLauncher(JoblibLauncher):
    """Hydra's joblib launcher with a warm fork server in place of loky (same config keys)."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import cloudpickle  # joblib's own dependency (loky pickles jobs with it)

        setup_globals()
        assert self.config is not None and self.task_function is not None and self.hydra_context is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        n_jobs = int(self.joblib.get("n_jobs") or -1)
        workers = len(job_overrides) if n_jobs < 1 else min(n_jobs, len(job_overrides))
        log.info(f"warm launcher: {counted(len(job_overrides), 'job')}, {workers} at once, sweep output dir: {sweep_dir}")
        for idx, overrides in enumerate(job_overrides):
            log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
        context = job_context()
        state = Singleton.get_state()
        # cloudpickle, as loky does: the task function lives in ``__main__`` (python -m audit)
        jobs = [cloudpickle.dumps((initial_job_idx + idx, overrides, self.hydra_context, self.config,
                                   self.task_function, state)) for idx, overrides in enumerate(job_overrides)]
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker) as pool:
            running = [pool.submit(_run, job) for job in jobs]
            try:
                return [cloudpickle.loads(job.result()) for job in running]
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP of the sweep (audit.jobs.interrupts)
                _interrupt(pool, running)
                raise SystemExit(1) from None


def job_context() -> BaseContext:
    """Where the workers are forked from: this process, once it has imported :data:`PRELOAD`, while it runs
    one thread; else a ``forkserver`` that imports them.

    Forking this process costs the imports once, as the fork server did, without a second interpreter; a
    process that has them already (a sweep started from a warm process: the test suite's fork server, a
    notebook) pays nothing, where a fork server imported them again (~4.5 CPU-s a sweep). A fork copies
    only the calling thread, so a lock another thread held would stay held in every job: with a second
    thread running the fork server is the safe choice. A worker forked from here starts as one forked from
    the server would (:func:`_start_worker`)."""
    if threading.active_count() == 1:
        for name in PRELOAD:
            importlib.import_module(name)
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _interrupt(pool: ProcessPoolExecutor, running: list[Future[bytes]]) -> None:
    """Stop the sweep as one Ctrl-C stops a basic launcher's: no further job starts, and each running job
    gets the interrupt once, ends ``cancelled`` with its summary and its line, and is waited for.

    Jobs run in process groups of their own (:func:`_start_worker`), so a terminal's
    Ctrl-C or hang-up reaches this process only and each job hears it from here, once: a second
    interrupt landing in a job's clean-up could cut its summary short. A ``kill`` of this process
    alone (a scheduler, a script) reaches the jobs the same way instead of leaving them running."""
    for job in running:
        job.cancel()  # the jobs not started yet
    for process in list(pool._processes.values()):  # the executor's workers; it has no public accessor
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGINT)
    wait(running)


def _start_worker() -> None:
    """A worker in a process group of its own (see :func:`_interrupt`), deaf to Ctrl-C while it runs no
    job: an interrupt sent to a worker whose job had ended printed the executor's traceback.

    SIGTERM and SIGHUP get their defaults back, as in a process the fork server starts: forked from the
    sweep's process, the worker would keep its handlers, which turn them into a Ctrl-C of the sweep
    (:mod:`audit.jobs.interrupts`); an ignored one (``nohup``) stays ignored. A job sets its own."""
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stop in set(STOPS) - {signal.SIGINT}:
        if signal.getsignal(stop) is not signal.SIG_IGN:
            signal.signal(stop, signal.SIG_DFL)


def _run(job: bytes) -> bytes:
    """One job in a worker: Hydra's own ``execute_job``, its result pickled back the way it came;
    Ctrl-C interrupts it as it would a job of the basic launcher (``asyncio.run`` handles it)."""
    from hydra_plugins.hydra_joblib_launcher._core import execute_job
    import cloudpickle

    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return cloudpickle.dumps(execute_job(*cloudpickle.loads(job)))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

