"""Shapes compile into licenser records; validation reports and sets violating edges aside."""

from __future__ import annotations

import pytest

from audit.epistemic.graph import KnowledgeGraph
from audit.epistemic.shapes import load_shapes, validate
from audit.errors import UserError

EX = "http://ex.org/"
SHAPES = """@prefix ex: <http://ex.org/> .
@prefix sh: <http://www.w3.org/ns/shacl#> .
ex:S a sh:NodeShape ; sh:targetSubjectsOf ex:capital ;
    sh:property [ sh:path ex:capital ; sh:maxCount 1 ; sh:minCount 1 ; sh:class ex:City ] .
"""


def test_compiles_targets_and_constraints(tmp_path):
    (tmp_path / "s.ttl").write_text(SHAPES)
    shapes = load_shapes(tmp_path / "s.ttl")
    (shape,) = shapes.node_shapes
    assert shape.target_subjects_of == {EX + "capital"}
    (c,) = shape.properties
    assert (c.path, c.max_count, c.classes, c.disjoint) == (EX + "capital", 1, (EX + "City",), ())


def test_uncompilable_component_is_refused(tmp_path):
    (tmp_path / "s.ttl").write_text(SHAPES.replace("sh:minCount 1", 'sh:pattern "^x"'))
    with pytest.raises(UserError, match="property shape on http://ex.org/capital uses .*pattern.*cannot compile"):
        load_shapes(tmp_path / "s.ttl")
    (tmp_path / "s.ttl").write_text(SHAPES.replace("sh:targetSubjectsOf ex:capital ;",
                                                   "sh:targetSubjectsOf ex:capital ; sh:closed true ;"))
    with pytest.raises(UserError, match="shape http://ex.org/S uses .*closed.*cannot compile"):
        load_shapes(tmp_path / "s.ttl")


def test_validate_reports_and_sets_aside(tmp_path):
    (tmp_path / "s.ttl").write_text(SHAPES)
    (tmp_path / "g.ttl").write_text("""@prefix ex: <http://ex.org/> .
ex:fr ex:capital ex:paris . ex:paris a ex:City .
ex:xx ex:capital ex:paris , ex:lyon . ex:lyon a ex:City .
ex:yy ex:capital ex:europe . ex:europe a ex:Continent .
""")
    graph = KnowledgeGraph.load(tmp_path / "g.ttl")
    violations = validate(graph, load_shapes(tmp_path / "s.ttl"))
    assert {(v["focus"], v["message"].split(":")[0]) for v in violations} == {
        (EX + "xx", "MaxCountConstraintComponent"), (EX + "yy", "ClassConstraintComponent")}
    assert graph.subjects(EX + "capital") == [EX + "fr"]


def test_node_class_violation_sets_aside_the_edges_that_made_the_focus(tmp_path):
    """A node shape's own sh:class has no result path: the focus's targetSubjectsOf edges go."""
    (tmp_path / "s.ttl").write_text(SHAPES.replace("sh:targetSubjectsOf ex:capital ;",
                                                   "sh:targetSubjectsOf ex:capital ; sh:class ex:Country ;"))
    (tmp_path / "g.ttl").write_text("""@prefix ex: <http://ex.org/> .
ex:fr a ex:Country ; ex:capital ex:paris . ex:paris a ex:City ; ex:capital ex:lyon . ex:lyon a ex:City .
""")
    graph = KnowledgeGraph.load(tmp_path / "g.ttl")
    (v,) = validate(graph, load_shapes(tmp_path / "s.ttl"))
    assert (v["focus"], v["path"]) == (EX + "paris", EX + "capital")
    assert graph.subjects(EX + "capital") == [EX + "fr"]
