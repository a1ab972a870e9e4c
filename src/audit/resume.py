"""``resume=<run dir>``: what a continued run takes from its saved config, for both experiments.

Everything that defines the experiment comes from the saved run, so a resume cannot
silently mix two experiments; connection settings may legitimately change between
sessions (e.g. a longer timeout after the run died on one), so they come from the command.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from audit.errors import UserError

GATEWAY_KEYS = ("gateway",)
"""Config nodes a resume takes from the current invocation; everything else comes from the saved run."""


def load_saved_config(path: Path) -> DictConfig:
    """A run's saved ``config.yaml``; a hand-edited one that no longer parses is a one-line UserError."""
    try:
        saved = OmegaConf.load(path)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the user's file to fix
        raise UserError(f"resume: cannot read {path}: {exc}".replace("\n", " ")) from None
    if not isinstance(saved, DictConfig):
        raise UserError(f"resume: {path} is not a mapping; restore it from the run")
    return saved


def resumed_config(saved: DictConfig, current: DictConfig) -> DictConfig:
    """The saved run's config, with the gateway settings (base URL, timeouts, cache) of this invocation."""
    merged = OmegaConf.create(OmegaConf.to_container(saved, resolve=True))
    for key in GATEWAY_KEYS:
        if key in current:
            merged[key] = OmegaConf.to_container(current[key], resolve=True)
    merged.resume = str(current.resume)
    return merged
