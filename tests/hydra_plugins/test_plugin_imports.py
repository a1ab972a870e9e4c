"""Hydra imports every ``hydra_plugins`` module at each start, so what they import at module level
must come with every documented install: a missing one printed a 6-line plugin warning on each run."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "src" / "hydra_plugins"


def _top_level_imports(path: Path) -> set[str]:
    """Module names imported at a module's top level (not inside functions: those load lazily)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _core_dependencies() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].lower() for spec in project["dependencies"]}


def _distribution_of(module: str) -> str | None:
    """The installed distribution that provides ``module`` (None for the stdlib and our own code)."""
    if module.split(".")[0] in sys.stdlib_module_names or module.split(".")[0] == "audit":
        return None
    if module.startswith("hydra_plugins."):  # a namespace package: the plugin's own distribution
        plugin = module.split(".")[1]
        if (PLUGINS / plugin).is_dir():
            return None
        return plugin.replace("_", "-")
    dists = packages_distributions().get(module.split(".")[0])
    assert dists, f"{module} is imported by a hydra plugin but no installed distribution provides it"
    return dists[0]


def test_every_plugin_import_is_a_core_dependency() -> None:
    core = _core_dependencies()
    plugin_files = sorted(PLUGINS.rglob("*.py"))
    assert plugin_files
    missing = {
        (path.relative_to(ROOT).as_posix(), dist)
        for path in plugin_files
        for dist in map(_distribution_of, _top_level_imports(path))
        if dist is not None and dist.lower().replace("_", "-") not in core
    }
    assert not missing, f"hydra_plugins import these at module level but pyproject does not depend on them: {missing}"
