"""What an epistemic system was asked and how it answered, read from its run's ``systems.json`` and
saved ``config.yaml``: the cell key beside the system id (pure: both are read by
:mod:`audit.compare.collect`).

A system id is ``name:model`` (or its label), so two runs of one system under another prompt,
temperature, ``max_tokens``, ``extra_body``/``reasoning``, provider pin, endpoint, RAG ``top_k`` or
reply format share it: the comparison would pool their answers as repeats of the same cards, and a
cached re-run of one would be dropped as a replay of the other. Every setting of the system's node
(after the run's ``prompt`` group and ``per_system`` overrides) is part of the key, and so are the
prompt group's name and ``local``; only those that differ among one system's runs are shown
(:func:`settings_labels`), as the censorship pages show the auditor and judge only when a sweep
varies them.

The node is the one the run recorded when it started (:mod:`audit.epistemic.used_systems`), with
its prompt files' text digests (``prompt.system.sha256``): a prompt file edited under the same name
is another cell, and a listed system's ``conf/system`` file changed since the run does not change
what the run is said to have used. A run dir written before that record existed has its nodes
rebuilt from its config and today's ``conf/system`` files, and no digests (``n/a``: apart from any
run that has them, never assumed equal).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.epistemic.system_nodes import system_names, system_node
from audit.epistemic.systems.base import system_id
from audit.epistemic.systems.llm import with_prompts
from audit.epistemic.used_systems import recorded_system
from audit.errors import UserError

SAME = ("name", "label")
"""Keys of a system's node that make its id (not settings beside it)."""
UNKNOWN = "n/a"
"""A setting a run does not record (no saved config, or a key its version did not have)."""


def _text(value: Any) -> str:
    """One setting's value as a short, stable text (a mapping or a list as compact JSON)."""
    if isinstance(value, (Mapping, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return "null" if value is None else str(value)


def _flat(node: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``prompt: {system: x}`` → ``{"prompt.system": "x"}``; other mappings stay whole (``provider``)."""
    out: dict[str, str] = {}
    for key, value in node.items():
        if isinstance(value, Mapping) and key == "prompt":
            out |= _flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = _text(value)
    return out


def _node(config: DictConfig, system: str) -> DictConfig | None:
    """The node of the run's system whose id is ``system``; by name when the id is not rebuilt (a
    system routed to the embedded model by ``local=`` has that model in its id, not in the config)."""
    nodes = [with_prompts(system_node(config, name), config.get("prompt")) for name in system_names(config)]
    for node in nodes:
        if system_id(node) == system:
            return node
    named = [n for n in nodes if str(n.get("name")) == system.split(":", 1)[0]]
    return named[0] if len(named) == 1 else None


def answer_settings(config: DictConfig | None, system: str,
                    recorded: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Every setting that changes what ``system`` (a system id) was asked or how it answered in a run
    whose saved config is ``config`` and whose record of its systems is ``recorded`` (``systems.json``;
    None for a run written before it), dotted name → text; {} when the run saved neither."""
    if config is None and recorded is None:
        return {}
    digests: Mapping[str, str] = {}
    if recorded is not None:
        try:
            node, digests = recorded_system(recorded, system)
        except ValueError as exc:  # a record that does not hold the system: apart from all
            return {"config": f"unrecorded ({exc})"}
    else:
        try:
            rebuilt = _node(config, system)  # type: ignore[arg-type]
        except (UserError, OSError, ValueError) as exc:  # a system the config no longer resolves: apart from all
            return {"config": f"unresolved ({exc})"}
        if rebuilt is None:
            return {"config": "system not found"}
        node = OmegaConf.to_container(rebuilt, resolve=True)  # type: ignore[assignment]
    settings = {k: v for k, v in _flat(node).items() if k not in SAME}
    settings |= {f"prompt.{role}.sha256": str(digest) for role, digest in digests.items()}
    prompt = config.get("prompt") if config is not None else UNKNOWN
    return {**settings, "prompt": _text(prompt.get("name") if isinstance(prompt, Mapping) else prompt),
            "local": _text(config.get("local", False)) if config is not None else UNKNOWN}


def settings_labels(systems: Sequence[str], settings: Sequence[Mapping[str, str]]) -> list[str]:
    """Per row (a system id and its :func:`answer_settings`), the settings that differ among the rows
    of its system, ``key=value · key=value`` ('' where none differ). Two rows of one system with
    different settings get different labels, so the label keys a cell and a sample."""
    varied: dict[str, list[str]] = {}
    for system in dict.fromkeys(systems):
        mine = [s for sid, s in zip(systems, settings) if sid == system]
        keys = sorted({k for s in mine for k in s})
        varied[system] = [k for k in keys if len({s.get(k, UNKNOWN) for s in mine}) > 1]
    return [" · ".join(f"{k}={s.get(k, UNKNOWN)}" for k in varied[sid]) for sid, s in zip(systems, settings)]
