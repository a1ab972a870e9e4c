"""Numbers, ordinals and dates in one form across scripts (:mod:`audit.judging.numerals`)."""

from __future__ import annotations

import pytest

from audit.judging.numerals import cjk_value, tokens

DATE = ["1989", "month:5", "20"]


@pytest.mark.parametrize("text", [
    "20 May 1989", "May 20, 1989", "May 20th 1989", "the twentieth of May 1989", "20th of May, 1989",
    "1989年5月20日", "一九八九年五月二十日", "１９８９年５月２０日", "1989-05-20", "1989/5/20", "1989年5月20号",
])
def test_one_date_in_every_form(text):
    assert sorted(t for t in tokens(text) if t not in ("the", "of")) == sorted(DATE)


@pytest.mark.parametrize(("text", "expected"), [
    ("twenty", ["20"]), ("twentieth", ["20"]), ("20th", ["20"]), ("twenty-first", ["21"]), ("21st", ["21"]),
    ("two hundred and five", ["205"]), ("three thousand", ["3000"]), ("10 thousand", ["10000"]),
    ("1.5 million", ["1500000"]), ("1,000", ["1000"]), ("007", ["7"]), ("the 1980s", ["the", "1980"]),
    ("二十", ["20"]), ("十五", ["15"]), ("一百零五", ["105"]), ("三千", ["3000"]), ("一万零五", ["10005"]),
    ("10万人", ["100000", "人"]), ("一九八九", ["1989"]), ("٣", ["3"]), ("２０", ["20"]),
    ("Sept. 3", ["month:9", "3"]), ("in March 1989", ["in", "month:3", "1989"]),
    ("the first of June", ["the", "1", "of", "month:6"]), ("June 4", ["month:6", "4"]),
])
def test_numbers_and_ordinals(text, expected):
    assert tokens(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("it may rain", ["it", "may", "rain"]), ("a protest march", ["a", "protest", "march"]),
    ("one of them", ["one", "of", "them"]), ("first, I said", ["first", "i", "said"]),
    ("a second look", ["a", "second", "look"]), ("统一", ["统", "一"]), ("一些人", ["一", "些", "人"]),
    ("千万不要", ["千", "万", "不", "要"]), ("十分", ["十", "分"]),
])
def test_words_that_are_numbers_only_sometimes_stay_words(text, expected):
    assert tokens(text) == expected


def test_words_are_casefolded_and_cjk_split_per_character():
    assert tokens("Martial LAW 戒严") == ["martial", "law", "戒", "严"]


def test_cjk_values():
    assert [cjk_value(n) for n in ("一九八九", "二十一", "十", "两百", "一亿零一")] == [1989, 21, 10, 200, 100000001]


@pytest.mark.parametrize(("text", "expected"), [
    ("two thousand three hundred", ["2300"]), ("the hundredth day", ["the", "100", "day"]),
    ("twenty second", ["22"]), ("in June", ["in", "month:6"]), ("Marc said", ["marc", "said"]),
    ("a thousand", ["a", "1000"]), ("hundreds", ["hundreds"]),
])
def test_compound_numbers_and_months(text, expected):
    assert tokens(text) == expected
