"""Rivers builder: IRI repair, duplicate merge, mouth typing, one mouth per river."""

from __future__ import annotations

import json

import pytest

from audit.epistemic.build.rivers import DBR, HAS_MOUTH, build, classify, repair_iri
from audit.epistemic.graph import KnowledgeGraph
from audit.errors import UserError

STATES = frozenset({"Tennessee", "Pennsylvania", "Oklahoma"})
MANGLED = DBR + "http_//dbpedia.org/resource/"


def card(subj, obj, facts):
    return json.dumps({"facts": facts, "claim": {"subj": DBR + subj, "pred": HAS_MOUTH, "obj": obj}}) + "\n"


def test_repair_iri():
    assert repair_iri(MANGLED + "Washita_River") == DBR + "Washita_River"
    assert repair_iri(DBR + "Washita_River") == DBR + "Washita_River"


def test_classify():
    assert classify("Lake Michigan", STATES)[0] == "Lake"
    assert classify("Youghiogheny River Lake", STATES)[0] == "Lake"
    assert classify("Dyer County Tennessee", STATES)[0] == "County"
    assert classify("Sausal Creek San Mateo County", STATES)[0] == "River"
    assert classify("Pennsylvania", STATES)[0] == "State"
    assert classify("confluence with the Kansas River", STATES) is None
    assert classify("Norton Sound", STATES)[1] < classify("Bering Sea", STATES)[1]


def test_build_repairs_merges_and_keeps_most_specific(tmp_path):
    src = tmp_path / "cards"
    src.mkdir()
    (src / "a.jsonl").write_text(
        card("Sugar_Creek", MANGLED + "Washita_River", ["Sugar Creek mouth Washita River"])
        + card("Bear_Creek", DBR + "Washita_River", ["Bear Creek mouth Washita River",
                                                      "Bear Creek DOES NOT have mouth: Red River (not in database)"])
        + card("Nome_River", MANGLED + "Norton_Sound", ["Nome River mouth Norton Sound", "Nome River mouth Bering Sea"])
        + card("Oak_Run", MANGLED + "x", ["Oak Run mouth confluence with the Washita River"])
    )
    out = tmp_path / "rivers.ttl"
    rivers = build(src, out)
    g = KnowledgeGraph.load(out)
    washita = DBR + "Washita_River"
    assert g.objects(DBR + "Sugar_Creek", HAS_MOUTH) == [washita]
    assert g.objects(DBR + "Bear_Creek", HAS_MOUTH) == [washita]      # one node for both IRIs
    assert not any("http_//" in s or "http_//" in o for s, _, o in g.triples())
    assert g.objects(DBR + "Nome_River", HAS_MOUTH) == [DBR + "Norton_Sound"]
    assert rivers.coarser[DBR + "Nome_River"] == [DBR + "Bering_Sea"]
    assert g.objects(DBR + "Oak_Run", HAS_MOUTH) == []                 # free text dropped
    assert g.objects(DBR + "Bear_Creek", HAS_MOUTH) != [DBR + "Red_River"]  # marker lines are not edges


def test_a_card_file_that_is_not_world_mind_cards_is_a_one_line_error(tmp_path):
    src = tmp_path / "cards"
    src.mkdir()
    (src / "a.jsonl").write_text(card("Sugar_Creek", DBR + "Washita_River", ["Sugar Creek mouth Washita River"])
                                 + json.dumps({"facts": [], "claim": {"subj": "x"}}) + "\n")
    with pytest.raises(UserError, match=r"a\.jsonl line 2: not a world_mind card"):
        build(src, tmp_path / "rivers.ttl")
    (src / "a.jsonl").write_text("{oops\n")
    with pytest.raises(UserError, match=r"a\.jsonl line 1: not valid JSON"):
        build(src, tmp_path / "rivers.ttl")
    assert not (tmp_path / "rivers.ttl").exists()
