"""``hydra/launcher=warm``: the joblib launcher's jobs, each in a process forked from a warm server.

Hydra's joblib launcher runs every job in a loky worker, a fresh interpreter that imports the heavy
libraries (litellm ~3.5 CPU-s) itself: a 12-job sweep with ``n_jobs=12`` paid the import 12 times,
which on 2 cores is most of the sweep. This launcher keeps the joblib launcher's settings and its
per-job code (Hydra's ``execute_job``: the job's config, its own sweep subdir) and changes only
where jobs run: a ``forkserver`` process imports :mod:`audit.app.warm_imports` once, and each
worker process is forked from it with those modules already loaded. Jobs still run in processes
of their own (a job's state, signals and Ctrl-C as under joblib); ``n_jobs`` workers run at once
(``-1``: one per job, since jobs wait on the network, not on a core). Linux and macOS only (fork).

It lives in the ``hydra_plugins`` namespace because Hydra instantiates launchers from there only;
Hydra imports this module at every start, so the joblib launcher's code loads in :meth:`launch`.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, setup_globals
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
from audit.counted import counted

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
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        state = Singleton.get_state()
        # cloudpickle, as loky does: the task function lives in ``__main__`` (python -m audit)
        jobs = [cloudpickle.dumps((initial_job_idx + idx, overrides, self.hydra_context, self.config,
                                   self.task_function, state)) for idx, overrides in enumerate(job_overrides)]
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            return [cloudpickle.loads(done) for done in pool.map(_run, jobs)]


def _run(job: bytes) -> bytes:
    """One job in a worker: Hydra's own ``execute_job``, its result pickled back the way it came."""
    from hydra_plugins.hydra_joblib_launcher._core import execute_job
    import cloudpickle

    return cloudpickle.dumps(execute_job(*cloudpickle.loads(job)))

