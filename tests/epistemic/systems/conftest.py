"""A hand-made two-river domain (real graph, shapes, licenser) and a gateway on the loopback server."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from audit.epistemic.domain import Domain, Predicate
from audit.epistemic.graph import KnowledgeGraph
from audit.epistemic.licensing import Licenser
from audit.epistemic.shapes import load_shapes
from audit.paths import CONF_DIR

EX = "http://example.org/"
MOUTH = EX + "hasMouth"
GRAPH = """@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:hasMouth rdfs:label "has mouth" .
ex:Lake rdfs:subClassOf ex:WaterBody .
ex:Escanaba_River ex:hasMouth ex:Lake_Michigan .
ex:Ford_River ex:hasMouth ex:Green_Bay .
ex:Lake_Michigan a ex:Lake .
ex:Green_Bay a ex:Lake .
"""
SHAPES = """@prefix ex: <http://example.org/> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
ex:MouthShape a sh:NodeShape ; sh:targetSubjectsOf ex:hasMouth ;
    sh:property [ sh:path ex:hasMouth ; sh:maxCount 1 ; sh:class ex:WaterBody ] .
"""


def _domain(tmp_path: Path) -> Domain:
    """Two rivers with one mouth each (sh:maxCount 1): a real graph, shapes and licenser."""
    (tmp_path / "rivers.ttl").write_text(GRAPH)
    (tmp_path / "shapes.ttl").write_text(SHAPES)
    graph = KnowledgeGraph.load(tmp_path / "rivers.ttl")
    licenser = Licenser(graph, load_shapes(tmp_path / "shapes.ttl"))
    return Domain("rivers", graph, licenser, Predicate("has_mouth", MOUTH, "has mouth", "Is {obj} the mouth of {subj}?"))


def _card(label: str, subj: str, obj: str, facts: list[str] | None = None, cid: str = "c1") -> dict:
    return {
        "id": cid, "facts": facts if facts is not None else ["Escanaba River has mouth Lake Michigan."],
        "question": f"Is {obj.replace('_', ' ')} the mouth of {subj.replace('_', ' ')}?",
        "gold": {"E": "YES", "C": "NO", "U": "UNKNOWN"}[label], "label": label,
        "claim": {"subj": EX + subj, "pred": MOUTH, "obj": EX + obj}, "reason": "", "suite": "standard",
    }


def _system_cfg(name: str, **overrides):
    cfg = OmegaConf.load(Path(CONF_DIR) / "system" / f"{name}.yaml")
    return OmegaConf.merge(cfg, overrides)


@pytest.fixture
def domain(tmp_path) -> Domain:
    return _domain(tmp_path)


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
