"""The settings that key a comparison cell, read from each run's saved config: what a system or a
target was asked and how (pure: the files are read by :mod:`audit.compare.collect` and the benchmark's
loader). One mechanism for the three experiments: every setting that changes the bytes sent is part of
the key (:func:`answer_settings` for an epistemic system, :func:`target_settings` for the target of an
audit or a benchmark run), and only those that differ among the runs of one system or model are shown
(:func:`settings_labels`), as the pages show the auditor and judge only when a sweep varies them.

Epistemic. A system id is ``name:model`` (or its label), so two runs of one system under another
prompt, temperature, ``max_tokens``, ``extra_body``/``reasoning``, provider pin, endpoint, RAG
``top_k`` or reply format share it: the comparison would pool their answers as repeats of the same
cards, and a cached re-run of one would be dropped as a replay of the other. Every setting of the
system's node (after the run's ``prompt`` group and ``per_system`` overrides) is part of the key, and
so are the prompt group's name and ``local``. The node is the one the run recorded when it started
(:mod:`audit.epistemic.used_systems`), with its prompt files' text digests (``prompt.system.sha256``):
a prompt file edited under the same name is another cell, and a listed system's ``conf/system`` file
changed since the run does not change what the run is said to have used. A run dir written before
that record existed has its nodes rebuilt from its config and today's ``conf/system`` files, and no
digests (``n/a``: apart from any run that has them, never assumed equal).

Censorship and benchmark. The target's cell is named by the ``audited`` config name (and the model id,
technique, framing), so ``-m audited.template=kimi_k2,kimi_k2_legacy`` or a sweep over provider pins
would be one cell. Every key of the target's node but its name (model id, chat template, provider pin,
endpoint, reasoning, system prompt, ...), the sampling parameters, the server its endpoint reached
(:func:`server`) and the technique's and framing's own parameters (``prefill_text``, ``menu``,
``template``) are the key; a key an older run's config lacks reads ``n/a`` (a cell of its own). The
settings in :data:`ROUTE` say where the same request was served, not what it said: cells that differ
only in them are compared by the provider gap (:mod:`audit.compare.tables`).
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
ROUTE = ("provider", "endpoint", "server")
"""Target settings that choose who serves a request, not what it says: the provider pin, the endpoint's
name and the server it reached. Cells that differ only in these are one request served apart."""
OWN_PARAMETERS = ("technique", "framing")
"""Nodes whose parameters beside ``name`` change what the target is sent (a prefill's text, the menu
of an auto audit, a framing's template); their names are cell keys of their own."""
NOT_SENT = ("name", "with_baseline")
"""Keys of those nodes that send nothing different: the name (its own cell key) and whether an
assistant baseline is sampled beside (its own cell)."""
DEFAULT_ENDPOINT = "openrouter"


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


def server(config: Mapping[str, Any], endpoint: Any) -> str:
    """The server an endpoint of a run's saved ``gateway`` node reached: its ``identity`` when it has one
    (the embedded model, whose port changes every run), else the base URL the run recorded
    (``gateway.effective``), else the one its config names (a run saved before ``effective``)."""
    gateway = config.get("gateway") if isinstance(config.get("gateway"), Mapping) else {}
    name = str(endpoint or DEFAULT_ENDPOINT)
    entry = (gateway.get("endpoints") or {}).get(name) if isinstance(gateway.get("endpoints"), Mapping) else None
    entry = entry if isinstance(entry, Mapping) else {}
    effective = gateway.get("effective") if isinstance(gateway.get("effective"), Mapping) else {}
    found = entry.get("identity") or effective.get(name) or \
        (gateway.get("api_base") if name == DEFAULT_ENDPOINT else entry.get("api_base"))
    return _text(str(found).rstrip("/")) if found else UNKNOWN


def _plain(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """A saved config as plain dicts and lists (a ``config.yaml`` read by OmegaConf, or a summary's
    ``config``), so a list reads as the same JSON text whichever file it came from."""
    return OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else config  # type: ignore[return-value]


def _sent(config: Mapping[str, Any]) -> dict[str, str]:
    """What every request of a run's target or reference carries beside its model: ``sampling.*`` and
    the parameters of :data:`OWN_PARAMETERS`."""
    sampling = config.get("sampling")
    out = {f"sampling.{k}": v for k, v in _flat(sampling if isinstance(sampling, Mapping) else {}).items()}
    for name in OWN_PARAMETERS:
        own = config.get(name)
        if isinstance(own, Mapping):
            out |= {f"{name}.{k}": v for k, v in _flat(own).items() if k not in NOT_SENT}
    return out


def target_settings(config: Mapping[str, Any] | None, role: str = "audited") -> dict[str, str]:
    """Every setting that changes what the target of a censorship or benchmark run was sent, from the
    run's saved config (dotted name → text; {} when the run saved none): its ``role`` node but the name,
    ``sampling.*``, the parameters of :data:`OWN_PARAMETERS` and the ``server`` its endpoint reached."""
    if not config:
        return {}
    config = _plain(config)
    node = config.get(role)
    node = node if isinstance(node, Mapping) else {}
    out = {k: v for k, v in _flat(node).items() if k not in SAME}
    return {**out, **_sent(config), "server": server(config, node.get("endpoint"))}


def reference_settings(config: Mapping[str, Any] | None) -> dict[str, str]:
    """A benchmark's reference model's settings: what its requests carry and the server its endpoint
    reached (the target's own node does not change what the reference is sent)."""
    if not config:
        return {}
    config = _plain(config)
    return {**_sent(config), "server": server(config, config.get("reference_endpoint"))}


def varied_settings(groups: Sequence[str], settings: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Per row (the system or model it belongs to and its settings), the settings that differ among the
    rows of its group, key → value (a key a row lacks reads :data:`UNKNOWN`)."""
    varied: dict[str, list[str]] = {}
    for group in dict.fromkeys(groups):
        mine = [s for g, s in zip(groups, settings) if g == group]
        keys = sorted({k for s in mine for k in s})
        varied[group] = [k for k in keys if len({s.get(k, UNKNOWN) for s in mine}) > 1]
    return [{k: s.get(k, UNKNOWN) for k in varied[g]} for g, s in zip(groups, settings)]


def label(settings: Mapping[str, str]) -> str:
    """``key=value · key=value`` ('' for none): how a cell's varied settings are shown and keyed."""
    return " · ".join(f"{k}={v}" for k, v in settings.items())


def unrouted(settings: Mapping[str, str]) -> str:
    """The :func:`label` of ``settings`` but those saying who served the draws (:data:`ROUTE`): cells that
    differ in their label and agree here sent the same requests, served apart (the provider gap)."""
    return label({k: v for k, v in settings.items() if k not in ROUTE})


def settings_labels(groups: Sequence[str], settings: Sequence[Mapping[str, str]]) -> list[str]:
    """Per row (a system id or target and its settings), the settings that differ among the rows of its
    group, ``key=value · key=value`` ('' where none differ). Two rows of one group with different
    settings get different labels, so the label keys a cell and a sample."""
    return [label(v) for v in varied_settings(groups, settings)]
