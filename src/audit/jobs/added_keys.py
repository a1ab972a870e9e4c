"""Refuse a ``+key=value`` override that adds a key nothing reads.

Hydra lets ``+key=value`` add any key to the config; the run then ignores it. ``+max_iteration=3``
(a typo of ``max_iterations``) would silently run the default 20 iterations, a real cost on a paid
API. Keys are read only where the code iterates a mapping of the user's own entries
(:data:`OPEN_NODES`), and a ``+group=option`` adds a config group; any other added key is refused
in one line, with the key it was probably meant to be.
"""

from __future__ import annotations

from difflib import get_close_matches
from pathlib import Path

import yaml

from audit.errors import UserError

OPEN_NODES: tuple[str, ...] = ("gateway.endpoints", "per_system", "hydra")
"""Mappings whose entries are the user's own (an endpoint's name, a system's settings) and Hydra's
own node: keys added under them are read (``+gateway.endpoints.gpu={...}``, ``+per_system.rag.model=...``)."""


def added_key(override: str) -> str | None:
    """The key a ``+key=value`` override adds (``++`` sets or adds, ``~`` deletes: neither adds one)."""
    if not override.startswith("+") or override.startswith("++") or "=" not in override:
        return None
    return override[1:].split("=", 1)[0].strip()


def _known_keys(conf: Path, config_name: str, path: list[str]) -> list[str]:
    """The keys the default config holds at ``path`` (a group's default option for a group node)."""
    primary = yaml.safe_load((conf / f"{config_name}.yaml").read_text(encoding="utf-8")) or {}
    node: object = {k: v for k, v in primary.items() if k != "defaults"}
    groups = {str(g).removeprefix("override "): str(o) for e in primary.get("defaults", []) if isinstance(e, dict)
              for g, o in e.items()}
    for depth, part in enumerate(path):
        if depth == 0 and part in groups and (conf / part / f"{groups[part]}.yaml").is_file():
            node = yaml.safe_load((conf / part / f"{groups[part]}.yaml").read_text(encoding="utf-8")) or {}
        elif isinstance(node, dict) and isinstance(node.get(part), dict):
            node = node[part]
        else:
            return []
    keys = [str(k) for k in node] if isinstance(node, dict) else []
    return keys + (sorted(groups) if not path else [])


def check_added_keys(argv: list[str], config_name: str, conf: Path) -> None:
    """Raise a one-line :class:`UserError` for the first override adding a key nothing reads."""
    for override in argv:
        key = added_key(override)
        if key is None or any(key == n or key.startswith(n + ".") for n in OPEN_NODES):
            continue
        if "." not in key and (conf / key).is_dir():
            continue  # +group=option: a config group of one's own
        *parent, leaf = key.split(".")
        close = get_close_matches(leaf, _known_keys(conf, config_name, parent), n=1)
        fix = (f"did you mean {'.'.join([*parent, close[0]])}={override.split('=', 1)[1]}?" if close
               else "see the keys with --cfg job")
        raise UserError(f"{override} adds a key nothing reads (it would be ignored); {fix}")


def options_holding(conf: Path, dotted_key: str) -> list[str]:
    """The options of the key's group that hold it (``technique.menu`` → ``[auto]``), so a key set
    without its option (``technique.menu=[...]`` on a user_persona run) names the option to pick."""
    group, _, rest = dotted_key.partition(".")
    if not rest or not (conf / group).is_dir():
        return []
    first = rest.split(".")[0]
    return sorted(p.stem for p in (conf / group).glob("*.yaml")
                  if isinstance(data := yaml.safe_load(p.read_text(encoding="utf-8")), dict) and first in data)
