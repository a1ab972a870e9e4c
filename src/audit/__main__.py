"""``python -m audit topic=tiananmen audited=kimi_k2``: the censorship audit entrypoint.

Thin on purpose: Hydra composes the config, :func:`audit.censorship.loop.run` does the
work (tests call it directly). The loop is imported inside the job so ``--cfg job``
stays fast and never loads the model stack. Failures follow :mod:`audit.jobs.sweep`: one line
and exit 1 for a single run; in a ``-m`` sweep every job runs and each leaves a
``summary.json``.
"""

from __future__ import annotations

from audit.jobs.interrupts import from_the_start

if __name__ == "__main__":  # run as the program, not imported (a test, the docs build)
    from_the_start()  # before the imports below: a signal while they load ends in one line too

import hydra  # noqa: E402 - after from_the_start()
from omegaconf import DictConfig  # noqa: E402 - after from_the_start()

from audit.export.writing import with_export  # noqa: E402 - after from_the_start()
from audit.app.hydra_app import run_app  # noqa: E402 - after from_the_start()
from audit.paths import CONF_DIR  # noqa: E402 - after from_the_start()
from audit.jobs.sweep import exit_if_any_failed, run_job  # noqa: E402 - after from_the_start()


@hydra.main(config_path=CONF_DIR, config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from audit.censorship.loop import run  # lazy: --help answers before it loads

    run_job(cfg, with_export(cfg, run), "censorship")


if __name__ == "__main__":
    run_app(main, "config")
    exit_if_any_failed()
