"""``python -m audit.epistemic``: the Hydra entrypoint, kept thin (the work is in
:func:`audit.epistemic.pipeline.run`, which tests call directly).

In a ``-m`` sweep each job's run directory goes under Hydra's job directory. A job that
fails on bad input prints its one-line error, leaves ``summary.json`` with
``status: error`` in its job directory (Hydra skips ``on_multirun_end`` when a job fails,
and the aggregate step needs every job's status) and lets the other jobs run; the sweep
then exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from audit.epistemic.pipeline import run, write_summary
from audit.cli_help import maybe_help
from audit.errors import UserError, exit_on_user_error
from audit.paths import CONF_DIR

_failed_jobs: list[str] = []


@hydra.main(config_path=CONF_DIR, config_name="epistemic", version_base="1.3")
def main(cfg: DictConfig) -> None:
    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        exit_on_user_error(lambda: run(cfg))
        return
    job_dir = Path(hc.runtime.output_dir)
    try:
        run(cfg, base_dir=job_dir)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        write_summary(job_dir, str(cfg.get("stage", "all")), "error", error=str(exc))
        _failed_jobs.append(str(job_dir))


def cli() -> None:
    """Run Hydra; exit 1 if any sweep job failed."""
    main()
    if _failed_jobs:
        print(f"error: {len(_failed_jobs)} sweep job(s) failed; see summary.json in {', '.join(_failed_jobs)}",
              file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    maybe_help("epistemic")
    cli()
