"""Card generation: balanced, seeded, unique, labelled by the licenser, no label markers."""

from __future__ import annotations

import collections
import json
import re

import pytest
from omegaconf import OmegaConf

from audit.epistemic.cards import GOLD, generate_cards, read_cards
from audit.epistemic.domain import load_domain
from audit.errors import UserError
from audit.paths import CONF_DIR


@pytest.fixture(scope="module")
def domain():
    return load_domain(OmegaConf.load(f"{CONF_DIR}/domain/rivers.yaml"))


@pytest.fixture(scope="module")
def cards(domain):
    return generate_cards(domain, num_per_type=30, seed=7)


def test_balanced_per_suite(cards):
    counts = collections.Counter((c["suite"], c["label"]) for c in cards)
    assert counts == {(s, lab): 30 for s in ("standard", "distractor", "near_miss") for lab in "ECU"}


def test_seeded_reproducible(domain, cards):
    assert generate_cards(domain, num_per_type=30, seed=7) == cards
    assert generate_cards(domain, num_per_type=30, seed=8) != cards


def test_unique_ids_and_claims(cards):
    assert len({c["id"] for c in cards}) == len(cards)
    claims = [(c["suite"], c["claim"]["subj"], c["claim"]["obj"]) for c in cards]
    assert len(set(claims)) == len(claims)


def test_two_card_sets_draw_some_of_the_same_claims_under_other_ids(domain, cards):
    """Why the comparison names a card by its suite, label and claim, not its id
    (audit.compare.card_answers.card_identity): a larger set of the same seed shares claims with
    this one (52 of 270 here), some under another id, and ids are positions that name other claims."""
    larger = generate_cards(domain, num_per_type=60, seed=7)
    ids = {(c["suite"], c["label"], c["claim"]["subj"], c["claim"]["obj"]): c["id"] for c in larger}
    shared = {c["id"]: ids[key] for c in cards
              if (key := (c["suite"], c["label"], c["claim"]["subj"], c["claim"]["obj"])) in ids}
    assert len(shared) >= 20 and any(mine != theirs for mine, theirs in shared.items())
    by_id = {c["id"]: c["claim"] for c in larger}
    assert any(by_id.get(c["id"]) not in (None, c["claim"]) for c in cards)


def test_labels_agree_with_licenser(domain, cards):
    for c in cards:
        v = domain.licenser.judge(c["claim"]["subj"], c["claim"]["pred"], c["claim"]["obj"])
        assert (c["label"], c["reason"], c["gold"]) == (v.label, v.reason, GOLD[v.label])
    reasons = {c["reason"].split(" ")[0] for c in cards if c["label"] == "C"}
    assert reasons == {"sh:maxCount", "sh:class", "sh:disjoint"}  # every kind of refutation occurs


def test_no_label_markers_in_text(cards):
    markers = re.compile(r"DOES NOT|not in database|\bnot\b|unknown|contradict|entail", re.I)
    for c in cards:
        text = " ".join(c["facts"]) + " " + c["question"]
        assert not markers.search(text), c


def test_contradiction_is_inferable_from_facts(domain, cards):
    for c in cards:
        if c["label"] == "C" and c["reason"].startswith("sh:maxCount"):
            true = domain.graph.objects(c["claim"]["subj"], c["claim"]["pred"])[0]
            assert domain.verbalise(c["claim"]["subj"], c["claim"]["pred"], true) in c["facts"]


def test_too_many_requested_fails_clearly(domain):
    with pytest.raises(UserError, match="lower num_per_type"):
        generate_cards(domain, num_per_type=100_000, seed=0, suites=("standard",))


def test_read_cards_roundtrip_and_errors(tmp_path, cards):
    path = tmp_path / "cards.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cards[:5]))
    assert read_cards(path) == cards[:5]
    broken = dict(cards[1], gold="YES" if cards[1]["label"] != "E" else "NO")
    path.write_text(json.dumps(cards[0]) + "\n" + json.dumps(broken) + "\n")
    with pytest.raises(UserError, match=r"cards\.jsonl line 2: .*regenerate"):
        read_cards(path)
    path.write_text("{not json\n")
    with pytest.raises(UserError, match=r"line 1: not valid JSON"):
        read_cards(path)


@pytest.mark.parametrize("change, said", [
    (lambda c: c.pop("question"), "question: Field required"),
    (lambda c: c.update(id=7), "id: Input should be a valid string"),
    (lambda c: c.update(facts="one fact"), "facts: Input should be a valid list"),
    (lambda c: c.update(label="E", gold="NO"), "label: label 'E' / gold 'NO' is not one of E/YES, C/NO, U/UNKNOWN"),
    (lambda c: c.update(suite="hard"), "suite: unknown suite 'hard' (known: standard, distractor, near_miss,"),
    (lambda c: c["claim"].pop("obj"), "claim.obj: Field required"),
    (lambda c: c["claim"].update(graph="g"), "claim.graph: Extra inputs are not permitted"),
])
def test_a_bad_card_is_one_line_naming_file_line_field_and_fix(tmp_path, cards, change, said):
    """The typed card (audit.record.answers.CardToAnswer) is the one check; read_cards names where."""
    bad = json.loads(json.dumps(cards[1]))
    change(bad)
    path = tmp_path / "cards.jsonl"
    path.write_text(json.dumps(cards[0]) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(UserError) as caught:
        read_cards(path)
    message = str(caught.value)
    assert message.startswith(f"cards.jsonl line 2: {said}") and "\n" not in message
    assert message.endswith("; regenerate with python -m audit.epistemic")


def test_a_card_id_twice_and_an_empty_file_are_refused(tmp_path, cards):
    path = tmp_path / "cards.jsonl"
    path.write_text(json.dumps(cards[0]) + "\n" + json.dumps(dict(cards[1], id=cards[0]["id"])) + "\n")
    with pytest.raises(UserError, match=rf"^cards\.jsonl line 2: duplicate id '{cards[0]['id']}'; regenerate"):
        read_cards(path)
    path.write_text("\n")
    with pytest.raises(UserError, match=r"cards\.jsonl: no cards; regenerate"):
        read_cards(path)
