"""Each system's settings as a run uses them, from its config: the one reading of ``systems``,
``system`` and ``per_system`` that the pipeline (before a run) and the comparison (from a run's
saved ``config.yaml``, to keep runs that asked differently apart) both make."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from audit.config_values import as_list
from audit.errors import unknown_choice
from audit.paths import CONF_DIR


def system_names(cfg: DictConfig) -> list[str]:
    """The names of the systems a run answers with: the ``systems`` list, else the ``system`` choice."""
    return as_list(cfg.get("systems")) or [str(cfg.system.name)]


def system_node(cfg: DictConfig, name: str) -> DictConfig:
    """System ``name``'s settings before the run's ``prompt`` group: in list mode its
    conf/system/<name>.yaml, except the ``system`` choice, which keeps its command-line overrides
    (system.model=...); ``per_system.<name>`` merged over either (an unknown key is a UserError)."""
    node = cfg.system if name == cfg.system.name else OmegaConf.load(Path(CONF_DIR) / "system" / f"{name}.yaml")
    settings = (cfg.get("per_system") or {}).get(name)
    if settings:
        for key in settings:
            if key not in node:
                raise unknown_choice(f"per_system.{name} setting", str(key), [str(k) for k in node])
        node = OmegaConf.merge(node, settings)
    return node
