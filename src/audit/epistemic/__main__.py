"""``python -m audit.epistemic``: the Hydra entrypoint, kept thin (the work is in
:func:`audit.epistemic.pipeline.run`, which tests call directly).

Failures follow :mod:`audit.jobs.sweep`: one line and exit 1 for a single run; in a ``-m``
sweep each job's run directory goes under its Hydra job directory, every job runs, and
each leaves a ``summary.json``.
"""

from __future__ import annotations

from audit.jobs.interrupts import from_the_start

if __name__ == "__main__":  # run as the program, not imported (a test, the docs build)
    from_the_start()  # before the imports below: a signal while they load ends in one line too

import hydra  # noqa: E402 - after from_the_start()
from omegaconf import DictConfig  # noqa: E402 - after from_the_start()

from audit.export.writing import with_export  # noqa: E402 - after from_the_start()
from audit.app.hydra_app import run_app  # noqa: E402 - after from_the_start()
from audit.epistemic.pipeline import run  # noqa: E402 - after from_the_start()
from audit.paths import CONF_DIR  # noqa: E402 - after from_the_start()
from audit.jobs.sweep import exit_if_any_failed, run_job, sweep_job_dir  # noqa: E402 - after from_the_start()


@hydra.main(config_path=CONF_DIR, config_name="epistemic", version_base="1.3")
def main(cfg: DictConfig) -> None:
    run_job(cfg, with_export(cfg, lambda job_cfg: run(job_cfg, base_dir=sweep_job_dir())), "epistemic")


if __name__ == "__main__":
    run_app(main, "epistemic")
    exit_if_any_failed()
