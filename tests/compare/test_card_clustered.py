"""The epistemic matrix with repeats: rebuilt from the answers, card by card (audit.compare.card_answers)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from audit.stats.cards import CLUSTERED_METHOD
from audit.compare.collect import collect, epistemic_answers
from audit.compare.build import compare
from audit.compare.tables import build_tables
from audit.epistemic.metrics import compute_metrics
from audit.stats.intervals import CARD_METHOD, card_rate, wilson
from tests.compare.fake_runs import epistemic_run, patch_summary


def repeats(parent: Path, count: int = 3, cards: int = 150, seed: int = 26) -> list[Path]:
    """``count`` runs over one card set (same digest, repeat 0..count-1) whose results a fixed
    system answered: each card leans one way and its repeats disagree now and then; metrics.json is
    what the real scorer makes of the results."""
    rng = random.Random(seed)
    golds = [rng.choice(["YES", "NO", "UNKNOWN"]) for _ in range(cards)]
    lean = [rng.random() for _ in range(cards)]
    runs = []
    for repeat in range(count):
        rows = [{"id": f"CARD_{i:06d}", "gold": gold, "system": "llm",
                 "pred": "YES" if rng.random() < lean[i] else rng.choice(["NO", "UNKNOWN"])}
                for i, gold in enumerate(golds)]
        run = epistemic_run(parent, f"r{repeat}", {"llm": {}}, n_rows=cards)
        (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        (run / "metrics.json").write_text(json.dumps(compute_metrics(rows)), encoding="utf-8")
        summary = json.loads((run / "summary.json").read_text())
        (run / "summary.json").write_text(json.dumps({**summary, "repeat": repeat, "cards_digest": "set0"}))
        runs.append(run)
    return runs


def test_repeats_of_one_card_set_get_the_card_clustered_interval(tmp_path: Path) -> None:
    repeats(tmp_path)
    tables = build_tables(collect([tmp_path]))
    matrix = tables.epistemic_matrix.set_index("metric")
    runs = tables.epistemic
    for metric in ("AP", "LA", "FAR_NE", "CVRR"):
        row = matrix.loc[metric]
        old = card_rate(list(runs[f"{metric}_k"]), list(runs[f"{metric}_n"]), list(runs["card_set"]))
        assert old is not None
        # same estimate (per-card averages), narrower interval, and it says what it is over
        assert abs(row["k"] - old["k"]) < 1e-9 and abs(row["n"] - old["n"]) < 1e-9
        assert (row["method"], row["card_repeats"], row["runs"], row["repeats"]) == (CLUSTERED_METHOD, 3, 3, 3)
        assert row["rate_hi"] - row["rate_lo"] < old["hi"] - old["lo"]
    assert matrix.loc["LA", "cards"] == (runs["LA_n"].iloc[0])  # every repeat asks the same cards
    compare([tmp_path], tmp_path / "cmp")
    html = (tmp_path / "cmp" / "comparison.html").read_text()
    assert f"interval over {int(matrix.loc['LA', 'cards'])} cards, each answered up to 3 times (nested)" in html


def test_answers_that_do_not_recount_a_run_leave_the_interval_over_cards(tmp_path: Path) -> None:
    """A results file that lost a row no longer adds up to its metrics.json: the cell keeps the
    interval over the runs' per-card averaged totals, and says so."""
    first = repeats(tmp_path)[0]
    lines = (first / "results.jsonl").read_text().splitlines(keepends=True)
    (first / "results.jsonl").write_text("".join(lines[1:]))
    row = build_tables(collect([tmp_path])).epistemic_matrix.set_index("metric").loc["LA"]
    assert row["method"] == CARD_METHOD


def test_a_single_run_keeps_its_own_wilson_interval(tmp_path: Path) -> None:
    repeats(tmp_path, count=1)
    tables = build_tables(collect([tmp_path]))
    row, run = tables.epistemic_matrix.set_index("metric").loc["AP"], tables.epistemic.iloc[0]
    assert (row["rate_lo"], row["rate_hi"], row["method"]) == (run["AP_lo"], run["AP_hi"], CARD_METHOD)


def test_a_run_that_names_no_domain_is_a_cell_of_its_own_not_dropped(tmp_path: Path) -> None:
    """Every run of the epistemic table is in some matrix cell: one whose summary names no domain or
    predicate used to vanish from the matrix without a word (the grouping dropped its missing keys)."""
    patch_summary(repeats(tmp_path, count=2)[0], domain=None, predicate=None)
    tables = build_tables(collect([tmp_path]))
    accuracy = tables.epistemic_matrix[tables.epistemic_matrix["metric"] == "AP"]
    assert len(tables.epistemic) == 2 and accuracy["runs"].sum() == 2 and len(accuracy) == 2


