"""KnowledgeGraph loading: syntax errors name file and line, empty graphs are refused."""

from __future__ import annotations

import pytest

from audit.epistemic.graph import KnowledgeGraph, Literal
from audit.errors import UserError

TTL = """@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:a ex:p ex:b ; rdfs:label "A" .
ex:b ex:name "ex:a" .
"""


def test_load_indexes_triples_and_keeps_literals_apart(tmp_path):
    path = tmp_path / "g.ttl"
    path.write_text(TTL)
    g = KnowledgeGraph.load(path)
    assert len(g) == 3
    assert ("http://ex.org/a", "http://ex.org/p", "http://ex.org/b") in g
    assert ("http://ex.org/b", "http://ex.org/name", "http://ex.org/a") not in g  # a literal, not the IRI
    assert g.objects("http://ex.org/b", "http://ex.org/name") == [Literal("ex:a")]
    assert g.label("http://ex.org/a") == "A"
    assert g.label("http://ex.org/b") == "b"
    assert g.incoming("http://ex.org/b") == [("http://ex.org/a", "http://ex.org/p")]


def test_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "broken.ttl"
    path.write_text("@prefix ex: <http://ex.org/> .\nex:a ex:p ex:b .\nex:c ex:p ex:d ex:e .\n")
    with pytest.raises(UserError, match=r"broken\.ttl: RDF syntax error at line 3"):
        KnowledgeGraph.load(path)


def test_empty_graph_is_refused(tmp_path):
    path = tmp_path / "empty.ttl"
    path.write_text("@prefix ex: <http://ex.org/> .\n# nothing here\n")
    with pytest.raises(UserError, match="empty"):
        KnowledgeGraph.load(path)


def test_remove_sets_edges_aside(tmp_path):
    path = tmp_path / "g.ttl"
    path.write_text(TTL)
    g = KnowledgeGraph.load(path)
    assert g.remove("http://ex.org/a", "http://ex.org/p") == ["http://ex.org/b"]
    assert len(g) == 2
    assert g.incoming("http://ex.org/b") == []
    assert g.subjects("http://ex.org/p") == []


def test_snapshot_reloads_the_same_graph(tmp_path):
    path = tmp_path / "g.nt"
    path.write_text('<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .\n'
                    '<http://ex.org/a> <http://www.w3.org/2000/01/rdf-schema#label> "A" .\n')
    first = KnowledgeGraph.load(path, snapshot=True)
    assert (tmp_path / "g.nt.idx").is_file()
    second = KnowledgeGraph.load(path, snapshot=True)
    assert sorted(second.triples()) == sorted(first.triples()) and len(second) == 2
    assert second.label("http://ex.org/a") == "A"
