"""``python -m audit topic=tiananmen audited=kimi_k2``: the censorship audit entrypoint.

Thin on purpose: Hydra composes the config, :func:`audit.censorship.loop.run` does the
work (tests call it directly). The loop is imported inside the job so ``--help`` and
``--cfg job`` stay fast and never load the model stack. In a ``-m`` sweep a failing job
raises instead of exiting, so Hydra still runs the other jobs (each leaves its own
``summary.json``; a failed one says ``status: error``).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from audit.cli_help import maybe_help
from audit.errors import exit_on_user_error
from audit.paths import CONF_DIR


@hydra.main(config_path=CONF_DIR, config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from audit.censorship.loop import run

    if HydraConfig.get().mode == RunMode.MULTIRUN:
        run(cfg)  # a failed job raises to Hydra, which records it and runs the rest of the sweep
    else:
        exit_on_user_error(lambda: run(cfg))


if __name__ == "__main__":
    maybe_help("config")
    main()
