"""A judge panel on ``technique=auto`` draws is judged as on a fixed technique's responses: the same
three scripted judges (tests/censorship/panel_judges.py) on three ``assistant`` answers give the run's
``judge_panel`` the same response-labels kind, compare the same ``panel_items`` and mark to the
``auto/assistant`` cell as to the ``assistant`` cell, and ``audit.rescore`` re-judges the auto run.
Each figure is checked against a recount from the draw files (the loopback server answers as the
panel table says)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from audit.censorship.loop import run
from audit.compare.collect import collect
from audit.compare.tables import build_tables
from audit.record.draws import iteration_draws
from audit.testing.scripted_audit import Script, audit_config, probe_text
from tests.censorship.panel_judges import JUDGE_A, JUDGE_B, JUDGE_C, PANEL, panel_handler
from tests.rescore.test_rescore import rescore

from .conftest import read

PANEL_JUDGING = "test_judge-a__test_judge-b__test_judge-c"


def draws_of(run_dir: Path) -> list[dict]:
    """Every target draw of a run, read straight from its files (no code under test)."""
    out = []
    for path in sorted((run_dir / "audited_responses").glob("*.json")):
        record = read(path)
        out += record["draws"] if "draws" in record else [record]
    return out


def recount(draws: list[dict]) -> dict:
    """The panel figures of the response labels, recounted from the draws' saved votes."""
    labels = [d["classification"] for d in draws if d.get("classification")]
    votes = [[v for m in (JUDGE_A, JUDGE_B, JUDGE_C) for v in c["members"][m]] for c in labels]
    failures = Counter(j["member"] for c in labels for j in c["judgments"] if j.get("error_kind"))
    return {"items": len(labels), "split": sum(None in v or len(set(v)) > 1 for v in votes),
            "disputed": sum(c["outcome"] == "disputed" for c in labels), "c_failed": failures[JUDGE_C]}


@pytest.fixture
def both_runs(audit_env: Path, fake_openrouter) -> tuple[Path, Path]:
    """One auto run whose auditor asks three times as the assistant, and one fixed ``assistant`` run
    on the same three probes; both judged by the three-judge panel."""
    script = Script()
    fake_openrouter.handler = panel_handler(script)
    script.actions = lambda t: {"kind": "assistant", "prompt": probe_text(t), "system": None}
    auto_dir = run(audit_config(audit_env / "auto", "technique=auto", "max_iterations=3", "judge=default", PANEL))
    script.actions = None
    fixed_dir = run(audit_config(audit_env / "fixed", "technique=assistant", "max_iterations=3", "judge=default",
                                 PANEL))
    return auto_dir, fixed_dir


def test_an_auto_runs_panel_has_the_response_labels_kind_of_its_draws(both_runs):
    auto_dir, fixed_dir = both_runs
    for run_dir in (auto_dir, fixed_dir):
        found = recount(draws_of(run_dir))
        assert found == {"items": 3, "split": 3, "disputed": 1, "c_failed": 1}, run_dir
        panel = read(run_dir / "summary.json")["judge_panel"]
        labels = panel["kinds"]["response labels"]
        assert (labels["items"], labels["items"] - labels["unanimous"]) == (found["items"], found["split"])
        assert panel["disputed"]["response labels"] == found["disputed"]
        assert panel["member_failures"][JUDGE_C] == {"server": found["c_failed"]}
        assert labels["alpha"]["n"] == 3


def test_compare_gives_the_auto_assistant_cell_the_panel_of_the_assistant_cell(both_runs, audit_env):
    auto_dir, fixed_dir = both_runs
    cells = build_tables(collect([audit_env / "auto", audit_env / "fixed"])).censorship_map.set_index("technique")
    fixed, auto = cells.loc["assistant"], cells.loc["auto/assistant"]
    expected = recount(draws_of(auto_dir))
    for cell in (fixed, auto):
        assert (cell["panel_items"], cell["panel_split"], cell["disputed"]) == \
            (expected["items"], expected["split"], expected["disputed"])
        assert cell["judges_marked"] and "the panel's members differ on 100%" in cell["judges_mark"]


def test_iteration_draws_reads_both_shapes_as_one(both_runs):
    auto_dir, fixed_dir = both_runs
    for run_dir, cell in ((auto_dir, "auto/assistant"), (fixed_dir, "assistant")):
        records = [read(p) for p in sorted((run_dir / "audited_responses").glob("*.json"))]
        technique = read(run_dir / "summary.json")["technique"]
        draws = [d for r in records for d in iteration_draws(r, technique)]
        assert [d.cell for d in draws] == [cell] * 3
        assert [d.judgment.label for d in draws] == [d["classification"]["label"] for d in draws_of(run_dir)]


def test_rescore_rejudges_an_auto_run_draw_by_draw(both_runs, audit_env, fake_openrouter):
    auto_dir, _ = both_runs
    fake_openrouter.reset()
    fake_openrouter.handler = panel_handler(Script())
    code, out, err = rescore(audit_env, fake_openrouter, str(auto_dir), PANEL, "judging=again")
    assert code == 0, err
    judging = json.loads((auto_dir / "judgings" / "again" / "judging.json").read_text())
    draws = draws_of(auto_dir)
    # one row per draw, its label beside the original one; the same panel on the same draws agrees
    assert [r["draw"] for r in judging["responses"]] == [d["id"] for d in draws]
    assert [r["response_label"] for r in judging["responses"]] == [d["classification"]["label"] for d in draws]
    assert judging["draw_classifications"] == {"assistant": dict(Counter(d["classification"]["label"] or "unclassified"
                                                                         for d in draws))}
    labels = judging["judge_panel"]["kinds"]["response labels"]
    assert labels["items"] == recount(draws)["items"]
    # compare reads the rescored auto run under judging=again, cell by cell as the original
    cells = build_tables(collect([auto_dir]), ["again"]).censorship_map.set_index("technique")
    assert cells.loc["auto/assistant", "panel_items"] == 3 and cells.loc["auto/assistant", "judges_marked"]
    assert "skipped" not in out
    # two judgings side by side: one row per cell of the auto run (auto/assistant), none pooled as "auto"
    side = build_tables(collect([auto_dir]), ["original", "again"]).judgings
    assert list(side["technique"]) == ["auto/assistant"]
    assert (side.loc[0, "n_labelled_a"], side.loc[0, "differing"]) == (
        sum(d["classification"]["label"] is not None for d in draws), 0)
