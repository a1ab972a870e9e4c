"""Domain loading from config: shipped rivers graph, predicate checks, clear errors."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from audit.epistemic.domain import load_domain
from audit.errors import UserError
from audit.paths import CONF_DIR


def conf(group: str, name: str):
    return OmegaConf.load(f"{CONF_DIR}/{group}/{name}.yaml")


@pytest.fixture(scope="module")
def rivers():
    return load_domain(conf("domain", "rivers"), conf("predicate", "has_mouth"))


def test_rivers_loads_validated(rivers):
    assert rivers.predicate.name == "has_mouth"
    assert len(rivers.graph.subjects(rivers.predicate.iri)) > 2000
    # non-water mouths (counties, states, towns) are reported and set aside
    assert rivers.violations and all("ClassConstraint" in v["message"] for v in rivers.violations)
    for v in rivers.violations:
        assert rivers.graph.objects(v["focus"], v["path"]) == []
    assert "MIT" in rivers.provenance and "CC BY-SA" in rivers.provenance


def test_default_predicate_and_verbalise(rivers):
    d = load_domain(conf("domain", "rivers"))
    assert d.predicate == rivers.predicate
    dbr = "http://dbpedia.org/resource/"
    assert rivers.verbalise(dbr + "Escanaba_River", rivers.predicate.iri, dbr + "Lake_Michigan") == \
        "Escanaba River has mouth Lake Michigan."
    facts = list(rivers.all_facts())
    assert (dbr + "Escanaba_River", rivers.predicate.iri, dbr + "Lake_Michigan") in facts
    assert all("label" not in p and "subClassOf" not in p for _, p, _ in facts)


def test_predicate_of_another_domain_lists_available():
    with pytest.raises(UserError, match=r"Unknown predicate 'has_capital' for domain 'rivers'\..*Available: has_mouth"):
        load_domain(conf("domain", "rivers"), conf("predicate", "has_capital"))


def test_syntax_error_and_empty_graph_through_config(tmp_path):
    cfg = conf("domain", "rivers")
    bad = tmp_path / "bad.ttl"
    bad.write_text("<http://a> <http://b> .\n")
    cfg.graph = str(bad)
    with pytest.raises(UserError, match=r"bad\.ttl: RDF syntax error at line 1"):
        load_domain(cfg)
    empty = tmp_path / "empty.ttl"
    empty.write_text("")
    cfg.graph = str(empty)
    with pytest.raises(UserError, match="empty"):
        load_domain(cfg)


def test_built_domain_caches_validation(tmp_path):
    """A builder domain loads its cache file and stores the pyshacl verdict beside it, one per set of
    properties the shapes read: has_neighbour reads what located_in_country reads (each is the other's
    ``sh:disjoint``), so it reuses that verdict and sets the same edges aside."""
    from audit.epistemic.build.geography import Scale, cache_path, write_graph

    write_graph(Scale(15000, capital_min_population=15000, countries=frozenset({"FR", "BE"})),
                cache_path(tmp_path, "small"))
    cfg = conf("domain", "geography")
    cfg.cache_dir = str(tmp_path)
    d = load_domain(cfg)
    assert d.predicate.name == "has_capital" and "CC BY 4.0" in d.provenance
    assert len(list(tmp_path.glob("*.violations-*.json"))) == 1 and list(tmp_path.glob("*.idx"))
    again = load_domain(cfg, conf("predicate", "located_in_country"))
    assert len(list(tmp_path.glob("*.violations-*.json"))) == 2
    assert len(again.graph) == len(d.graph)
    neighbours = load_domain(cfg, conf("predicate", "has_neighbour"))
    assert len(list(tmp_path.glob("*.violations-*.json"))) == 2
    assert neighbours.violations == again.violations
