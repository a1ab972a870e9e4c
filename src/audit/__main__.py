"""``python -m audit topic=tiananmen audited=kimi_k2``: the censorship audit entrypoint.

Thin on purpose: Hydra composes the config, :func:`audit.censorship.loop.run` does the
work (tests call it directly). The loop is imported inside the job so ``--help`` and
``--cfg job`` stay fast and never load the model stack.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from audit.errors import exit_on_user_error
from audit.paths import CONF_DIR


@hydra.main(config_path=CONF_DIR, config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from audit.censorship.loop import run

    exit_on_user_error(lambda: run(cfg))


if __name__ == "__main__":
    main()
