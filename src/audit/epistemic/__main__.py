"""``python -m audit.epistemic``: the Hydra entrypoint, kept thin (the work is in
:func:`audit.epistemic.pipeline.run`, which tests call directly).

In a ``-m`` sweep each job's run directory goes under Hydra's job directory, and a job
that fails still leaves a ``summary.json`` with ``status: error`` there, because Hydra
skips ``on_multirun_end`` when a job fails and the aggregate step needs every job's status.
"""

from __future__ import annotations

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from audit.epistemic.pipeline import run, write_summary
from audit.errors import UserError, exit_on_user_error
from audit.paths import CONF_DIR


def _sweep_job_dir() -> Path | None:
    """Hydra's output dir for this job in a -m sweep; None for a single run."""
    hc = HydraConfig.get()
    return Path(hc.runtime.output_dir) if hc.mode == RunMode.MULTIRUN else None


@hydra.main(config_path=CONF_DIR, config_name="epistemic", version_base="1.3")
def main(cfg: DictConfig) -> None:
    job_dir = _sweep_job_dir()

    def job() -> Path:
        try:
            return run(cfg, base_dir=job_dir)
        except UserError as exc:
            if job_dir is not None:
                write_summary(job_dir, str(cfg.get("stage", "all")), "error", error=str(exc))
            raise

    exit_on_user_error(job)


if __name__ == "__main__":
    main()
