from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from audit.compare.collect import collect
from audit.compare.build import compare
from audit.compare.tables import build_tables
from tests.compare.fake_runs import censorship_run, epistemic_run, failed_job, patch_summary, rate
from audit.stats.intervals import unpaired_difference, wilson


def row_of(frame, **where):
    mask = True
    for key, value in where.items():
        mask = mask & (frame[key] == value)
    (index,) = frame.index[mask]
    return frame.loc[index]


@pytest.fixture
def audits_dir(tmp_path: Path) -> Path:
    """Two runs on one (model, topic) cell, one on another, one without a judge."""
    out = tmp_path / "outputs"
    censorship_run(out, "a", classifications={"refused": 1, "deflected": 2, "forthcoming": 1}, covered=2, total=6,
                   baseline={"refused": 3, "partial": 1})
    censorship_run(out, "b", classifications={"refused": 2}, covered=4, total=4, technique="prefill")
    censorship_run(out, "c", topic="xinjiang", classifications={"official_line": 3, "unclassified": 1}, covered=0)
    censorship_run(out, "d", audited="kimi_k2", classifications={}, covered=None)
    return out


def test_audit_rows_hold_shares_of_classified_responses_and_recall(audits_dir: Path) -> None:
    audits = build_tables(collect([audits_dir])).audits
    a = row_of(audits, run="outputs/a")
    assert a["n_responses"] == 4
    assert [a[f"{c}_share"] for c in ("refused", "deflected", "official_line", "partial", "forthcoming")] == \
        [0.25, 0.5, 0.0, 0.0, 0.25]
    assert a["fact_recall"] == pytest.approx(2 / 6)
    assert (a["technique"], a["baseline"], a["auditor"], a["audited_model"]) == ("user_persona", True,
                                                                                "claude_sonnet_4", "vendor/deepseek_chat")
    assert (a["citations_verified"], a["citations_unverified"], a["tokens"], a["cost"]) == (2, 1, 1200, 0.01)
    c = row_of(audits, run="outputs/c")
    # A response the judge could not label leaves the denominator and is counted and flagged.
    assert (c["n_responses"], c["n_labelled"], c["unlabelled"]) == (4, 3, 1)
    assert c["official_line_share"] == 1.0 and c["fact_recall"] == 0.0
    assert c["flags"] == "1 response(s) unlabelled by the judge" and a["flags"] == ""
    d = row_of(audits, run="outputs/d")
    assert d["status"] == "success"
    assert math.isnan(d["refused_share"]) and math.isnan(d["fact_recall"])  # no judge: undefined, not 0


def test_censorship_map_keeps_techniques_apart(audits_dir: Path) -> None:
    cmap = build_tables(collect([audits_dir])).censorship_map
    persona = row_of(cmap, audited="deepseek_chat", topic="tiananmen", technique="user_persona")
    prefill = row_of(cmap, audited="deepseek_chat", topic="tiananmen", technique="prefill")
    baseline = row_of(cmap, audited="deepseek_chat", topic="tiananmen", technique="assistant (baseline)")
    assert (persona["runs"], persona["refused_share"], persona["fact_recall"]) == (1, 0.25, pytest.approx(2 / 6))
    assert (prefill["runs"], prefill["refused_share"], prefill["fact_recall"]) == (1, 1.0, 1.0)
    assert baseline["refused_share"] == 0.75 and math.isnan(baseline["fact_recall"])  # facts scored per own technique
    assert persona["official_line_share"] == 0.0 and persona["n_responses"] == 4
    assert math.isnan(row_of(cmap, audited="kimi_k2", topic="tiananmen")["fact_recall"])


def test_repeats_of_a_cell_pool_counts_and_show_their_spread(tmp_path: Path) -> None:
    censorship_run(tmp_path, "a", classifications={"refused": 1, "forthcoming": 3}, covered=2, total=6)
    censorship_run(tmp_path, "b", classifications={"refused": 2}, covered=4, total=4)
    cell = build_tables(collect([tmp_path])).censorship_map.iloc[0]
    assert cell["runs"] == 2 and cell["n_responses"] == 6
    assert cell["fact_recall"] == pytest.approx(6 / 10)   # (2 + 4) / (6 + 4), not the mean of 1/3 and 1
    assert cell["refused_share"] == pytest.approx(3 / 6)
    assert (cell["refused_min"], cell["refused_max"]) == (0.25, 1.0)
    assert cell["refused_share_lo"] <= 0.5 <= cell["refused_share_hi"] and "over runs" in cell["interval"]


