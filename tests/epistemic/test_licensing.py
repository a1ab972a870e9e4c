"""Licenser verdicts on hand-built graphs, and a differential test against pyshacl."""

from __future__ import annotations

import itertools

import pyshacl
import pytest
import rdflib

from audit.epistemic.graph import KnowledgeGraph
from audit.epistemic.licensing import Licenser
from audit.epistemic.shapes import load_shapes, validate

EX = "http://ex.org/"
DATA = """@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:River rdfs:subClassOf ex:WaterBody .
ex:Lake rdfs:subClassOf ex:WaterBody .
ex:a a ex:River ; ex:mouth ex:lake1 .
ex:b a ex:River ; ex:mouth ex:a .
ex:c a ex:River .
ex:lake1 a ex:Lake ; ex:tributary ex:a .
ex:a ex:tributary ex:b .
ex:lake2 a ex:Lake .
ex:county a ex:County .
ex:mystery ex:note ex:x .
"""
SHAPES = """@prefix ex: <http://ex.org/> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
ex:MouthShape a sh:NodeShape ;
    sh:targetSubjectsOf ex:mouth ;
    sh:property [ sh:path ex:mouth ; sh:maxCount 1 ; sh:class ex:WaterBody ; sh:disjoint ex:tributary ] .
"""


def make_world(tmp_path, data: str, shapes_text: str):
    """Graph, shapes and licenser from Turtle texts; the graph must already satisfy the shapes."""
    (tmp_path / "g.ttl").write_text(data)
    (tmp_path / "s.ttl").write_text(shapes_text)
    graph = KnowledgeGraph.load(tmp_path / "g.ttl")
    shapes = load_shapes(tmp_path / "s.ttl")
    assert validate(graph, shapes) == []
    return graph, shapes, Licenser(graph, shapes)


@pytest.fixture
def world(tmp_path):
    return make_world(tmp_path, DATA, SHAPES)


def judge(lic, s, o, p="mouth"):
    return lic.judge(EX + s, EX + p, EX + o)


def test_entailed(world):
    assert judge(world[2], "a", "lake1").label == "E"


def test_second_value_of_single_valued_property_is_c_and_names_the_shape(world):
    v = judge(world[2], "a", "lake2")
    assert v.label == "C"
    assert v.reason.startswith("sh:maxCount 1 on mouth: a already has lake1")


def test_absent_and_consistent_is_unknown(world):
    v = judge(world[2], "c", "lake2")
    assert (v.label, v.reason) == ("U", "open world: no fact or shape decides")


def test_missing_type_is_unknown_not_contradiction(world):
    v = judge(world[2], "c", "mystery")
    assert v.label == "U" and "no type" in v.reason


def test_wrong_class_is_c(world):
    v = judge(world[2], "c", "county")
    assert v.label == "C" and v.reason.startswith("sh:class WaterBody on mouth: county is a County")


def test_subclass_counts_as_the_class(world):
    assert judge(world[2], "c", "a").label == "U"  # a River is a WaterBody


def test_disjoint_is_c(world):
    v = judge(world[2], "lake1", "a")  # lake1 becomes a focus node by this claim
    assert v.label == "C" and "sh:disjoint mouth / tributary" in v.reason


def test_disjoint_from_the_other_side(world):
    # b has mouth a; claiming a is b's tributary makes mouth and tributary share a value
    v = judge(world[2], "b", "a", p="tributary")
    assert v.label == "C" and "sh:disjoint" in v.reason


def _pyshacl_flags(graph: KnowledgeGraph, shapes_path, claim) -> bool:
    data = rdflib.Graph()
    for s, p, o in [*graph.triples(), claim]:
        data.add((rdflib.URIRef(s), rdflib.URIRef(p), rdflib.URIRef(o)))
    conforms, _, _ = pyshacl.validate(data, shacl_graph=rdflib.Graph().parse(shapes_path), inference="none")
    return not conforms


def agrees_with_pyshacl(graph, lic, shapes_path, nodes, preds) -> list[str]:
    """Adding each claim makes pyshacl report a violation iff the licenser says C; the labels seen."""
    labels = []
    for s, o, p in itertools.product(nodes, nodes, preds):
        claim = (EX + s, EX + p, EX + o)
        if claim in graph or s == o:
            continue
        verdict = lic.judge(*claim)
        assert (verdict.label == "C") == _pyshacl_flags(graph, shapes_path, claim), (claim, verdict)
        labels.append(verdict.label)
    return labels


def test_differential_against_pyshacl(world, tmp_path):
    """Typed objects: the licenser's C is exactly pyshacl's violation."""
    graph, _, lic = world
    labels = agrees_with_pyshacl(graph, lic, tmp_path / "s.ttl", ["a", "b", "c", "lake1", "lake2", "county"],
                                 ["mouth", "tributary"])
    assert len(labels) > 50 and set(labels) == {"C", "U"}


CAPITAL_DATA = """@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Capital rdfs:subClassOf ex:City .
ex:fr a ex:Country ; ex:capital ex:paris ; ex:border ex:de .
ex:de a ex:Country ; ex:capital ex:berlin ; ex:border ex:fr .
ex:aq a ex:Country .
ex:paris a ex:Capital . ex:berlin a ex:City . ex:lyon a ex:City ; ex:country ex:fr .
ex:europe a ex:Continent .
"""
CAPITAL_SHAPES = """@prefix ex: <http://ex.org/> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
ex:CapitalShape a sh:NodeShape ; sh:targetSubjectsOf ex:capital ; sh:class ex:Country ;
    sh:property [ sh:path ex:capital ; sh:class ex:City ] .
ex:CountryShape a sh:NodeShape ; sh:targetClass ex:Country ;
    sh:property [ sh:path ex:capital ; sh:maxCount 1 ] ;
    sh:property [ sh:path ex:border ; sh:class ex:Country ; sh:disjoint ex:country ] .
ex:CityShape a sh:NodeShape ; sh:targetSubjectsOf ex:country ;
    sh:property [ sh:path ex:country ; sh:maxCount 1 ; sh:class ex:Country ] .
"""


def test_differential_node_class_target_class_and_disjoint(tmp_path):
    """Same differential check with a focus-node sh:class, sh:targetClass and subclasses."""
    graph, _, lic = make_world(tmp_path, CAPITAL_DATA, CAPITAL_SHAPES)
    labels = agrees_with_pyshacl(graph, lic, tmp_path / "s.ttl", ["fr", "de", "aq", "paris", "berlin", "lyon", "europe"],
                                 ["capital", "country", "border"])
    assert set(labels) == {"C", "U"}
    assert lic.judge(EX + "lyon", EX + "capital", EX + "berlin").reason.startswith("sh:class Country on CapitalShape")
    assert lic.judge(EX + "fr", EX + "country", EX + "de").reason.startswith("sh:disjoint border / country")