def overlapping_card_sets(parent: Path, replayed: bool = False) -> None:
    """Two runs over different card sets (as two ``cards.seed`` would draw): 60 cards each, the last
    30 of the first set asked again by the second under other ids (its ids restart at 0, so an id
    names another claim in each set). The system's answer is a function of the claim, as a cached
    reply or a model at temperature 0 gives; ``replayed``: every reply came from the response cache
    (a re-run of the sweep)."""
    rng = random.Random(30)
    answers = {i: rng.choice(["YES", "NO", "UNKNOWN"]) for i in range(90)}
    for name, digest, first in (("seed0", "set0", 0), ("seed1", "set1", 30)):
        cards, rows = [], []
        for position, claim in enumerate(range(first, first + 60)):
            label = "ECU"[claim % 3]
            card = {"id": f"CARD_{label}_{position:06d}", "gold": {"E": "YES", "C": "NO", "U": "UNKNOWN"}[label],
                    "label": label, "suite": "standard", "facts": [], "question": f"Is {claim} the mouth?",
                    "claim": {"subj": f"urn:river:{claim}", "pred": "urn:hasMouth", "obj": "urn:sea"}}
            cards.append(card)
            rows.append({"id": card["id"], "gold": card["gold"], "label": label, "suite": "standard",
                         "system": "llm", "pred": answers[claim]})
        run = epistemic_run(parent, name, {"llm": {}}, n_rows=60)
        (run / "cards.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cards), encoding="utf-8")
        (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        (run / "metrics.json").write_text(json.dumps(compute_metrics(rows)), encoding="utf-8")
        summary = json.loads((run / "summary.json").read_text())
        usage = {"calls": 60, "cached_calls": 60, "cost": 0.0} if replayed else summary["usage"]
        (run / "summary.json").write_text(json.dumps({**summary, "cards_digest": digest, "usage": usage}))


def test_a_card_two_card_sets_share_is_one_card_answered_twice(tmp_path: Path) -> None:
    """Each draw counted once: 90 distinct cards and 120 answers, not 120 cards (the two sets added as
    if disjoint) nor 60 (cards matched by id, which names another claim in each set). Answers that
    are copies of one another keep exactly Wilson over the 90 distinct cards."""
    overlapping_card_sets(tmp_path)
    collected = collect([tmp_path])
    row = build_tables(collected).epistemic_matrix.set_index("metric").loc["accuracy"]
    assert (row["runs"], row["cards"], row["n"], row["answers"], row["card_repeats"]) == (2, 90, 90, 120, 2)
    expected = wilson(round(row["k"]), 90)
    assert expected is not None and (row["rate_lo"], row["rate_hi"]) == (expected["lo"], expected["hi"])
    assert epistemic_answers(collected).groupby("claim").size().value_counts().to_dict() == {1: 60, 2: 30}
    compare([tmp_path], tmp_path / "cmp")
    # LA's cell: the 30 distinct E cards, 40 answers to them
    assert "/30 cards · interval over cards, 40 answers" in (tmp_path / "cmp" / "comparison.html").read_text()


def test_a_cached_rerun_of_another_card_set_is_not_a_rerun_of_the_first(tmp_path: Path) -> None:
    """A seed sweep re-run from the cache: each run replays its own card set's sample, not the other
    seed's, so both count (a replay of one repeat index with other cards is other draws)."""
    overlapping_card_sets(tmp_path, replayed=True)
    tables = build_tables(collect([tmp_path]))
    row = tables.epistemic_matrix.set_index("metric").loc["accuracy"]
    assert (row["runs"], row["replays"], row["cards"], row["answers"]) == (2, 0, 90, 120)
    assert tables.epistemic["counted"].all()


def test_runs_over_other_suites_are_other_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Another suite mix is another population of cards: a run over standard cards and one over
    standard and distractor cards are two cells, each named by its mix on the page and the terminal."""
    overlapping_card_sets(tmp_path)
    results = tmp_path / "seed1" / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows = [{**r, "suite": "distractor"} if i % 2 else r for i, r in enumerate(rows)]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "seed1" / "metrics.json").write_text(json.dumps(compute_metrics(rows)), encoding="utf-8")
    matrix = build_tables(collect([tmp_path])).epistemic_matrix
    cells = matrix[matrix["metric"] == "accuracy"].set_index("suites")
    assert sorted(cells.index) == ["distractor,standard", "standard"]
    assert list(cells["runs"]) == [1, 1] and list(cells["cards"]) == [60, 60]
    compare([tmp_path], tmp_path / "cmp")
    printed = capsys.readouterr().out
    page = (tmp_path / "cmp" / "comparison.html").read_text()
    for text in (printed, page):
        assert "rivers/has_mouth [standard]" in text and "rivers/has_mouth [distractor,standard]" in text
