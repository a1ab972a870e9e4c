"""Unknowns of three kinds: open world (today's), held out (true, withheld from the card and from
every system's view) and nonexistent (invented names)."""

from __future__ import annotations

import asyncio
import collections

import pytest
from omegaconf import OmegaConf

from audit.epistemic.cards import INVENTED, generate_cards, withhold
from audit.epistemic.domain import load_domain
from audit.epistemic.metrics import compute_metrics
from audit.epistemic.pipeline import result_row
from audit.epistemic.systems import kg_oracle
from audit.paths import CONF_DIR
from audit.record.answers import Card

N = 25


def fresh():
    return load_domain(OmegaConf.load(f"{CONF_DIR}/domain/rivers.yaml"),
                       OmegaConf.load(f"{CONF_DIR}/predicate/has_mouth.yaml"))


@pytest.fixture(scope="module")
def full():
    return fresh()


@pytest.fixture(scope="module")
def run():
    domain = fresh()
    return domain, generate_cards(domain, num_per_type=N, seed=2, suites=("standard", "held_out", "nonexistent"))


def test_held_out_claims_are_true_in_the_full_graph_and_absent_from_every_systems_view(full, run) -> None:
    domain, cards = run
    held = [c for c in cards if c["suite"] == "held_out"]
    assert len(held) == N and all(c["label"] == "U" and c["u_kind"] == "held_out" for c in held)
    oracle = kg_oracle.create(OmegaConf.create({"name": "kg_oracle"}), domain=domain, gateway=None)
    view = {domain.verbalise(*t) for t in domain.all_facts()}  # what rag retrieves from
    for c in held:
        s, p, o = c["claim"]["subj"], c["claim"]["pred"], c["claim"]["obj"]
        assert (s, p, o) in full.graph  # true
        assert (s, p, o) not in domain.graph and all(tuple(t) not in domain.graph for t in c["withheld"])
        assert full.verbalise(s, p, o) not in view and full.verbalise(s, p, o) not in c["facts"]
        assert [o, "http://worldmind.ai/rivers-v4#hasTributary", s] in c["withheld"]  # both directions
        assert asyncio.run(oracle.answer(Card.model_validate(c))).pred == "UNKNOWN"


def test_other_cards_keep_their_labels_when_facts_are_held_out(run) -> None:
    domain, cards = run
    for c in cards:
        if c["suite"] == "standard":
            assert domain.licenser.judge(c["claim"]["subj"], c["claim"]["pred"], c["claim"]["obj"]).label == c["label"]


def test_reused_cards_withhold_the_same_facts_again(run) -> None:
    _, cards = run
    again = fresh()
    assert withhold(again, cards) == sum(len(c.get("withheld", ())) for c in cards) > 0
    assert withhold(again, cards) == 0  # idempotent


def test_nonexistent_subjects_are_in_no_graph(full, run) -> None:
    _, cards = run
    invented = [c for c in cards if c["suite"] == "nonexistent"]
    labels = {full.label(s).casefold() for s, _, _ in full.graph.triples()}
    assert len(invented) == N and len({c["claim"]["subj"] for c in invented}) == N
    for c in invented:
        s = c["claim"]["subj"]
        assert s.startswith(INVENTED) and c["label"] == "U" and c["u_kind"] == "nonexistent"
        assert not full.graph.types(s) and not list(full.graph.outgoing(s)) and not full.graph.incoming(s)
        assert full.label(s).casefold() not in labels


def test_metrics_report_each_u_kind_apart(run) -> None:
    _, cards = run
    from audit.epistemic.systems.base import Reply

    # a system that answers NO to every U card: its NO share is 1 on every kind, shown apart
    rows = [result_row(Card.model_validate(c), "denier", Reply(pred="NO" if c["label"] == "U" else c["gold"], reason="")) for c in cards]
    kinds = compute_metrics(rows)["denier"]["u_kinds"]
    assert sorted(kinds) == ["held_out", "nonexistent", "open_world"]
    assert collections.Counter({k: v["n_rows"] for k, v in kinds.items()}) == {"held_out": N, "nonexistent": N, "open_world": N}
    assert all(v["metrics"]["NO_on_U"]["value"] == 1.0 for v in kinds.values())


def test_held_out_is_short_rather_than_stated_and_says_so() -> None:
    """When other cards state every fact of a small predicate, none can be held out: the suite is
    short (a printed note), never made of facts some card states."""
    from audit.epistemic.cards import shortfall

    domain = fresh()
    cards = generate_cards(domain, num_per_type=3000, seed=0, suites=("held_out",))
    assert 0 < len(cards) < 3000 and all(c["suite"] == "held_out" for c in cards)
    assert shortfall(cards, 3000, ["held_out"]) == [f"held_out: {len(cards)} U cards of 3000 (the graph has no more)"]
    assert shortfall([], 5, ["held_out"]) == ["held_out: 0 U cards of 5 (the graph has no more)"]
