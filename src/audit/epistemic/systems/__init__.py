"""Registry of the systems under evaluation (one small module per system).

A system module exposes ``NEEDS_LLM`` (the pipeline opens the gateway, and so imports
litellm, only if some selected system needs it), for one that does ``FIELDS`` (the texts its
user template must place, checked before the run starts) and
``create(cfg, *, domain, gateway) -> System``. Add a system by adding a module here and its
settings, ``conf/system/<name>.yaml`` (the Hydra option that selects it): every module of this
package is a system except the ones the systems share (:data:`SHARED`). Modules are found by name
and imported only when their system is chosen, so an unused system costs nothing at start.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from audit.errors import unknown_choice

SHARED = ("base", "llm")
"""Modules of this package that systems share, not systems themselves."""
_MODULES = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in SHARED))


def available() -> tuple[str, ...]:
    return _MODULES


def get(name: str) -> ModuleType:
    """The module of system ``name``; UserError "Unknown system ..." with the choices."""
    if name not in _MODULES:
        raise unknown_choice("system", name, _MODULES)
    return importlib.import_module(f"{__name__}.{name}")
