"""``python -m audit.epistemic``: the Hydra entrypoint, kept thin (the work is in
:func:`audit.epistemic.pipeline.run`, which tests call directly).

Failures follow :mod:`audit.jobs.sweep`: one line and exit 1 for a single run; in a ``-m``
sweep each job's run directory goes under its Hydra job directory, every job runs, and
each leaves a ``summary.json``.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from audit.export.writing import with_export
from audit.app.hydra_app import run_app
from audit.epistemic.pipeline import run
from audit.paths import CONF_DIR
from audit.jobs.sweep import exit_if_any_failed, run_job, sweep_job_dir


@hydra.main(config_path=CONF_DIR, config_name="epistemic", version_base="1.3")
def main(cfg: DictConfig) -> None:
    run_job(cfg, with_export(cfg, lambda job_cfg: run(job_cfg, base_dir=sweep_job_dir())), "epistemic")


if __name__ == "__main__":
    run_app(main, "epistemic")
    exit_if_any_failed()
