"""Near misses that are near, and no card whose object is its subject (both domains, every
predicate, several seeds)."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from audit.epistemic.cards import SUITES, generate_cards, held_out_drops, name_gives_away, shortfall
from audit.epistemic.domain import Domain, available_predicates, load_domain
from audit.epistemic.graph import local_name
from audit.epistemic.rules import REASON_PREFIX, rules
from audit.paths import CONF_DIR

SEEDS = (0, 1, 2)


def conf(group: str, name: str):
    return OmegaConf.load(f"{CONF_DIR}/{group}/{name}.yaml")


@pytest.fixture(scope="module")
def geography_cfg(tmp_path_factory: pytest.TempPathFactory):
    """The shipped small geography graph, built once for this module."""
    cfg = conf("domain", "geography")
    cfg.cache_dir = str(tmp_path_factory.mktemp("geo"))
    return cfg


def domains(geography_cfg) -> list[Domain]:
    out = [load_domain(conf("domain", "rivers"), conf("predicate", "has_mouth"))]
    out += [load_domain(geography_cfg, p) for p in available_predicates("geography").values()]
    return out


@pytest.fixture(scope="module")
def loaded(geography_cfg) -> list[Domain]:
    """:func:`domains` loaded once for the module's tests that leave the graph as it is (every suite but
    held_out, and the rules): each load reads and checks the graph again (~0.2-0.7 CPU-s)."""
    return domains(geography_cfg)


@pytest.fixture(scope="module")
def generated(geography_cfg, loaded) -> list[tuple[Domain, int, list[dict]]]:
    # held_out last and on its own domain copy: it withholds edges, and the near-miss relations
    # below are checked against the graph as it was when the near misses were drawn
    out = [(d, seed, generate_cards(d, num_per_type=10, seed=seed, suites=[x for x in SUITES if x != "held_out"]))
           for d in loaded for seed in SEEDS]
    held = [(d, 0, generate_cards(d, num_per_type=10, seed=0, suites=("held_out",))) for d in domains(geography_cfg)]
    return out + held


def test_every_predicate_of_both_domains_is_covered(generated) -> None:
    names = {d.predicate.name for d, _, _ in generated}
    assert names == {"has_mouth", *available_predicates("geography")}


def test_no_card_asks_whether_a_thing_is_its_own_object(generated) -> None:
    for d, seed, cards in generated:
        loops = [c["question"] for c in cards if c["claim"]["subj"] == c["claim"]["obj"]]
        assert not loops, (d.predicate.name, seed, loops[:3])


def test_near_miss_objects_are_of_the_true_objects_class_and_say_why(generated) -> None:
    checked = collections.Counter()
    for d, _seed, cards in generated:
        g, p = d.graph, d.predicate.iri
        object_kinds = {t for s in g.subjects(p) for o in g.nodes(s, p) for t in g.types(o)}
        for c in cards:
            if c["suite"] != "near_miss" or c["label"] == "E":
                assert "near" not in c
                continue
            s, o, near = c["claim"]["subj"], c["claim"]["obj"], c["near"]
            true = g.objects(s, p)
            kinds = object_kinds if near["to"] == "subject" else {t for x in true for t in g.types(x)}
            assert near["to"] == ("true object" if true else "subject"), c
            assert set(g.types(o)) & kinds, (d.predicate.name, c["question"], near)
            assert o not in true and o != s
            ref = near["ref"]
            assert ref in [s, *true] and near["of"] == d.label(ref), near
            q = next((x for x in d.parents if local_name(x) == near["via"]), None)
            # the recorded relation holds in the graph
            if near["relation"] == "parent":
                assert o in g.objects(ref, q)
            elif near["relation"] == "sibling":
                assert set(g.objects(ref, q)) & set(g.objects(o, q))
            elif near["relation"] == "child":
                assert ref in g.objects(o, q)
            elif near["relation"] == "grandchild":
                assert any(ref in g.objects(y, q) for y in g.objects(o, q))
            else:
                assert near["relation"] == "same class" and not any(g.objects(ref, x) for x in d.parents)
            checked[near["relation"]] += 1
    assert checked["sibling"] and checked["parent"] and checked["child"] and checked["grandchild"]


def test_a_near_miss_suite_is_short_rather_than_far(loaded) -> None:
    """No same-class object contradicts a has_neighbour claim (countries border many countries):
    the near_miss suite then has no C cards, and says so, rather than offering a far object."""
    (d,) = [d for d in loaded if d.predicate.name == "has_neighbour"]
    cards = generate_cards(d, num_per_type=10, seed=0, suites=("near_miss",))
    assert not [c for c in cards if c["label"] == "C"]
    assert "near_miss: 0 C cards of 10 (the graph has no more)" in shortfall(cards, 10)


def test_rivers_near_misses_fill_the_default_suite() -> None:
    d = load_domain(conf("domain", "rivers"), conf("predicate", "has_mouth"))
    cards = generate_cards(d, num_per_type=200, seed=0, suites=("near_miss",))
    assert shortfall(cards, 200) == []
    assert Path(CONF_DIR, "domain", "rivers.yaml").read_text().count("parents:") == 1


def test_no_held_out_cards_answer_is_in_its_names_or_another_cards_context(generated) -> None:
    """Issue 26: "Is Columbia County, Oregon in the US state of Oregon?" measures reading the name,
    not knowledge; nor may another card's context state a held-out fact (checked here on plain
    casefolded substrings, independently of the generator's word-start rule)."""
    held = 0
    for d, _seed, cards in generated:
        stated = {f for c in cards for f in c["facts"]}
        for c in cards:
            if c["suite"] != "held_out":
                continue
            held += 1
            subj, obj = (d.label(c["claim"][k]).casefold() for k in ("subj", "obj"))
            assert obj not in subj and subj not in obj, c["question"]
            # nor two words in a row ("Camp Branch (Rocky River tributary)", "Rocky River North Carolina")
            words = [re.findall(r"\w+", x) for x in (subj, obj)]
            assert not set(zip(words[0], words[0][1:])) & set(zip(words[1], words[1][1:])), c["question"]
            s, p, o = c["withheld"][0]
            assert d.verbalise(s, p, o) not in stated, c["question"]
    assert held >= 40


