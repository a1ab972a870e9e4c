"""The card-clustered interval (audit.stats.cards): cards are the unit, their repeats nested."""

from __future__ import annotations

import math
import random

import pytest

from audit.stats.cards import CARD_FALLBACK_METHOD, CLUSTERED_METHOD, RARE_CARD_EVENTS, clustered_card_rate
from audit.stats.intervals import t_975, wilson


def test_identical_repeats_keep_exactly_the_single_run_interval() -> None:
    one = [1] * 41 + [0] * 21
    rate = clustered_card_rate(one * 3, [1] * 186, list(range(62)) * 3)
    single = wilson(41, 62)
    assert rate is not None and single is not None
    assert (rate["value"], rate["lo"], rate["hi"]) == pytest.approx((single["value"], single["lo"], single["hi"]))
    assert (rate["cards"], rate["answers"], rate["repeats"], rate["unit"]) == (62, 186, 3, "cards")
    assert rate["method"] == CARD_FALLBACK_METHOD.format(m=RARE_CARD_EVENTS)


def _reference(ys: list[list[int]], xs: list[list[int]]) -> tuple[float, float, float]:
    """The interval written out by hand for cards answered in lists of repeats: ratio of per-card
    means, delta-method variance over cards, Wilson on the effective size with t(cards - 1)."""
    y = [sum(a) / len(a) for a in ys]
    x = [sum(a) / len(a) for a in xs]
    m, n = len(y), sum(x)
    r = sum(y) / n
    variance = m / (m - 1) * sum((yi - r * xi) ** 2 for yi, xi in zip(y, x)) / n ** 2
    size = min(max(r * (1 - r) / variance, n), sum(sum(a) for a in xs))
    t = t_975(sum(1 for xi in x if xi > 0) - 1)
    centre = (r + t * t / (2 * size)) / (1 + t * t / size)
    half = t * math.sqrt(r * (1 - r) / size + t * t / (4 * size * size)) / (1 + t * t / size)
    return r, centre - half, centre + half


def test_a_ratio_rate_equals_the_reference_and_is_narrower_than_over_cards() -> None:
    """An AP-like rate (the denominator is the card's abstentions, which vary between repeats) over
    120 cards answered 3 times each, repeats disagreeing."""
    rng = random.Random(26)
    ys, xs, cards, ys_by, xs_by = [], [], [], [], []
    for card in range(120):
        entailed, lean = rng.random() < 0.4, rng.random()
        card_y, card_x = [], []
        for _ in range(3):
            abstains = int(rng.random() < (0.4 if entailed else 0.3 + 0.5 * lean))
            card_x.append(abstains)
            card_y.append(abstains * (not entailed))
        ys_by.append(card_y)
        xs_by.append(card_x)
        ys += card_y
        xs += card_x
        cards += [card] * 3
    rate = clustered_card_rate(ys, xs, cards)
    assert rate is not None and rate["method"] == CLUSTERED_METHOD
    assert (rate["value"], rate["lo"], rate["hi"]) == pytest.approx(_reference(ys_by, xs_by))
    over_cards = wilson(rate["k"], rate["n"])  # type: ignore[arg-type]
    assert over_cards is not None and rate["hi"] - rate["lo"] < over_cards["hi"] - over_cards["lo"]
    assert rate["k"] == pytest.approx(sum(sum(a) / 3 for a in ys_by))


def test_a_rare_side_keeps_the_interval_over_cards_and_nothing_counted_is_none() -> None:
    ys = [1, 0, 0] + [0] * 597
    rate = clustered_card_rate(ys, [1] * 600, [i % 200 for i in range(600)])
    assert rate is not None and rate["method"] == CARD_FALLBACK_METHOD.format(m=RARE_CARD_EVENTS)
    assert clustered_card_rate([0, 0], [0, 0], ["a", "a"]) is None
    with pytest.raises(ValueError, match="one entry per answer"):
        clustered_card_rate([1], [1, 1], ["a"])
