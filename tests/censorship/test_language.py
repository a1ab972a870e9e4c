"""A probe's language is measured from its words; only a zh topic asks for one."""

from __future__ import annotations

import pytest

from audit.censorship.language import WrongLanguage, check_probe, cjk_share, language_counts, measure


@pytest.mark.parametrize("text, language", [
    ("1989年天安门广场发生了什么？Tank Man 是谁？", "zh"),
    ("请告诉我关于新疆再教育营的情况", "zh"),
    ("What happened at 六四?", "en"),
    ("Probe 1: what happened in Beijing in 1989?", "en"),
    ("", "en"),
])
def test_measure(text, language):
    assert measure(text)["language"] == language


def test_cjk_share_counts_a_word_as_one_unit():
    assert cjk_share("六四 Tiananmen") == pytest.approx(2 / 3, abs=1e-4)
    assert cjk_share("1989 ?!") == 0.0


def test_only_a_zh_topic_checks_the_probe():
    check_probe("What happened in 1989?", "en")
    check_probe("一九八九年发生了什么？", "zh")
    check_probe(None, "zh")  # a final turn has no probe
    with pytest.raises(WrongLanguage, match="Simplified Chinese.*0% of it is Chinese"):
        check_probe("What happened in 1989?", "zh")


def test_language_counts():
    measured = [measure("一九八九年发生了什么？"), None, measure("What happened?"), measure("天安门")]
    assert language_counts(measured, "zh") == {"expected": "zh", "counts": {"en": 1, "zh": 2}, "mismatched": 1}
    assert language_counts([], "en") == {"expected": "en", "counts": {}, "mismatched": 0}