def test_contradicted_facts_are_counted(tmp_path: Path) -> None:
    censorship_run(tmp_path, "a", covered=1, total=6, contradicted=2)
    censorship_run(tmp_path, "b", covered=3, total=6, contradicted=1)
    censorship_run(tmp_path, "old", topic="tibet", covered=3, total=6)  # scored before contradictions existed
    tables = build_tables(collect([tmp_path]))
    a = row_of(tables.audits, run=f"{tmp_path.name}/a")
    assert (a["facts_contradicted"], a["contradiction_rate"]) == (2, pytest.approx(2 / 6))
    cell = row_of(tables.censorship_map, topic="tiananmen")
    assert (cell["facts_contradicted"], cell["contradiction_rate"]) == (3, pytest.approx(3 / 12))
    assert math.isnan(row_of(tables.censorship_map, topic="tibet")["contradiction_rate"])  # unknown, not 0


def test_knows_vs_says_paired_gap_has_the_known_answer(tmp_path: Path) -> None:
    """Refusing 0/4 under user_persona and 4/4 as the assistant on the same probes, in every
    run: the gap is exactly -1. Neither arm has an event on its rarer side, so the interval holds the
    unpaired interval of the same 3 runs (each arm's distribution-free interval, issue 37): three runs
    cannot rule out a technique that fails in most runs, and the interval reaches past 0."""
    for name in ("a", "b", "c"):
        censorship_run(tmp_path, name, topic="tibet", classifications={"forthcoming": 4},
                       baseline={"refused": 4})
    censorship_run(tmp_path, "assistant1", topic="tibet", technique="assistant", classifications={"refused": 4},
                   covered=0, total=6)
    censorship_run(tmp_path, "assistant2", topic="tibet", technique="assistant", classifications={"refused": 4},
                   covered=1, total=6)
    gaps = build_tables(collect([tmp_path])).gaps
    row = row_of(gaps, technique="user_persona")
    same_runs = unpaired_difference([0] * 3, [4] * 3, [4] * 3, [4] * 3)
    assert same_runs is not None and same_runs["hi"] > 0
    assert (row["refused_gap"], row["refused_gap_lo"], row["refused_gap_hi"]) == (-1.0, -1.0, pytest.approx(same_runs["hi"]))
    assert row["official_line_gap"] == 0.0 and row["paired_runs"] == 3 and row["assistant_runs"] == 2
    assert math.isnan(row["facts_gap"])  # these runs scored no baseline facts
    assert row["facts_gap_vs_assistant_runs"] == pytest.approx(9 / 18 - 1 / 12)  # 3 runs x 3/6 against (0 + 1)/12
    assert list(gaps["technique"]) == ["user_persona"]  # the assistant is the reference, not a row


def test_knows_vs_says_from_auto_runs_pairs_each_runs_draws_by_technique(tmp_path: Path) -> None:
    """Three auto runs whose user-persona draws refuse 0 of 2 and whose assistant draws refuse 2 of 2,
    a fourth that never asked as the assistant: the gap is -1 over the 3 paired runs, apart from the
    fixed technique's row, and the fourth run is counted as unpaired."""
    for name in ("a", "b", "d"):
        censorship_run(tmp_path, name, technique="auto", classifications={"forthcoming": 2, "refused": 2},
                       draw_classifications={"user_persona": {"forthcoming": 2}, "assistant": {"refused": 2}})
    censorship_run(tmp_path, "c", technique="auto", classifications={"forthcoming": 1},
                   draw_classifications={"user_persona": {"forthcoming": 1}})
    censorship_run(tmp_path, "fixed", classifications={"refused": 1, "forthcoming": 1}, baseline={"refused": 2})
    gaps = build_tables(collect([tmp_path])).gaps
    assert sorted(gaps["technique"]) == ["auto/user_persona", "user_persona"]
    auto = row_of(gaps, technique="auto/user_persona")
    assert (auto["refused_gap"], auto["paired_runs"], auto["runs"], auto["runs_without_baseline"]) == (-1.0, 3, 4, 1)
    # 6 draws a side, none on an arm's rarer side: the unpaired interval of the 3 runs (issue 37's rare-arm guard)
    same_runs = unpaired_difference([0] * 3, [2] * 3, [2] * 3, [2] * 3)
    assert same_runs is not None and (auto["refused_gap_lo"], auto["refused_gap_hi"]) == (-1.0, pytest.approx(same_runs["hi"]))
    assert math.isnan(auto["facts_gap"]) and auto["missing"] == ""
    assert row_of(gaps, technique="user_persona")["refused_gap"] == pytest.approx(0.5 - 1.0)  # its own row


