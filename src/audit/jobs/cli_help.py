"""A fast ``--help`` for the Hydra entrypoints.

Hydra's own ``--help`` deep-copies its config repository once per config group, twice
(about 2 s here for ~90 groups), and lists every group in ``conf/``, including the other
experiment's. This help reads only the app's primary config: the groups in its defaults
list, each with its options and the default marked, under the app's ``hydra.help.header``
(where Hydra itself keeps it). It imports neither litellm nor the experiment code. ``--cfg job`` still prints the fully composed config, and
``--hydra-help`` Hydra's own help.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from audit.paths import conf_dir


def wants_help(argv: list[str]) -> bool:
    """True for ``--help``/``-h`` (Hydra's app help), not for ``--hydra-help``."""
    return any(arg in ("--help", "-h") for arg in argv[1:])


def group_defaults(config: dict) -> list[tuple[str, str]]:
    """(group, default option) pairs from a primary config's defaults list, Hydra's own groups left out."""
    pairs = []
    for entry in config.get("defaults", []):
        if isinstance(entry, dict):
            for group, option in entry.items():
                group = group.removeprefix("override ")
                if not group.startswith("hydra") and group != "_self_":
                    pairs.append((group, str(option)))
    return pairs


def render_help(config_name: str, root: Path | None = None) -> str:
    """The help text: the app's header, usage, then each config group with its options."""
    root = root or conf_dir()
    config = yaml.safe_load((root / f"{config_name}.yaml").read_text(encoding="utf-8")) or {}
    help_cfg = (config.get("hydra") or {}).get("help") or {}
    command = help_cfg.get("app_name", config_name)
    lines = [str(help_cfg.get("header", "")).rstrip(), "",
             f"Usage: {command} [group=option ...] [key=value ...] [-m for a sweep]", "",
             "Config groups (default marked *):"]
    for group, default in group_defaults(config):
        options = sorted(p.stem for p in (root / group).glob("*.yaml"))
        shown = ", ".join(f"{o}*" if o == default else o for o in options)
        lines.append(f"  {group}: {shown}")
    footer = str(help_cfg.get("footer") or "").rstrip()  # the everyday settings (Hydra's own help field)
    lines += ["", footer] if footer else []
    lines += ["", f"Show the composed config: {command} [overrides] --cfg job",
              f"Hydra's own options: {command} --hydra-help"]
    return "\n".join(lines)


def maybe_help(config_name: str) -> None:
    """Answer ``--help`` fast and exit if asked; otherwise return and let Hydra run."""
    if wants_help(sys.argv):
        print(render_help(config_name))
        raise SystemExit(0)
