"""``python -m audit.rescore <run or sweep dirs> judge=...``: the Hydra entrypoint, kept thin (the work
is :func:`audit.rescore.rescore.run_rescore`). Bare arguments are the directories, as ``runs=[...]``
would give them; every other argument is a Hydra override, as for an audit."""

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


def dirs_as_override(argv: list[str]) -> list[str]:
    """``argv`` with its bare paths gathered into one ``runs=[...]`` override (quoted for Hydra)."""
    paths = [a for a in argv if not a.startswith("-") and "=" not in a]
    if not paths:
        return argv
    quoted = ",".join(("'" if '"' in p else '"') + p + ("'" if '"' in p else '"') for p in paths)
    return [*(a for a in argv if a not in paths), f"runs=[{quoted}]"]


@hydra.main(config_path=CONF_DIR, config_name="rescore", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from audit.rescore.rescore import run_rescore  # lazy: --help answers before it loads

    exit_on_user_error(lambda: run_rescore(cfg))


if __name__ == "__main__":
    sys.argv[1:] = dirs_as_override(sys.argv[1:])
    run_app(main, "rescore")
