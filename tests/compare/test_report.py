from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from audit.compare.build import compare
from audit.compare.report import LABEL_W, PLOT_W, hbar_chart, shorten
from audit.errors import UserError
from tests.compare.fake_runs import censorship_run, corrupt_summary, epistemic_run, failed_job, rate

EVIL = "<script>alert(1)</script>"


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    censorship_run(root, "a", audited=f"m{EVIL}", topic=f"t{EVIL}", classifications={"refused": 1, "partial": 3},
                   covered=1, total=4)
    epistemic_run(root, "e", {"kg_oracle": {"AP": rate(1.0, 0.9, 1.0), "FAR_NE": rate(0.0, 0.0, 0.1)},
                              f"sys{EVIL}": {"AP": rate(0.5, 0.3, 0.7), "FAR_NE": None}})
    failed_job(root, "1", f"failed {EVIL}")
    corrupt_summary(root, "broken")
    return root


def test_writes_html_and_csvs_into_out(mixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    compare([mixed], out)
    audits = pd.read_csv(out / "audits.csv")
    assert audits[["refused_share", "partial_share", "fact_recall"]].iloc[0].tolist() == [0.25, 0.75, 0.25]
    epistemic = pd.read_csv(out / "epistemic.csv").set_index("system")
    assert epistemic.loc["kg_oracle", "AP_lo"] == 0.9 and pd.isna(epistemic.loc[f"sys{EVIL}", "FAR_NE"])
    printed = capsys.readouterr().out
    assert "failed or unusable runs (2)" in printed and "summary.json: not valid JSON" in printed
    assert printed.rstrip().endswith("wrote comparison.html, audits.csv, censorship_map.csv, knows_vs_says.csv, "
                                     "language_gap.csv, provider_gap.csv, facts.csv, "
                                     f"epistemic.csv, epistemic_matrix.csv, runs.csv, responses.csv, answers.csv to {out}")
    runs = pd.read_csv(out / "runs.csv")  # every run found has a row, the unreadable ones too, saying why
    assert "unreadable" in set(runs["status"]) and len(runs) == len(audits) + len(epistemic.groupby("run")) + 2
    assert "AP: system x domain/predicate (over runs; interval unit: cards, repeats nested in them)" in printed
    matrix = pd.read_csv(out / "epistemic_matrix.csv")
    assert {"metric", "system", "domain", "predicate", "runs", "rate", "rate_lo", "rate_hi"} <= set(matrix.columns)


def test_default_out_is_the_first_dir(mixed: Path) -> None:
    compare([mixed])
    written = sorted(p.name for p in mixed.iterdir() if p.is_file() and p.suffix != ".parquet")  # with pyarrow only
    assert written == ["answers.csv", "audits.csv", "censorship_map.csv", "comparison.html", "epistemic.csv",
                       "epistemic_matrix.csv", "facts.csv", "knows_vs_says.csv", "language_gap.csv", "provider_gap.csv",
                       "responses.csv", "runs.csv"]


def test_html_escapes_names_and_errors_and_is_self_contained(mixed: Path, tmp_path: Path) -> None:
    compare([mixed], tmp_path / "o")
    html = (tmp_path / "o" / "comparison.html").read_text(encoding="utf-8")
    assert html.lower().count("<script") == 1 and "alert(" not in html.split("<script>")[1]  # only our sort/filter script
    assert "&lt;script&gt;" in html
    assert html.count("failed &lt;script&gt;alert(1)&lt;/script&gt;") == 1  # the failed job, with its error
    assert "summary.json: not valid JSON" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # no CDN, nothing remote
    assert html.count("<svg") == 2 + 4  # recall + refusal; AP, CVRR, FAR_NE, LA


def test_out_that_is_a_file_is_a_user_error(mixed: Path, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(UserError, match="is a file"):
        compare([mixed], tmp_path / "f")


def test_chart_geometry_whiskers_and_undefined_bars() -> None:
    chart = hbar_chart("AP", [{"label": "a", "colour": "#000", "rate": {"value": 0.5, "lo": 0.25, "hi": 1.0}},
                              {"label": "b", "colour": "#111", "rate": None},
                              {"label": "c", "colour": "#222", "rate": {"value": float("nan"), "lo": 0.0, "hi": 0.0}}])
    a, b, c = chart["rows"]
    assert (a["w"], a["lo"], a["hi"]) == (PLOT_W * 0.5, LABEL_W + PLOT_W * 0.25, LABEL_W + PLOT_W)
    assert a["text"] == "0.50 [0.25, 1.00]"
    assert b["na"] and c["na"] and b["text"] == "n/a"  # never drawn as a zero bar
    assert chart["rows"][1]["y"] > a["y"]


def test_gap_chart_grows_left_or_right_from_zero() -> None:
    chart = hbar_chart("gap", [{"label": "a", "colour": "#000", "rate": {"value": -0.5, "lo": -1.0, "hi": 0.0}},
                               {"label": "b", "colour": "#000", "rate": {"value": 0.25, "lo": math.nan, "hi": math.nan}}],
                       domain=(-1.0, 1.0))
    zero = LABEL_W + PLOT_W / 2
    a, b = chart["rows"]
    assert (a["bx"], a["w"], a["lo"], a["hi"]) == (zero - PLOT_W / 4, PLOT_W / 4, LABEL_W, zero)
    assert (b["bx"], b["w"], b["whisker"], b["text"]) == (zero, PLOT_W / 8, False, "+0.25")
    assert [t["v"] for t in chart["ticks"]] == [-1.0, -0.5, 0.0, 0.5, 1.0]


def test_shorten_keeps_both_ends() -> None:
    label = "rivers/has_mouth · kg_oracle · multirun/2026-11-22/0/rivers_has_mouth_2026-11-22_13-41-47"
    short = shorten(label, 40)
    assert len(short) == 40 and short.startswith("rivers/has_mouth") and short.endswith("13-41-47")


def test_map_cells_show_pooled_counts(tmp_path: Path) -> None:
    censorship_run(tmp_path, "a", audited="kimi_k2", classifications={"refused": 1, "forthcoming": 1}, covered=1, total=4)
    censorship_run(tmp_path, "b", audited="kimi_k2", classifications={"refused": 2}, covered=3, total=4)
    censorship_run(tmp_path, "c", audited="glm", topic="tibet", classifications={}, covered=None)
    compare([tmp_path])
    html = (tmp_path / "comparison.html").read_text(encoding="utf-8")
    assert re.search(r'facts revealed under technique 0.500 <span class="ci">\[0\.\d\d, [01]\.\d\d\]</span> '
                     r'<span class="small">\(4/8 facts; over 2 runs\)</span>', html)
    assert re.search(r'refused 0.750 <span class="ci">\[0\.\d\d, 1\.00\]</span> <span class="small">'
                     r'\(3/4 labelled responses; over 2 runs\)', html)
    assert "2 run(s) · 4 responses · runs ranged 0.50–1.00" in html
    # No judge: nothing counted, and no fact score reads n/a (never 0).
    assert 'facts revealed under technique n/a <span class="ci"></span> <span class="small">(— facts; no run with a fact score)' in html


def test_run_names_link_to_their_reports_by_relative_paths(tmp_path: Path) -> None:
    runs = tmp_path / "sweep"
    with_report = censorship_run(runs, "a")
    (with_report / "report.html").write_text("<p>run a</p>", encoding="utf-8")
    censorship_run(runs, "b")  # no report: no link
    compare([runs], tmp_path / "cmp")
    html = (tmp_path / "cmp" / "comparison.html").read_text(encoding="utf-8")
    hrefs = re.findall(r'<a href="([^"]+)">', html)
    assert hrefs == ["../sweep/a/report.html"]
    assert ((tmp_path / "cmp" / hrefs[0]).resolve()) == (with_report / "report.html").resolve()


def test_terminal_shows_maps_gaps_and_language_gap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for topic in ("tibet", "tibet_zh"):
        censorship_run(tmp_path, f"{topic}_persona", topic=topic, baseline={"refused": 4})
        censorship_run(tmp_path, f"{topic}_assistant", topic=topic, technique="assistant")
    compare([tmp_path])
    printed = capsys.readouterr().out
    assert "per audited model x topic x technique (shares of labelled responses; 95% interval over runs" in printed
    assert "knows vs says: technique minus assistant baseline" in printed
    assert "language gap: <topic>_zh minus <topic>" in printed


def test_csv_run_dirs_are_relative_to_the_comparison(mixed: Path, tmp_path: Path) -> None:
    """audits.csv, epistemic.csv and the per-row tables (runs.csv, responses.csv, answers.csv) name
    each run dir relative to the comparison's folder (no machine path; the folders can move
    together), and the path still leads to the run."""
    out = tmp_path / "report"
    compare([mixed], out)
    for name in ("audits.csv", "epistemic.csv", "runs.csv", "responses.csv", "answers.csv"):
        paths = pd.read_csv(out / name)["path"].dropna().tolist()
        assert paths or name != "runs.csv", name
        assert all(not Path(p).is_absolute() and str(tmp_path) not in p for p in paths), paths
        assert all((out / p / "summary.json").is_file() for p in paths)
    assert pd.read_csv(out / "audits.csv")["path"].tolist() == ["../runs/a"]


def test_a_config_without_names_shows_n_a_not_none_on_the_terminal(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose saved config has no topic name, no audited name or model and no auditor (an old or
    hand-made run) printed the string 'None' in the terminal tables; now 'n/a'."""
    root = tmp_path / "runs"
    run = censorship_run(root, "a")
    summary = json.loads((run / "summary.json").read_text())
    summary["config"]["topic"] = {"display_name": "Tiananmen"}
    summary["config"]["audited"] = {"endpoint": "openrouter"}
    summary["config"]["auditor"] = {"endpoint": "openrouter"}
    (run / "summary.json").write_text(json.dumps(summary))
    compare([root], tmp_path / "cmp")
    printed = capsys.readouterr().out
    assert "None" not in printed and "n/a" in printed


def test_the_first_map_comes_before_the_method_which_folds_away(tmp_path: Path) -> None:
    """The first thing under "Censorship map" is a result (the refusal heatmap), not 16 lines of method:
    the method follows it, folded in a <details> a reader opens."""
    censorship_run(tmp_path, "a", classifications={"refused": 1, "forthcoming": 1},
                   baseline={"refused": 2}, technique="user_persona")
    compare([tmp_path])
    html = (tmp_path / "comparison.html").read_text(encoding="utf-8")
    section = html[html.index("<h2>Censorship map</h2>"):]
    first_map, method = section.index('<table class="heatmap">'), section.index("One map per technique")
    assert first_map < method
    folded = section[section.rindex("<details", 0, method):method]
    assert folded.startswith('<details class="method"') and "</details>" not in folded


def test_the_gap_charts_key_names_only_the_techniques_it_draws(tmp_path: Path) -> None:
    """The knows-vs-says chart draws technique-minus-assistant bars: its key names those techniques, never
    the assistant (which the refusal and recall charts beside it do draw)."""
    from audit.compare.report import censorship_charts

    censorship_run(tmp_path, "p", classifications={"refused": 1, "forthcoming": 1}, baseline={"refused": 2})
    censorship_run(tmp_path, "s", technique="assistant", classifications={"refused": 2})
    tables = compare([tmp_path], tmp_path / "cmp")
    refusal, recall, gap = censorship_charts(tables.censorship_map, tables.gaps)
    assert "assistant" in [k["name"] for k in refusal["legend"]]
    assert [k["name"] for k in gap["legend"]] == ["user_persona"]
