"""``python -m audit.benchmark``: the Hydra entrypoint, kept thin (the work is in
:func:`audit.benchmark.run.run`, imported inside the job so ``--help`` and ``--cfg`` stay fast).
Failures follow :mod:`audit.jobs.sweep`: one line and exit 1 for a single run; in a ``-m`` sweep
every job runs and each leaves a ``summary.json``.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from audit.export.writing import with_export
from audit.app.hydra_app import run_app
from audit.jobs.sweep import exit_if_any_failed, run_job
from audit.paths import CONF_DIR


@hydra.main(config_path=CONF_DIR, config_name="benchmark", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from audit.benchmark.run import run  # lazy: --help answers before it loads

    run_job(cfg, with_export(cfg, run), "benchmark")


if __name__ == "__main__":
    run_app(main, "benchmark")
    exit_if_any_failed()
