"""A hand-made two-river domain and a gateway pointed at the loopback server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from audit.paths import CONF_DIR

EX = "http://example.org/"
MOUTH = EX + "hasMouth"
FACTS = [(EX + "Escanaba_River", MOUTH, EX + "Lake_Michigan"), (EX + "Ford_River", MOUTH, EX + "Green_Bay")]


@dataclass(frozen=True)
class Verdict:
    label: str
    reason: str


class Licenser:
    """E for a KG triple, C for a second mouth (one mouth per river), U otherwise."""

    def judge(self, subj: str, pred: str, obj: str) -> Verdict:
        if (subj, pred, obj) in FACTS:
            return Verdict("E", "entailed: triple in KG")
        known = [o for s, p, o in FACTS if s == subj and p == pred]
        if known:
            return Verdict("C", f"sh:maxCount 1 on hasMouth: already has mouth {known[0]}")
        return Verdict("U", "open world: no fact or shape decides")


class Domain:
    licenser = Licenser()

    def label(self, iri: str) -> str:
        return iri.rsplit("/", 1)[-1].replace("_", " ")

    def verbalise(self, s: str, p: str, o: str) -> str:
        return f"{self.label(s)} has mouth {self.label(o)}."

    def all_facts(self):
        return iter(FACTS)


def _card(label: str, subj: str, obj: str, facts: list[str] | None = None, cid: str = "c1") -> dict:
    d = Domain()
    return {
        "id": cid, "facts": facts if facts is not None else [d.verbalise(*FACTS[0])],
        "question": f"Is {d.label(obj)} the mouth of {d.label(subj)}?",
        "gold": {"E": "YES", "C": "NO", "U": "UNKNOWN"}[label], "label": label,
        "claim": {"subj": EX + subj, "pred": MOUTH, "obj": EX + obj}, "reason": "", "suite": "standard",
    }


def _system_cfg(name: str, **overrides):
    cfg = OmegaConf.load(Path(CONF_DIR) / "system" / f"{name}.yaml")
    return OmegaConf.merge(cfg, overrides)


@pytest.fixture
def domain() -> Domain:
    return Domain()


@pytest.fixture
def gateway(fake_openrouter, tmp_path, monkeypatch):
    """A real Gateway on the loopback server: no retries, no cache, so every call is sent."""
    from audit.llm.gateway import Gateway

    monkeypatch.setenv("OPENROUTER_API_KEY", "test-key-123")
    monkeypatch.delenv("OPENROUTER_API_BASE", raising=False)
    node = OmegaConf.create({
        "api_base": fake_openrouter.base_url, "timeout_s": 10, "max_retries": 0, "backoff_initial_s": 0.01,
        "backoff_max_s": 0.01, "max_concurrency": 4, "cache": {"enabled": False, "path": str(tmp_path / "c.sqlite")},
        "attribution": {"title": "audit", "referer": None},
    })
    return Gateway.from_config(node, usage_path=tmp_path / "usage.json")


@pytest.fixture
def card():
    """card(label, subj, obj, facts=None, cid="c1") -> a card in the contract's format."""
    return _card


@pytest.fixture
def system_cfg():
    """system_cfg(name, **overrides) -> conf/system/<name>.yaml with overrides merged."""
    return _system_cfg
