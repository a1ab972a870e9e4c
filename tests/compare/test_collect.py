from __future__ import annotations

from pathlib import Path

import pytest

from audit.compare.collect import CENSORSHIP, EPISTEMIC, Failure, Run, collect, read_run
from audit.compare.tables import build_tables
from audit.errors import UserError
from audit.io.lock import hold_lock
from audit.record.run_record import experiment_of, find_run_dirs
from audit.record.summary import guess_experiment
from tests.compare.fake_runs import censorship_run, corrupt_summary, epistemic_run, failed_job, rate


def sweep(tmp_path: Path) -> Path:
    """A multirun/<date>/ layout: job 0 succeeded (run dir inside), job 1 failed (summary in the job dir)."""
    root = tmp_path / "multirun" / "2026-11-22_10-00-00"
    epistemic_run(root / "0", "rivers_has_mouth_2026", {"kg_oracle": {"AP": rate(1, 0.9, 1)}})
    failed_job(root, "1", "OPENROUTER_API_KEY is not set")
    (root / "multirun.yaml").write_text("hydra: {}\n")
    return root


def test_finds_runs_in_numbered_job_dirs(tmp_path: Path) -> None:
    root = sweep(tmp_path)
    assert find_run_dirs(root) == [root / "0" / "rivers_has_mouth_2026", root / "1"]


def test_a_failed_job_is_a_failure_with_its_error(tmp_path: Path) -> None:
    root = sweep(tmp_path)
    found = collect([root])
    assert [r.label for r in found.runs] == ["2026-11-22_10-00-00/0/rivers_has_mouth_2026"]
    (failure,) = found.failures
    assert (failure.label, failure.kind, failure.status, failure.problem) == (
        "2026-11-22_10-00-00/1", EPISTEMIC, "error", "OPENROUTER_API_KEY is not set")


def test_a_single_run_dir_and_overlapping_roots_count_each_run_once(tmp_path: Path) -> None:
    run = censorship_run(tmp_path / "outputs", "deepseek_chat_tiananmen_2026")
    found = collect([run, tmp_path / "outputs"])
    assert [r.path for r in found.runs] == [run.resolve()]
    assert found.runs[0].label == "deepseek_chat_tiananmen_2026"


def test_kind_by_files_then_by_old_summary_keys(tmp_path: Path) -> None:
    audit = censorship_run(tmp_path, "a")
    epi = epistemic_run(tmp_path, "e", {"kg_oracle": {}})
    bare = tmp_path / "bare"
    bare.mkdir()
    assert experiment_of(audit) == CENSORSHIP
    assert experiment_of(epi) == EPISTEMIC
    assert experiment_of(bare) is None
    assert guess_experiment({"status": "error", "stage": "all"}) == EPISTEMIC
    assert guess_experiment({"status": "error", "config": {"topic": {"name": "x"}}}) == CENSORSHIP
    assert guess_experiment({"status": "error"}) is None


def test_a_failed_censorship_job_keeps_its_experiment(tmp_path: Path) -> None:
    failed_job(tmp_path, "0", "OPENROUTER_API_KEY is not set", experiment=CENSORSHIP)
    (failure,) = collect([tmp_path]).failures
    assert (failure.kind, failure.status) == (CENSORSHIP, "error")


def test_corrupt_summary_names_the_file_and_the_problem(tmp_path: Path) -> None:
    item = read_run(corrupt_summary(tmp_path, "broken"), "broken")
    assert isinstance(item, Failure)
    assert (item.kind, item.status) == (CENSORSHIP, "unreadable")
    assert "summary.json: not valid JSON" in item.problem  # the file named, whole path


def test_corrupt_metrics_and_non_object_json_are_failures(tmp_path: Path) -> None:
    run = epistemic_run(tmp_path, "e", {"kg_oracle": {}})
    (run / "metrics.json").write_text("[1, 2]")
    item = read_run(run, "e")
    assert isinstance(item, Failure) and item.problem == "metrics.json: expected a JSON object, found list"


def test_a_good_run_is_read_with_its_metrics(tmp_path: Path) -> None:
    run = epistemic_run(tmp_path, "e", {"kg_oracle": {"AP": rate(0.5, 0.2, 0.8)}})
    item = read_run(run, "e")
    assert isinstance(item, Run) and item.status == "success"
    assert item.metrics is not None and item.metrics.root["kg_oracle"].rate("AP")["value"] == 0.5


def test_no_runs_is_a_one_line_user_error(tmp_path: Path) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(UserError) as err:
        collect([tmp_path / "empty"])
    assert str(err.value) == (f"no runs found under {tmp_path / 'empty'}; "
                              "pass a run dir, outputs/ or a multirun/ sweep dir")
    with pytest.raises(UserError, match="is not a directory"):
        collect([tmp_path / "missing"])


def test_job_dirs_in_numeric_order(tmp_path: Path) -> None:
    for n in (10, 2, 1):
        failed_job(tmp_path, str(n), "x")
    assert [p.name for p in find_run_dirs(tmp_path)] == ["1", "2", "10"]


def test_unfinished_runs_of_both_kinds_are_listed_as_such(tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    censorship_run(out, "done")
    killed = censorship_run(out, "killed", status="started", classifications={})
    (killed / "audited_responses" / "001.json").write_text("{}")
    censorship_run(out, "interrupted", status="cancelled", stop_reason="interrupted", error="interrupted")
    old = censorship_run(out, "old_interrupted")
    (old / "summary.json").write_text('{"status": "error", "error": "interrupted", "totals": {}}')  # before audit.runs
    for name in ("no_summary", ".kimi_k2_tiananmen_2026.x1y2.tmp"):  # the second: killed while it was built
        (out / name / "auditor_turns").mkdir(parents=True)
        (out / name / "config.yaml").write_text("topic: {name: tiananmen}\n")
    live = censorship_run(out, "live", status="started")
    lock = hold_lock(live, "resume=live")
    for name, status in (("e_interrupted", "interrupted"), ("e_killed", "running")):
        run = out / name
        run.mkdir()
        (run / "cards.jsonl").write_text("{}\n" * 36)
        (run / "answers.jsonl").write_text('{"id": "x"}\n' * 10)
        (run / "summary.json").write_text(f'{{"status": "{status}", "stage": "all", "expected_answers": 36}}')
    try:
        found = collect([out])
    finally:
        lock.close()
    rows = {Path(f.label).name: (f.kind, f.status, f.problem) for f in found.failures}
    assert {name: row[:2] for name, row in rows.items()} == {
        "killed": (CENSORSHIP, "killed"), "interrupted": (CENSORSHIP, "cancelled"),
        "old_interrupted": (CENSORSHIP, "cancelled"), "no_summary": (CENSORSHIP, "killed"),
        "live": (CENSORSHIP, "running"), "e_interrupted": (EPISTEMIC, "cancelled"), "e_killed": (EPISTEMIC, "killed")}
    assert f"1 iteration(s) on disk; continue with: python -m audit resume={killed}" in rows["killed"][2]
    assert "10/36 answers on disk" in rows["e_interrupted"][2] and "audit.epistemic resume=" in rows["e_killed"][2]
    assert "still running (pid " in rows["live"][2]
    assert [Path(r.label).name for r in found.runs] == ["done"]
    assert list(build_tables(found).audits["status"]) == ["success"]  # none of them as a result
