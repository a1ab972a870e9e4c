"""A judge panel as the config describes it (``judge.models=[...]``, ``judge.samples=k``), checked.

The judge node keeps its single-judge form (``judge.model=...``); a panel adds ``models``, a list
whose members are each a judge node of their own (``model``, ``endpoint``, ``temperature``,
``max_tokens``, ``structured_output``; a plain string is a model id with the judge node's other
settings), and ``samples``, how many times each member judges each item. Every member x sample is
one vote for :func:`audit.judging.majority.panel_label`.

A panel of one member judged once *is* the single judge: :attr:`Panel.single` says so and the
callers then judge exactly as before panels existed (same calls, same records), so a run written
with ``judge.models=[x]`` is the run ``judge.model=x`` writes.

Members are named by model id; two members with the same model (e.g. at two temperatures) are
named ``model#1``, ``model#2`` by their place in the list. Two members with identical settings are
refused: a copy adds no opinion, only weight (more draws of one judge is ``samples=k``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf

from audit import config_values
from audit.errors import UserError
from audit.llm.settings import role_routing
from audit.llm.structured import check_mode

SETTINGS = ("model", "endpoint", "temperature", "max_tokens", "structured_output")
"""What makes a judge: the keys a member may set, and what two judgings must share to be the same."""


@dataclass(frozen=True)
class Panel:
    """Checked members (name, settings) in the config's order and the samples per member."""

    members: tuple[tuple[str, dict[str, Any]], ...]
    samples: int

    @property
    def single(self) -> bool:
        """One member judged once: judged as a lone judge (no panel records)."""
        return len(self.members) == 1 and self.samples == 1

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.members]

    def endpoints(self) -> list[str]:
        """The endpoints the members call (their keys are required before a run starts)."""
        return list(dict.fromkeys(str(s.get("endpoint") or "openrouter") for _, s in self.members))

    def describe(self) -> dict[str, Any]:
        """What a summary, a judging and a report show: members with their settings, and samples."""
        return {"members": [{"name": name, **settings} for name, settings in self.members], "samples": self.samples}


def judge_label(judge: Mapping[str, Any] | None) -> str:
    """How a comparison names the judge of a run: its model id, a panel's members joined by ``+``
    (``×k`` for ``samples=k``), or ``off``. Reads a saved config's ``judge`` node and a judging's
    ``judge`` (a single judge's settings, or a panel's :meth:`Panel.describe`) alike."""
    if not judge or judge.get("enabled") is False:
        return "off"
    members = judge.get("members") or judge.get("models")
    if members:
        names = [str(m.get("name") or m.get("model")) if isinstance(m, Mapping) else str(m) for m in members]
        samples = int(judge.get("samples") or 1)
        return "+".join(names) + (f"×{samples}" if samples > 1 else "")
    return str(judge.get("model") or "off")


ROUTING = ("provider", "reasoning")
"""OpenRouter routing and reasoning controls of a judge: part of what it is only when set, so a judge
without them stays the same judge as one saved before they existed."""


def settings_of(judge: Mapping[str, Any]) -> dict[str, Any]:
    """The judge-defining settings of a judge node or member (the others are the run's business)."""
    return {k: judge.get(k) for k in SETTINGS} | {k: judge[k] for k in ROUTING if judge.get(k) is not None}


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def _member(entry: Any, defaults: Mapping[str, Any], k: int) -> dict[str, Any]:
    where = f"judge.models[{k}]"
    entry = _plain(entry)
    if isinstance(entry, str):
        entry = {"model": entry}
    if not isinstance(entry, Mapping):
        raise UserError(f"{where}={entry!r}: give a model id or a mapping like {{model: openai/gpt-4o-mini, "
                        "endpoint: openrouter}}")
    unknown = sorted(set(entry) - set(SETTINGS))
    if unknown:
        raise UserError(f"{where}: unknown setting {unknown[0]!r}; a member sets {', '.join(SETTINGS)}")
    member = {**settings_of(defaults), **{k: v for k, v in entry.items()}}
    if not member.get("model") or not str(member["model"]).strip():
        raise UserError(f"{where} has no model: give its model id, e.g. judge.models=[openai/gpt-4o-mini]")
    node = {"judge": {"models": [{}] * k + [member]}}
    config_values.temperature(node, f"{where}.temperature")
    config_values.max_tokens(node, f"{where}.max_tokens")
    check_mode(str(member.get("structured_output") or "auto"))
    role_routing(member, where)
    return member


def panel_from_node(judge: Any, *, local: bool = False) -> Panel | None:
    """The panel the judge node asks for; None when the judge is off (``enabled: false``, or no
    model and no members). Bad input is one :class:`UserError` line naming the key and the fix.
    ``local``: ``local=`` routes the judge to the embedded model, which serves one model only, so
    a panel of models cannot be (``judge.samples=k`` of the embedded model can)."""
    judge = _plain(judge)
    if not judge or not judge.get("enabled", True):
        return None
    if local and judge.get("models") is not None:
        raise UserError("local= routes the judge to the embedded model, which serves one model: judge.models "
                        "cannot be served; drop judge.models (judge.samples=k still works) or leave the judge out "
                        "of local=")
    samples = config_values.whole_number({"judge": judge}, "judge.samples", minimum=1, optional=True)
    samples = 1 if samples is None else samples
    models = judge.get("models")
    if models is None:
        if not judge.get("model"):
            return None
        check_mode(str(judge.get("structured_output", "auto")))
        role_routing(judge, "judge")
        members = [settings_of(judge)]
    else:
        if isinstance(models, (str, Mapping)) or not isinstance(models, list):
            raise UserError(f"judge.models={models!r}: give a list, e.g. judge.models=[openai/gpt-4o-mini,"
                            "anthropic/claude-3.5-haiku]")
        if not models:
            raise UserError("judge.models=[] is empty: name at least one judge model, or judge=off for no judge")
        members = [_member(entry, judge, k) for k, entry in enumerate(models)]
    for a in range(len(members)):
        for b in range(a):
            if members[a] == members[b]:
                raise UserError(f"judge.models[{b}] and judge.models[{a}] are the same judge; give each member "
                                "other settings, or judge.samples=k to ask one judge k times")
    ids = Counter(str(m["model"]) for m in members)
    named = tuple((str(m["model"]) + (f"#{k + 1}" if ids[str(m["model"])] > 1 else ""), m)
                  for k, m in enumerate(members))
    return Panel(members=named, samples=samples)
