"""Registry of the systems under evaluation (one small module per system).

A system module exposes ``NEEDS_LLM`` (the pipeline opens the gateway, and so imports
litellm, only if some selected system needs it), for one that does ``FIELDS`` (the texts its
user template must place, checked before the run starts) and
``create(cfg, *, domain, gateway) -> System``. Add a system by adding a module and a
``conf/system/<name>.yaml``, then listing it here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from audit.errors import unknown_choice

_MODULES = ("kg_oracle", "raw_llm", "rag", "graph_rag", "finetuned")


def available() -> tuple[str, ...]:
    return _MODULES


def get(name: str) -> ModuleType:
    """The module of system ``name``; UserError "Unknown system ..." with the choices."""
    if name not in _MODULES:
        raise unknown_choice("system", name, _MODULES)
    return importlib.import_module(f"{__name__}.{name}")
