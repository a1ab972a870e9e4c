"""What a resume accepts from a saved run or sweep: the project's own settings as data, never code or a new endpoint.

A run dir or sweep dir may come from a colleague or with downloaded results, and finishing it
replays what it saved. Hydra reads some keys as code: ``_target_`` (and its siblings) names a
callable to instantiate, ``hydra.callbacks`` runs objects at every job, Python's logging config
(``hydra.job_logging``) builds handlers from factories, and ``hydra.searchpath`` adds config
dirs whose files could hold all of these. Other keys decide where the user's key is sent: the
base URL, the endpoints and the variable each endpoint's key is read from. A saved sweep that
set ``hydra.callbacks.x._target_=os.makedirs`` ran it, and one with an edited ``gateway.api_base``
sent the user's key there. So a saved override of any code-bearing key is refused, and one that
moves calls elsewhere is refused unless the command repeats it (or, for the base URL, the
environment already names the same server): one line naming the key and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from audit.errors import UserError
from audit.io.safe_read import foreign_resolvers
from audit.llm.settings import BASE_ENV

CODE_KEYS = ("hydra.callbacks", "hydra.searchpath", "hydra.job_logging", "hydra.hydra_logging")
"""Saved overrides under these keys could run code; the project never saves one (its callbacks live in ``conf/``)."""
ENDPOINT_KEYS = ("gateway.api_base", "gateway.endpoints")
"""Saved overrides under these keys choose where calls, and the key, go."""


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _under(key: str, prefixes: Iterable[str]) -> bool:
    return any(key == p or key.startswith(p + ".") or key.startswith(p + "/") for p in prefixes)


def special_key(key: str) -> str | None:
    """The part of a dotted ``key`` that Hydra reads as code (``_target_``, ``_partial_``...), if any."""
    return next((part for part in key.replace("/", ".").split(".")
                 if len(part) > 2 and part.startswith("_") and part.endswith("_")), None)


def check_replayed(overrides: Iterable[str], given: set[str], source: Path) -> None:
    """Refuse, in one line, a saved override that runs code, reads the environment or redirects the key.

    ``given`` holds the keys this command sets itself (they replace the saved ones).
    """
    for override in overrides:
        key, value = _key(override), override.split("=", 1)[1] if "=" in override else ""
        if special_key(key) or _under(key, CODE_KEYS):
            raise UserError(f"resume: {source} sets {key}, which would run code; a saved sweep is data. "
                            "Remove that override from the file (or start the sweep anew) if you did not write it")
        if foreign_resolvers(value):
            raise UserError(f"resume: {source} sets {key}={value}, which reads the environment (your key) or "
                            "runs code; remove that override from the file")
        if _under(key, ENDPOINT_KEYS) and key not in given and not _same_as_environment(key, value):
            raise UserError(f"resume: {source} sends calls (and your key) to {key}={value}; if you trust that "
                            f"server give {key}={value} on the command line, else remove it from the file")


def _same_as_environment(key: str, value: str) -> bool:
    """The saved base URL is the one this environment's ``OPENROUTER_API_BASE`` names (it wins anyway)."""
    current = os.environ.get(BASE_ENV, "").rstrip("/")
    return key == "gateway.api_base" and bool(current) and value.strip("'\"").rstrip("/") == current


def check_saved_config(saved: Mapping[str, Any], current: Mapping[str, Any], source: Path) -> None:
    """A run's saved ``config.yaml`` holds only the project's own keys: none unknown to this version's
    config, no Hydra node, and nowhere a key Hydra reads as code."""
    unknown = sorted(str(k) for k in saved if k not in current or k == "hydra")
    if unknown:
        raise UserError(f"resume: {source} has the key {unknown[0]!r}, which is not a setting of this tool; "
                        "remove it from the file (a saved config is data)")
    path = _code_path(saved, "")
    if path:
        raise UserError(f"resume: {source} sets {path}, which Hydra would run as code; remove it from the file")


def _code_path(node: Any, prefix: str) -> str | None:
    """The dotted path of the first ``_target_``-like key anywhere in ``node``."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            path = f"{prefix}{key}"
            if special_key(str(key)):
                return path
            if found := _code_path(value, path + "."):
                return found
    elif isinstance(node, list):
        for index, value in enumerate(node):
            if found := _code_path(value, f"{prefix}{index}."):
                return found
    return None
