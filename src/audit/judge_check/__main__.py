"""``python -m audit.judge_check labels.csv judge=...``: the Hydra entrypoint, kept thin (the work is
:func:`audit.judge_check.check.run_check`). The CSV may be given as the first argument, as
``labels=...`` would be; every other argument is a Hydra override, as for an audit."""

from __future__ import annotations

from audit.jobs.interrupts import from_the_start

if __name__ == "__main__":  # run as the program, not imported (a test, the docs build)
    from_the_start()  # before the imports below: a signal while they load ends in one line too

import sys  # noqa: E402 - after from_the_start()

import hydra  # noqa: E402 - after from_the_start()
from omegaconf import DictConfig  # noqa: E402 - after from_the_start()

from audit.errors import exit_on_user_error  # noqa: E402 - after from_the_start()
from audit.app.hydra_app import run_app  # noqa: E402 - after from_the_start()
from audit.paths import CONF_DIR  # noqa: E402 - after from_the_start()


def labels_as_override(argv: list[str]) -> list[str]:
    """``argv`` with a bare first path turned into ``labels=<path>`` (quoted for Hydra's parser)."""
    for k, arg in enumerate(argv):
        if not arg.startswith("-") and "=" not in arg:
            quote = "'" if '"' in arg else '"'
            return [*argv[:k], f"labels={quote}{arg}{quote}", *argv[k + 1:]]
    return argv


@hydra.main(config_path=CONF_DIR, config_name="judge_check", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from audit.judge_check.check import run_check  # lazy: --help answers before it loads

    choice = HydraConfig.get().runtime.choices.get("judge") or "judge"
    exit_on_user_error(lambda: run_check(cfg, str(choice)))


if __name__ == "__main__":
    sys.argv[1:] = labels_as_override(sys.argv[1:])
    run_app(main, "judge_check")