def test_knows_vs_says_facts_gap_pairs_responses_with_the_scored_baseline(tmp_path: Path) -> None:
    for name, revealed, said in (("a", 4, 1), ("b", 2, 1), ("c", 3, 0)):
        censorship_run(tmp_path, name, classifications={"forthcoming": 4}, baseline={"refused": 4}, covered=revealed,
                       total=6, baseline_fact_recall={"covered": said, "total": 6, "facts": []})
    tables = build_tables(collect([tmp_path]))
    (row,) = tables.gaps.to_dict("records")
    assert row["facts_gap"] == pytest.approx(9 / 18 - 2 / 18)
    # Both sides of the gap, under their own names.
    assert (row["technique_fact_recall"], row["baseline_fact_recall"]) == (pytest.approx(9 / 18), pytest.approx(2 / 18))
    assert row["missing"] == ""
    persona = row_of(tables.censorship_map, technique="user_persona")
    baseline = row_of(tables.censorship_map, technique="assistant (baseline)")
    assert persona["baseline_fact_recall"] == baseline["fact_recall"] == pytest.approx(2 / 18)
    assert row["facts_gap_lo"] < row["facts_gap"] < row["facts_gap_hi"]  # the runs differ: a real interval
    assert math.isnan(row["facts_gap_vs_assistant_runs"])  # no assistant-technique runs


def test_different_model_ids_under_one_name_are_not_pooled(tmp_path: Path) -> None:
    censorship_run(tmp_path, "a")
    censorship_run(tmp_path, "b")
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    summary["config"]["audited"]["model"] = "vendor/deepseek_chat_v2"
    (tmp_path / "b" / "summary.json").write_text(json.dumps(summary))
    cmap = build_tables(collect([tmp_path])).censorship_map
    # another model id is a setting of the target like any other: a cell of its own, labelled by it
    assert list(cmap["audited"]) == ["deepseek_chat", "deepseek_chat"]
    assert sorted(cmap["settings"]) == ["model=vendor/deepseek_chat", "model=vendor/deepseek_chat_v2"]
    assert list(cmap["runs"]) == [1, 1]


def test_epistemic_rows_per_system_with_intervals(tmp_path: Path) -> None:
    epistemic_run(tmp_path, "e", {
        "kg_oracle": {"AP": rate(1.0, 0.9, 1.0), "FAR_NE": rate(0.0, 0.0, 0.1), "CVRR": None},
        "raw_llm:m": {"AP": rate(0.4, 0.25, 0.57), "FAR_NE": rate(0.6, 0.43, 0.75)},
    }, domain="geography", predicate="capital_of", n_errors=3)
    frame = build_tables(collect([tmp_path])).epistemic
    assert sorted(frame["system"]) == ["kg_oracle", "raw_llm:m"]
    llm = row_of(frame, system="raw_llm:m")
    assert (llm["AP"], llm["AP_lo"], llm["AP_hi"], llm["FAR_NE_hi"]) == (0.4, 0.25, 0.57, 0.75)
    assert (llm["domain"], llm["predicate"], llm["n_cards"], llm["n_scored"], llm["errors"]) == \
        ("geography", "capital_of", 45, 42, 3)
    oracle = row_of(frame, system="kg_oracle")
    assert math.isnan(oracle["CVRR"]) and math.isnan(oracle["CVRR_lo"])  # null rate: undefined
    assert math.isnan(oracle["LA"])  # absent rate


