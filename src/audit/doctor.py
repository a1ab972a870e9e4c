"""``python -m audit.doctor audited=<model>``: check that the model's provider honours raw completions.

Thin Hydra wrapper; the check is :func:`audit.censorship.doctor.run_doctor`. Exit 0 when
raw completions look honoured, 2 when the prompt was wrapped as chat (pin a provider).
``--list`` and ``--forget`` (``verdicts=list|forget``) show or clear the kept verdicts.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from audit.app.hydra_app import run_app
from audit.errors import exit_on_user_error
from audit.paths import CONF_DIR


@hydra.main(config_path=CONF_DIR, config_name="doctor", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from audit.censorship.doctor import run_doctor  # lazy: --help answers before it loads

    code = exit_on_user_error(lambda: run_doctor(cfg))
    raise SystemExit(code)


FLAGS = {"--list": "verdicts=list", "--forget": "verdicts=forget"}
"""Shorthands for the kept verdicts' actions (Hydra takes key=value overrides only)."""

if __name__ == "__main__":
    import sys

    sys.argv[1:] = [FLAGS.get(arg, arg) for arg in sys.argv[1:]]
    run_app(main, "doctor")
