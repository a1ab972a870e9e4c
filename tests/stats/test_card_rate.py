"""Card-level intervals (audit.stats.card_rate): the card is the unit, whatever the repeats."""

from __future__ import annotations

import math
import random

import pytest

from audit.stats.intervals import CARD_METHOD, card_rate, cluster_rate, wilson


def test_identical_repeats_give_exactly_the_single_run_interval() -> None:
    # 62 cards, 41 answered right; three runs that agree card for card
    one = [1] * 41 + [0] * 21
    single = wilson(41, 62)
    for per_card in (True, False):
        if per_card:  # one entry per (card, repeat)
            ks = one * 3
            ns = [1] * 186
            cards = list(range(62)) * 3
        else:  # one entry per run, all three over the same card set
            ks, ns, cards = [41, 41, 41], [62, 62, 62], ["seed0"] * 3
        rate = card_rate(ks, ns, cards)
        assert rate is not None
        assert {k: rate[k] for k in single} == single
        assert (rate["cards"], rate["method"]) == ((62 if per_card else 1), CARD_METHOD)
    # the run-level interval over the same three runs keeps a width too (never a point)
    over_runs = cluster_rate([41, 41, 41], [62, 62, 62])
    assert over_runs is not None and over_runs["lo"] < 41 / 62 < over_runs["hi"]


def test_repeats_never_shrink_the_interval() -> None:
    rng = random.Random(5)
    base = [rng.random() < 0.6 for _ in range(50)]
    single = card_rate([int(b) for b in base], [1] * 50, list(range(50)))
    assert single is not None
    for repeats in (2, 5, 20):
        ks = [int(b) if rng.random() < 0.8 else int(not b) for _ in range(repeats) for b in base]
        cards = [c for _ in range(repeats) for c in range(50)]
        rate = card_rate(ks, [1] * len(ks), cards)
        assert rate is not None and rate["n"] == pytest.approx(50) and rate["answerings"] == 50 * repeats
        # disagreeing repeats pull per-card means to the middle; the card count stays 50
        width = rate["hi"] - rate["lo"]
        assert width >= wilson(round(rate["value"] * 50), 50)["hi"] - wilson(round(rate["value"] * 50), 50)["lo"] - 0.02  # type: ignore[index]


def test_distinct_card_sets_add_their_cards_and_skip_empty_ones() -> None:
    rate = card_rate([10, 12, 20, math.nan], [20, 20, 40, math.nan], ["a", "a", "b", "c"])
    assert rate is not None
    assert (rate["k"], rate["n"], rate["cards"]) == (31, 60, 2)  # mean of set a (11/20) plus set b
    assert card_rate([0], [0], ["a"]) is None and card_rate([], [], []) is None
    with pytest.raises(ValueError, match="one entry per answering"):
        card_rate([1], [1, 2], ["a"])


def test_card_interval_covers_in_simulation() -> None:
    """Cards differ in difficulty (p_c ~ Beta), each answered R times; the estimand is the
    mean p over cards. Wilson on per-card means must cover ~95%; pooling the answers as if
    independent (what counting every repeat does) must not."""
    rng = random.Random(20261123)
    trials, cards, repeats = 1500, 60, 3
    covered_card = covered_pooled = 0
    for _ in range(trials):
        ps = [rng.betavariate(0.6, 0.4) for _ in range(cards)]
        truth = 0.6  # the mean of Beta(0.6, 0.4): cards are drawn from the population
        ks = [int(rng.random() < p) for _ in range(repeats) for p in ps]
        ids = [c for _ in range(repeats) for c in range(cards)]
        rate = card_rate(ks, [1] * len(ks), ids)
        pooled = wilson(sum(ks), len(ks))
        assert rate is not None and pooled is not None
        covered_card += rate["lo"] <= truth <= rate["hi"]
        covered_pooled += pooled["lo"] <= truth <= pooled["hi"]
    assert covered_card / trials >= 0.93
    assert covered_pooled / trials < 0.90  # the repeat-counting interval is too narrow