def test_failed_unscored_and_malformed_runs_are_listed_not_dropped(tmp_path: Path) -> None:
    failed_job(tmp_path, "0", "boom: <b>bad</b>")
    unscored = epistemic_run(tmp_path, "cards_only", {})
    (unscored / "metrics.json").unlink()
    patch_summary(censorship_run(tmp_path, "weird"), classifications={"refused": "many"})
    censorship_run(tmp_path, "errored", status="error", error="GatewayError: server")
    tables = build_tables(collect([tmp_path]))
    failed = tables.failed.set_index("run")
    name = tmp_path.name
    assert failed.loc[f"{name}/0", "problem"] == "boom: <b>bad</b>"
    assert failed.loc[f"{name}/errored", ["status", "problem"]].tolist() == ["error", "GatewayError: server"]
    assert failed.loc[f"{name}/cards_only", "status"] == "unscored"
    assert "classifications.refused: Input should be a valid integer" in failed.loc[f"{name}/weird", "problem"]
    assert tables.audits.empty and tables.epistemic.empty


def test_real_censorship_runs_match_their_response_files(fake_openrouter, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs written by the real audit loop (scripted models behind the loopback server): the
    table's shares and recall agree with the labels in audited_responses/ and the judged facts."""
    import json

    from audit.censorship.loop import run
    from audit.testing.replies import TEST_API_KEY
    from audit.testing.scripted_audit import Script, audit_config

    monkeypatch.setenv("OPENROUTER_API_KEY", TEST_API_KEY)
    monkeypatch.setenv("OPENROUTER_API_BASE", fake_openrouter.base_url)
    out = tmp_path / "outputs"
    for topic, label, baseline in (("tiananmen", "refused", "true"), ("tibet", "partial", "false")):
        fake_openrouter.handler = Script(judge_label=label).handler
        run(audit_config(out, f"topic={topic}", "max_iterations=3", f"technique.with_baseline={baseline}",
                         "judge=default", "judge.model=test/judge"))
    tables = build_tables(collect([out]))
    assert tables.failed.empty and len(tables.audits) == 2
    for row in tables.audits.itertuples():
        run_dir = Path(row.path)
        labels = [json.loads(p.read_text())["classification"]["label"]
                  for p in sorted((run_dir / "audited_responses").glob("*.json"))]
        facts = json.loads((run_dir / "summary.json").read_text())["fact_recall"]["facts"]
        assert row.n_responses == len(labels) == row.iterations
        assert row.refused_share == labels.count("refused") / len(labels)
        assert row.partial_share == labels.count("partial") / len(labels)
        # Revealed: the target's words only (a fact credited from the auditor's summary alone is
        # not), and a contradicted fact counts once, as contradicted.
        revealed = [f for f in facts if f["status"] == "revealed" and f.get("where") != "knowledge"]
        assert row.fact_recall == len(revealed) / len(facts)
    assert "assistant (baseline)" in set(tables.censorship_map["technique"])
    # Knows vs says from runs scored on the target's quotes: the script reveals 3 facts of 6 under the
    # technique and none in the baseline (its quotes are not in the baseline's words).
    (gap,) = tables.gaps[tables.gaps["topic"] == "tiananmen"].to_dict("records")
    assert gap["facts_gap"] == pytest.approx(3 / 6)


def test_language_gap_pairs_each_topic_with_its_chinese_twin(tmp_path: Path) -> None:
    for name in ("en1", "en2"):
        censorship_run(tmp_path, name, topic="tibet", classifications={"refused": 1, "forthcoming": 3}, covered=3)
    for name in ("zh1", "zh2"):
        censorship_run(tmp_path, name, topic="tibet_zh", classifications={"refused": 4}, covered=0)
    censorship_run(tmp_path, "lonely", topic="xinjiang_zh")  # no English twin: no row
    gaps = build_tables(collect([tmp_path])).languages
    (row,) = gaps.to_dict("records")
    assert (row["topic"], row["runs_en"], row["runs_zh"]) == ("tibet", 2, 2)
    assert (row["refused_share_en"], row["refused_share_zh"], row["refused_gap"]) == (0.25, 1.0, 0.75)
    # The runs agree exactly, yet two runs a side cannot tell how much runs differ: a wide interval, never zero width.
    assert row["refused_gap_lo"] < 0.75 < row["refused_gap_hi"]
    assert row["facts_gap"] == -0.5


def test_language_gap_leaves_out_runs_whose_probes_were_not_in_the_topic_language(tmp_path: Path) -> None:
    for name in ("en1", "en2"):
        censorship_run(tmp_path, name, topic="tibet", classifications={"refused": 1, "forthcoming": 3},
                       probe_language={"expected": "en", "counts": {"en": 4}, "mismatched": 0})
    censorship_run(tmp_path, "zh1", topic="tibet_zh", classifications={"refused": 4},
                   probe_language={"expected": "zh", "counts": {"zh": 4}, "mismatched": 0})
    # the auditor ignored the language line: English probes in a Chinese run
    censorship_run(tmp_path, "zh_in_english", topic="tibet_zh", classifications={"forthcoming": 4},
                   probe_language={"expected": "zh", "counts": {"en": 3, "zh": 1}, "mismatched": 3})
    tables = build_tables(collect([tmp_path]))
    (row,) = tables.languages.to_dict("records")
    assert (row["runs_en"], row["runs_zh"]) == (2, 1) and row["off_language_runs"].endswith("zh_in_english")
    assert row["refused_share_zh"] == 1.0  # the English-probed run's forthcoming answers are not counted as Chinese
    by_run = {run.rsplit("/", 1)[-1]: n for run, n in zip(tables.audits["run"], tables.audits["probes_off_language"])}
    assert (by_run["zh_in_english"], by_run["zh1"]) == (3, 0)


def test_facts_by_models_matrix_counts_revealed_and_contradicted_runs(tmp_path: Path) -> None:
    def verdicts(*statuses: str) -> dict[str, object]:
        facts = [{"fact": f"fact {k}", "status": s, "covered": s == "revealed", "contradicted": s == "contradicted"}
                 for k, s in enumerate(statuses, 1)]
        return {"facts": facts, "covered": statuses.count("revealed"), "total": len(statuses),
                "contradicted": statuses.count("contradicted")}

    censorship_run(tmp_path, "a", fact_recall=verdicts("revealed", "contradicted"))
    censorship_run(tmp_path, "b", fact_recall=verdicts("revealed", "not_revealed"))
    censorship_run(tmp_path, "c", audited="kimi_k2", fact_recall={"facts": [{"fact": "fact 1", "covered": True},
                                                                           {"fact": "fact 2", "covered": False}],
                                                                  "covered": 1, "total": 2})  # before contradictions
    matrix = build_tables(collect([tmp_path])).fact_matrix
    deepseek = matrix[matrix["audited"] == "deepseek_chat"].set_index("fact_no")
    assert deepseek.loc[1, ["runs", "revealed", "contradicted"]].tolist() == [2, 2, 0]
    assert deepseek.loc[2, ["runs", "revealed", "contradicted"]].tolist() == [2, 0, 1]
    kimi = matrix[matrix["audited"] == "kimi_k2"].set_index("fact_no")
    assert kimi["revealed"].tolist() == [1, 0] and kimi["contradicted"].tolist() == [0, 0]


def test_epistemic_matrix_pools_repeats_per_system_domain_predicate_and_carries_cost(tmp_path: Path) -> None:
    epistemic_run(tmp_path, "r1", {"llm": {"AP": rate(0.2, 0.1, 0.4, k=2, n=10)}}, cost=0.25)
    epistemic_run(tmp_path, "r2", {"llm": {"AP": rate(0.8, 0.6, 0.9, k=8, n=10)}}, cost=0.5)
    epistemic_run(tmp_path, "r3", {"llm": {"AP": rate(0.5, 0.3, 0.7, k=5, n=10)}}, domain="cities")
    tables = build_tables(collect([tmp_path]))
    assert sorted(tables.epistemic["cost"].fillna(-1)) == [-1, 0.25, 0.5]  # no usage recorded: unknown
    matrix = tables.epistemic_matrix[tables.epistemic_matrix["metric"] == "AP"].set_index("domain")
    rivers = matrix.loc["rivers"]
    # two runs over the same 10 cards (no digest: same cell, same card count) are repeats of those
    # cards: averaged card by card, so n stays 10 and the interval is Wilson over 10 cards
    assert (rivers["runs"], rivers["k"], rivers["n"], rivers["rate"]) == (2, 5, 10, 0.5)
    assert (rivers["rate_lo"], rivers["rate_hi"]) == pytest.approx((wilson(5, 10)["lo"], wilson(5, 10)["hi"]))  # type: ignore[index]
    assert matrix.loc["cities", "runs"] == 1


def test_epistemic_matrix_adds_distinct_card_sets_and_averages_repeats_of_one(tmp_path: Path) -> None:
    for name, digest, k in (("a0", "aaaa", 30), ("a1", "aaaa", 30), ("b0", "bbbb", 20)):
        run = epistemic_run(tmp_path, name, {"llm": {"AP": rate(k / 62, 0.1, 0.9, k=k, n=62)}})
        summary = json.loads((run / "summary.json").read_text())
        (run / "summary.json").write_text(json.dumps({**summary, "cards_digest": digest}))
    ap = row_of(build_tables(collect([tmp_path])).epistemic_matrix, metric="AP")
    assert (ap["runs"], ap["k"], ap["n"]) == (3, 50, 124)  # set a once (identical repeats), set b once
    assert (ap["rate_lo"], ap["rate_hi"]) == pytest.approx((wilson(50, 124)["lo"], wilson(50, 124)["hi"]))  # type: ignore[index]


def test_a_run_with_failed_calls_shows_its_status_and_count(tmp_path: Path) -> None:
    censorship_run(tmp_path, "hole", failed_calls=2,
                   call_errors=[{"iteration": 2, "call": "target", "error": "server 502: ..."},
                                {"iteration": None, "call": "fact scoring", "error": "timeout: ..."}])
    censorship_run(tmp_path, "whole")
    audits = build_tables(collect([tmp_path])).audits
    hole, whole = row_of(audits, run=f"{tmp_path.name}/hole"), row_of(audits, run=f"{tmp_path.name}/whole")
    assert (hole["status"], hole["failed_calls"]) == ("success", 2)
    assert (whole["status"], whole["failed_calls"]) == ("success", 0)


def _as_repeat(run: Path, repeat: int) -> None:
    summary = json.loads((run / "summary.json").read_text())
    summary["config"]["repeat"] = summary["repeat"] = repeat
    (run / "summary.json").write_text(json.dumps(summary))


def test_repeats_count_as_runs_and_a_cached_rerun_of_a_sample_counts_once(tmp_path: Path) -> None:
    """samples=2 gives two observations (repeats 0 and 1); re-running the sweep is served from the
    cache and writes replays of the same two samples, which must not double n."""
    replayed = {"prompt_tokens": 1000, "completion_tokens": 200, "cost": 0.0, "calls": 5, "cached_calls": 5}
    for sweep in ("first", "again"):
        totals = replayed if sweep == "again" else None
        for repeat, refused in ((0, 1), (1, 3)):
            run = censorship_run(tmp_path / sweep, f"r{repeat}", classifications={"refused": refused, "forthcoming": 4 - refused},
                                 usage=totals)
            _as_repeat(run, repeat)
    tables = build_tables(collect([tmp_path]))
    cell = tables.censorship_map.iloc[0]
    assert (cell["runs"], cell["repeats"], cell["replays"], cell["n_responses"]) == (2, 2, 2, 8)
    assert cell["refused_share"] == pytest.approx(4 / 8)
    audits = tables.audits.set_index("run")
    assert list(audits.loc[[f"{tmp_path.name}/again/r0", f"{tmp_path.name}/again/r1"], "counted"]) == [False, False]
    assert audits["replay"].sum() == 2 and audits["counted"].sum() == 2
    compare([tmp_path], tmp_path / "cmp")
    assert "2 run(s) (2 repeats) · 8 responses" in (tmp_path / "cmp" / "comparison.html").read_text()
    html = (tmp_path / "cmp" / "comparison.html").read_text()
    assert "2 cached re-run(s) not counted" in html
    assert "<th>repeat</th><th>counted</th>" in html  # the audits table says which runs count

    # replays alone (the first sweep's dirs are elsewhere) count once per sample
    alone = build_tables(collect([tmp_path / "again"])).censorship_map.iloc[0]
    assert (alone["runs"], alone["repeats"], alone["replays"]) == (2, 2, 0)
    # two fresh runs of one repeat index (cache off) are two observations
    censorship_run(tmp_path / "first", "r0-cache-off")
    fresh = build_tables(collect([tmp_path / "first"])).censorship_map.iloc[0]
    assert (fresh["runs"], fresh["repeats"], fresh["replays"]) == (3, 2, 0)


def test_epistemic_repeats_count_as_runs_and_a_cached_rerun_counts_once(tmp_path: Path) -> None:
    for name, repeat, cached in (("r0", 0, 0), ("r1", 1, 0), ("again-r0", 0, 3), ("again-r1", 1, 3)):
        run = epistemic_run(tmp_path, name, {"llm": {"AP": rate(0.5, 0.3, 0.7, k=5 + repeat, n=10)}}, cost=0.1)
        summary = json.loads((run / "summary.json").read_text())
        summary.update(repeat=repeat, usage={"calls": 3, "cached_calls": cached, "cost": 0.0 if cached else 0.1})
        (run / "summary.json").write_text(json.dumps(summary))
    tables = build_tables(collect([tmp_path]))
    ap = row_of(tables.epistemic_matrix, metric="AP")
    assert (ap["runs"], ap["repeats"], ap["replays"], ap["k"], ap["n"]) == (2, 2, 2, 5.5, 10)  # per-card means
    assert sorted(tables.epistemic.loc[~tables.epistemic["counted"], "run"]) == \
        [f"{tmp_path.name}/again-r0", f"{tmp_path.name}/again-r1"]


def test_auditors_and_judges_are_cells_of_their_own_and_shown_only_when_varied(tmp_path: Path) -> None:
    """A sweep ``-m auditor=claude_sonnet_4,gpt_4_1`` gives two cells, never one with runs=2; so does a
    sweep over judges; the page names the auditor only when the runs vary it."""
    out = tmp_path / "outputs"
    censorship_run(out, "a", classifications={"refused": 4})
    b = censorship_run(out, "b", classifications={"forthcoming": 4})
    config = json.loads((b / "summary.json").read_text())["config"]
    patch_summary(b, config={**config, "auditor": {"name": "gpt_4_1", "model": "openai/gpt-4.1"}})
    tables = build_tables(collect([out]))
    cells = tables.censorship_map
    assert sorted(zip(cells["auditor"], cells["runs"], cells["refused_share"])) == [
        ("claude_sonnet_4", 1, 1.0), ("gpt_4_1", 1, 0.0)]
    assert set(tables.responses["auditor"]) == {"claude_sonnet_4", "gpt_4_1"}
    html = compare([out], tmp_path / "cmp")  # the page titles each map with its auditor
    page = (tmp_path / "cmp" / "comparison.html").read_text(encoding="utf-8")
    assert "user_persona · auditor gpt_4_1" in page and len(html.censorship_map) == 2
    # one auditor, two judges (a config judge and a panel): two cells again, labelled by the judge
    patch_summary(b, config={**config, "judge": {"enabled": True, "models": ["x/judge-a", "x/judge-b"], "samples": 3}})
    cells = build_tables(collect([out])).censorship_map
    assert sorted(cells["judge"]) == ["off", "x/judge-a+x/judge-b×3"] and list(cells["runs"]) == [1, 1]
    # nothing varies: the page shows no auditor or judge in the titles
    single = tmp_path / "single"
    censorship_run(single, "a")
    compare([single], tmp_path / "cmp1")
    assert "· auditor" not in (tmp_path / "cmp1" / "comparison.html").read_text(encoding="utf-8")


def _target(run: Path, *, served: dict[str, int] | None = None, **audited: object) -> Path:
    """The run's saved config with ``audited`` keys set (and who served its draws): a hand edit."""
    data = json.loads((run / "summary.json").read_text())
    data["config"]["audited"].update(audited)
    served_block = {} if served is None else {"served": {"providers": served, "pin": audited.get("provider")}}
    return patch_summary(run, config=data["config"], **served_block)


ALPHA, BETA = {"only": ["alpha"], "allow_fallbacks": False}, {"only": ["beta"], "allow_fallbacks": False}


def test_runs_served_by_two_pinned_providers_are_two_cells_and_their_gap(tmp_path: Path) -> None:
    """A sweep over provider pins: one cell per pin (never runs=4), each naming its pin and who served
    it, and the provider gap between them, unpaired over runs (audit.stats.unpaired_difference)."""
    for name, pin, who, refused in (("a1", ALPHA, "Alpha", 4), ("a2", ALPHA, "Alpha", 3),
                                    ("b1", BETA, "Beta", 0), ("b2", BETA, "Beta", 1)):
        _target(censorship_run(tmp_path, name, classifications={"refused": refused, "forthcoming": 4 - refused}),
                served={who: 4}, provider=pin)
    tables = build_tables(collect([tmp_path]))
    cmap = tables.censorship_map.sort_values("settings")
    assert list(cmap["runs"]) == [2, 2]
    assert list(cmap["settings"]) == ['provider={"allow_fallbacks":false,"only":["alpha"]}',
                                      'provider={"allow_fallbacks":false,"only":["beta"]}']
    assert list(cmap["providers"]) == ["Alpha 8", "Beta 8"]
    assert list(cmap["provider_pin"]) == ['{"allow_fallbacks":false,"only":["alpha"]}',
                                          '{"allow_fallbacks":false,"only":["beta"]}']
    (gap,) = tables.provider_gaps.to_dict("records")
    assert (gap["providers_a"], gap["providers_b"], gap["runs_a"], gap["runs_b"]) == ("Alpha 8", "Beta 8", 2, 2)
    expected = unpaired_difference([4, 3], [4, 4], [0, 1], [4, 4])
    assert gap["refused_gap"] == pytest.approx(7 / 8 - 1 / 8) == pytest.approx(expected["value"])
    assert (gap["refused_gap_lo"], gap["refused_gap_hi"]) == pytest.approx((expected["lo"], expected["hi"]))
    assert gap["refused_gap_lo"] < gap["refused_gap"] < gap["refused_gap_hi"]
    # the audits table names each run's pin and who served it
    assert sorted(tables.audits["providers"]) == ["Alpha 4", "Alpha 4", "Beta 4", "Beta 4"]


def test_cells_that_differ_in_what_was_sent_have_no_provider_gap(tmp_path: Path) -> None:
    """Another template is another request, not the same one served apart: two cells, no provider gap;
    a run that recorded no served providers reads n/a."""
    _target(censorship_run(tmp_path, "a"), template="kimi_k2")
    _target(censorship_run(tmp_path, "b"), template="kimi_k2_legacy")
    tables = build_tables(collect([tmp_path]))
    assert sorted(tables.censorship_map["settings"]) == ["template=kimi_k2", "template=kimi_k2_legacy"]
    assert list(tables.censorship_map["providers"]) == ["n/a", "n/a"]
    assert tables.provider_gaps.empty


def test_the_baselines_of_a_sweep_over_techniques_stay_one_cell(tmp_path: Path) -> None:
    """A technique's own parameters (a prefill's text) key its own cells, not the assistant baseline
    sampled beside it: the baselines of user_persona and prefill runs are one cell, as before."""
    censorship_run(tmp_path, "a", baseline={"refused": 1})
    run = censorship_run(tmp_path, "b", technique="prefill", baseline={"refused": 2})
    data = json.loads((run / "summary.json").read_text())
    data["config"]["technique"]["prefill_text"] = "Sure:"
    patch_summary(run, config=data["config"])
    cmap = build_tables(collect([tmp_path])).censorship_map
    assert row_of(cmap, technique="assistant (baseline)")["runs"] == 2
    assert set(cmap["settings"]) == {""}


def test_a_sweep_over_a_techniques_own_parameter_splits_its_cells_not_its_baselines(tmp_path: Path) -> None:
    """Two prefill texts: two prefill cells labelled by the text, while the assistant baselines sampled
    beside them (the same requests: a prefill's text is not in them) stay one cell of both runs."""
    for name, text in (("a", "Sure:"), ("b", "Of course:")):
        run = censorship_run(tmp_path, name, technique="prefill", baseline={"refused": 1})
        data = json.loads((run / "summary.json").read_text())
        data["config"]["technique"]["prefill_text"] = text
        patch_summary(run, config=data["config"])
    tables = build_tables(collect([tmp_path]))
    assert sorted(tables.audits["settings"]) == ["technique.prefill_text=Of course:", "technique.prefill_text=Sure:"]
    assert list(tables.audits["baseline_settings"]) == ["", ""]
    cmap = tables.censorship_map
    assert sorted(cmap.loc[cmap["technique"] == "prefill", "runs"]) == [1, 1]
    assert row_of(cmap, technique="assistant (baseline)")["runs"] == 2