class _Labels:
    """Names as their own labels, for :func:`name_gives_away` alone."""

    @staticmethod
    def label(name: str) -> str:
        return name


@pytest.mark.parametrize("subject, obj, leaks", [
    ("Mill Creek (Uwharrie River tributary)", "Uwharrie River", True),
    ("Camp Branch (Rocky River tributary)", "Rocky River North Carolina", True),  # issue 26, second round
    ("Jersey City", "New Jersey", True),
    ("Devils Brook", "Shallow Brook", False),
    ("Alder Creek (Saguache County, Colorado)", "San Luis Creek Colorado", False),  # a region, not the answer
])
def test_a_name_gives_the_answer_away_also_through_the_others_disambiguator(subject: str, obj: str, leaks: bool) -> None:
    assert name_gives_away(_Labels, subject, obj) is leaks  # type: ignore[arg-type]


def test_held_out_drops_are_counted_per_reason_and_said(geography_cfg) -> None:
    domain = load_domain(geography_cfg, conf("predicate", "located_in_state"))
    dropped: dict[str, int] = {}
    cards = generate_cards(domain, num_per_type=30, seed=0, suites=("standard", "held_out"), dropped=dropped)
    assert sum(c["suite"] == "held_out" for c in cards) == 30
    assert dropped["name"] >= 10  # most US counties carry their state's name
    (line, *_) = held_out_drops(dropped, "located_in_state")
    assert line.startswith("held_out (located_in_state): dropped") and "name" in " ".join(held_out_drops(dropped, "x"))


def test_grounded_c_cards_state_the_rule_their_label_rests_on_in_every_predicate(loaded) -> None:
    """A C label may rest on another property's shape (geography: "a country does not border the
    country it lies in" decides located_in_country claims): the grounded card states that rule too."""
    borders = "If a place borders X, then X is not its country."
    assert borders in [r.sentence for d in loaded for r in rules(d) if d.predicate.name == "located_in_country"]
    for d in loaded:
        stated = {r.kind for r in rules(d)}
        cards = generate_cards(d, num_per_type=60 if d.predicate.name == "located_in_country" else 15, seed=0,
                               suites=("grounded",))
        for c in cards:
            if c["label"] == "C":
                kinds = [k for k, prefix in REASON_PREFIX.items() if c["reason"].startswith(prefix)]
                assert set(kinds) & stated, (d.predicate.name, c["reason"])
                if c["reason"].startswith("sh:disjoint"):
                    assert any(r.kind == "disjoint" and r.sentence in c["facts"] for r in rules(d)), c
