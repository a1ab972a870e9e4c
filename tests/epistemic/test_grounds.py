"""Cards that state their grounds: constraints in words (grounded suite) and explicit negative
facts (negation suite), labelled by what the card says."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from audit.epistemic.cards import DEFAULT_SUITES, generate_cards
from audit.epistemic.domain import load_domain
from audit.epistemic.rules import REASON_PREFIX, rules
from audit.epistemic.shapes import load_shapes
from audit.paths import CONF_DIR

N = 15


def conf(group: str, name: str):
    return OmegaConf.load(f"{CONF_DIR}/{group}/{name}.yaml")


@pytest.fixture(scope="module")
def rivers():
    return load_domain(conf("domain", "rivers"), conf("predicate", "has_mouth"))


@pytest.fixture(scope="module")
def cards(rivers):
    return generate_cards(rivers, num_per_type=N, seed=4, suites=("standard", "grounded", "negation"))


def test_each_shape_kind_the_rivers_domain_uses_is_said_in_words(rivers) -> None:
    assert [(r.kind, r.sentence) for r in rules(rivers)] == [
        ("max_count", "A geographic feature has at most one mouth."),
        ("class", "The mouth of a geographic feature is always a water body."),
        ("disjoint", "If a geographic feature has tributary X, then X is not its mouth."),
    ]


def test_a_node_class_and_a_larger_max_count_are_said_in_words(rivers, tmp_path: Path) -> None:
    """focus_class (sh:class on the node shape, as geography's CapitalShape) and sh:maxCount > 1."""
    shapes = tmp_path / "shapes.ttl"
    shapes.write_text("""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix wm: <http://worldmind.ai/rivers-v4#> .
wm:S a sh:NodeShape ; sh:targetSubjectsOf wm:hasMouth ; sh:class wm:River ;
    sh:property [ sh:path wm:hasMouth ; sh:maxCount 2 ] .
""")
    rivers_with = type(rivers)(rivers.name, rivers.graph, rivers.licenser, rivers.predicate, shapes=load_shapes(shapes))
    assert [(r.kind, r.sentence) for r in rules(rivers_with)] == [
        ("focus_class", "Only a river has a mouth."),
        ("max_count", "A river has at most 2 mouths."),
    ]


def test_geography_capital_rules_name_the_subject_class(tmp_path: Path) -> None:
    from audit.epistemic.build.geography import Scale, cache_path, write_graph

    write_graph(Scale(15000, capital_min_population=15000, countries=frozenset({"FR", "BE"})), cache_path(tmp_path, "small"))
    cfg = conf("domain", "geography")
    cfg.cache_dir = str(tmp_path)
    assert [r.sentence for r in rules(load_domain(cfg))] == [
        "Only a country has a capital.", "A country has at most one capital.", "The capital of a country is always a city."]


def test_grounded_c_cards_state_the_constraint_they_break_and_every_card_states_all(rivers, cards) -> None:
    stated = [r.sentence for r in rules(rivers)]
    by_kind = {r.kind: r.sentence for r in rules(rivers)}
    grounded = [c for c in cards if c["suite"] == "grounded"]
    assert collections.Counter(c["label"] for c in grounded) == {"E": N, "C": N, "U": N}
    for c in grounded:
        assert c["facts"][-len(stated):] == stated  # the same rules on E, C and U cards: no label marker
        if c["label"] == "C":
            kinds = [k for k, prefix in REASON_PREFIX.items() if c["reason"].startswith(prefix) and k in by_kind]
            assert kinds and any(by_kind[k] in c["facts"] for k in kinds), c
    # standard cards do not carry them: the existing suite keeps its behaviour
    assert not any(set(stated) & set(c["facts"]) for c in cards if c["suite"] == "standard")


def test_existing_suites_are_unchanged_by_the_new_ones(rivers, cards) -> None:
    alone = generate_cards(rivers, num_per_type=N, seed=4, suites=("standard",))
    assert [c for c in cards if c["suite"] == "standard"] == alone
    assert set(DEFAULT_SUITES) == {"standard", "distractor", "near_miss"}


def test_negation_cards_are_c_by_their_negative_fact(rivers, cards) -> None:
    negation = [c for c in cards if c["suite"] == "negation"]
    assert collections.Counter(c["label"] for c in negation) == {"E": N, "C": N, "U": N}
    for c in negation:
        nots = [f for f in c["facts"] if " is not the mouth of " in f]
        assert len(nots) == 1, c  # every card has exactly one negative fact: "not" marks no label
        s, o = c["claim"]["subj"], c["claim"]["obj"]
        asked = f"{rivers.label(o)} is not the mouth of {rivers.label(s)}."
        if c["label"] == "C":
            assert nots == [asked] and c["reason"] == f"negated in context: {asked}" and c["gold"] == "NO"
            assert rivers.licenser.judge(s, c["claim"]["pred"], o).label == "U"  # the graph alone leaves it open
        else:
            assert nots != [asked] and rivers.licenser.judge(s, c["claim"]["pred"], o).label == c["label"]
