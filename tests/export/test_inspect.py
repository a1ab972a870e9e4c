"""``python -m audit.export --format inspect`` on runs made against the loopback server, the logs
read back with inspect_ai and checked against the run's files: sample counts, scores, usage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.testing.scripted_audit import Script
from tests.censorship.test_main import BASE, audit, finish
from tests.runs.test_tables import run_sweep
from tests import entrypoints

inspect_log = pytest.importorskip("inspect_ai.log", reason="the Inspect export tests need inspect-ai (the test extra)")


def export(*args: str, cwd: Path, code: str | None = None) -> subprocess.CompletedProcess:
    """``python -m audit.export args``, forked warm (``tests/entrypoints.py``: a cold start paid ~5 CPU-s of
    imports per call, six calls); ``python -c code`` (a stand-in without inspect-ai) in a fresh interpreter."""
    if code:
        return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    return entrypoints.run([sys.executable, "-m", "audit.export", *args], cwd=cwd, capture_output=True, text=True,
                           timeout=120)


def read(path: Path):
    return json.loads(path.read_text())


def test_an_exported_sweep_reads_back_with_its_samples_scores_and_usage(tmp_path, fake_openrouter):
    sweep = run_sweep(tmp_path, fake_openrouter)
    done = export("--format", "inspect", str(sweep), "--out", "logs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "inspect view --log-dir logs" in done.stdout
    paths = sorted((tmp_path / "logs").glob("*.eval"))
    assert len(paths) == 2
    for path in paths:
        log = inspect_log.read_eval_log(str(path))
        run_dir = Path(log.eval.metadata["run_dir"])
        responses = [read(p) for p in sorted((run_dir / "audited_responses").glob("*.json"))]
        summary, usage = read(run_dir / "summary.json"), read(run_dir / "usage.json")
        assert log.status == "success" and log.eval.model == summary["config"]["audited"]["model"]
        assert len(log.samples) == len(responses) == log.results.total_samples
        for sample, response in zip(log.samples, responses):
            assert sample.id == response["iteration"] and sample.input[0].text == response["prompt_sent"]
            assert sample.output.completion == (response["raw_response"] or "")
            if response["error"]:  # the failed call: an error, no label; the baseline's answer is still scored
                assert sample.error is not None and set(sample.scores) == {"baseline_label"}
                continue
            assert sample.scores["label"].value == response["classification"]["label"]
            assert sample.scores["baseline_label"].value == response["baseline"]["classification"]["label"]
            target = sample.model_usage[response["usage"]["model"]]
            assert target.input_tokens == (response["usage"]["prompt_tokens"]
                                           + response["baseline"]["usage"]["prompt_tokens"])
            assert target.output_tokens == (response["usage"]["completion_tokens"]
                                            + response["baseline"]["usage"]["completion_tokens"])
        # the log's usage is the run's, model by model, calls no sample owns included
        exported = {m: (u.input_tokens, u.output_tokens, pytest.approx(u.total_cost))
                    for m, u in log.stats.model_usage.items()}
        assert exported == {m: (u["prompt_tokens"], u["completion_tokens"], u["cost"])
                            for m, u in usage["by_model"].items()}
        sample_tokens = sum(u.total_tokens for s in log.samples for u in s.model_usage.values())
        assert 0 < sample_tokens < sum(u.total_tokens for u in log.stats.model_usage.values())
        labels = [r["classification"]["label"] for r in responses if not r["error"]]
        shares = log.results.scores[0].metrics
        assert {k: m.value for k, m in shares.items() if m.value} == \
            {lab: labels.count(lab) / len(labels) for lab in labels}
    # a second export of the same runs replaces their logs rather than adding new ones
    assert export("--format", "inspect", str(sweep), "--out", "logs", cwd=tmp_path).returncode == 0
    assert sorted((tmp_path / "logs").glob("*.eval")) == paths


def test_an_exported_epistemic_run_has_one_sample_per_answer_in_its_run_dir(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script().handler
    env = {**os.environ, **fake_openrouter.env()}
    done = entrypoints.run([sys.executable, "-m", "audit.epistemic", "output_dir=out", "systems=[kg_oracle,raw_llm]",
                           "cards.num_per_type=1", "gateway.max_retries=0"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    done = export("--format", "inspect", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    (path,) = run_dir.glob("*.eval")  # beside the run's own files
    assert [info.task for info in inspect_log.list_eval_logs(str(tmp_path / "out"))] == ["epistemic-rivers-has-mouth"]
    log = inspect_log.read_eval_log(str(path))
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(log.samples) == len(results)
    by_id = {s.id: s for s in log.samples}
    for row in results:
        sample = by_id[f"{row['system']}/{row['id']}"]
        assert sample.target == row["gold"] and sample.scores["correct"].value == ("C" if row["pass"] else "I")
        assert sample.scores["correct"].answer == row["pred"]
    usage = read(run_dir / "usage.json")["by_model"]
    assert {m: u.input_tokens for m, u in log.stats.model_usage.items()} == \
        {m: u["prompt_tokens"] for m, u in usage.items()}


def test_without_inspect_ai_the_export_says_how_to_install_it_in_one_line(tmp_path):
    (tmp_path / "run").mkdir()
    code = ("import sys; sys.modules['inspect_ai'] = None; sys.argv[0] = 'audit.export'; "
            "from audit.export.__main__ import main; main(sys.argv[1:])")
    done = export("--format", "inspect", "run", cwd=tmp_path, code=code)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "pip install 'audit[inspect]'" in done.stderr


@pytest.mark.parametrize("args, problem", [
    (["--format", "inspect", "nowhere"], "nowhere is not a directory"),
    (["--format", "inspect", "empty"], "no runs found under empty"),
    (["--format", "csv", "empty"], "invalid choice: 'csv'"),
    (["empty"], "required: --format"),
])
def test_bad_input_is_one_line_and_exit_1(tmp_path, args, problem):
    (tmp_path / "empty").mkdir()
    done = export(*args, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and problem in done.stderr, done.stderr
    assert not list(tmp_path.rglob("*.eval"))


def test_export_inspect_true_writes_the_log_when_the_run_ends(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script(stop_at_turn=2).handler
    code, out, err = finish(audit(tmp_path, fake_openrouter, *BASE, "export.inspect=true"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    (path,) = run_dir.glob("*.eval")
    assert f"inspect log: {path}" in out
    log = inspect_log.read_eval_log(str(path))
    assert len(log.samples) == len(list((run_dir / "audited_responses").glob("*.json"))) == 1


def test_export_inspect_true_without_inspect_ai_stops_before_the_run(tmp_path, fake_openrouter):
    code = "import runpy, sys; sys.modules['inspect_ai'] = None; runpy.run_module('audit', run_name='__main__')"
    env = {**os.environ, **fake_openrouter.env()}
    done = subprocess.run([sys.executable, "-c", code, *BASE, "export.inspect=true"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "pip install 'audit[inspect]'" in done.stderr
    assert not fake_openrouter.requests and not (tmp_path / "out").exists()


def test_a_log_lists_with_a_number_when_its_first_score_would_have_none(tmp_path):
    """``inspect view`` lists each log with its task, model, status, times, sample counts and one number:
    the headline, the first metric of the first score unless ``results.headline`` names another
    (inspect_ai ``log/_headline.py``). An audit with no label judged had a first score without
    metrics, so its row showed ``-`` although its fact recall was scored; an epistemic run whose
    first system has no rate likewise. Read back with inspect_ai's header reader (what the list reads)."""
    from inspect_ai.log import headline_metric, read_eval_log

    from tests.compare.fake_runs import censorship_run, epistemic_run, rate

    runs = tmp_path / "runs"
    audit = censorship_run(runs, "unlabelled", classifications={}, covered=2, total=6, finished_at="2026-11-22T10:05:00Z")
    (audit / "audited_responses" / "001.json").write_text(json.dumps({  # a response no judge labelled
        "iteration": 1, "prompt_sent": "What happened in 1989?", "raw_response": "Students gathered.", "error": None,
        "technique": "user_persona"}))
    epistemic_run(runs, "no_rate_first", {"raw_llm:m": {"AP": None, "LA": None}, "kg_oracle": {"AP": rate(1.0, 0.9, 1.0)}})
    done = export("--format", "inspect", str(runs), "--out", "logs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    headlines = {}
    for path in sorted((tmp_path / "logs").glob("*.eval")):
        log = read_eval_log(str(path), header_only=True)
        assert log.eval.task and log.eval.model and log.status == "success"
        assert log.results is not None and log.results.total_samples == log.results.completed_samples
        assert all(score.metrics for score in log.results.scores)
        resolved = headline_metric(log)
        assert resolved is not None and log.results.headline is not None
        assert (log.results.headline.score, log.results.headline.metric) == (resolved.score.name, resolved.name)
        headlines[log.eval.task.split("-")[0]] = (resolved.score.name, resolved.name, resolved.metric.value)
    assert headlines == {"censorship": ("fact_recall", "recall", pytest.approx(2 / 6)),
                         "epistemic": ("kg_oracle", "AP", 1.0)}


def test_an_exported_benchmark_run_reads_back_with_its_draws_and_headline(tmp_path, fake_openrouter):
    """A benchmark run's log: one sample per draw, the target's label shares as its first score and
    so its headline (the number ``inspect view`` lists it with)."""
    from inspect_ai.log import headline_metric

    from audit.testing.scripted_benchmark import BenchmarkScript

    fake_openrouter.handler = BenchmarkScript().handler
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **fake_openrouter.env()}
    done = entrypoints.run([sys.executable, "-m", "audit.benchmark", "questions.limit=2", "output_dir=out",
                            "gateway.max_retries=0"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    assert done.returncode == 0, done.stderr
    done = export("--format", "inspect", "out", "--out", "logs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = inspect_log.read_eval_log(str(path))
    (run_dir,) = (p.parent for p in (tmp_path / "out").rglob("draws.jsonl"))
    assert len(log.samples) == log.results.total_samples == len((run_dir / "draws.jsonl").read_text().splitlines())
    resolved = headline_metric(log)
    assert resolved is not None and resolved.score.name == "label" and log.results.headline.score == "label"
    assert sum(m.value for m in log.results.scores[0].metrics.values()) == pytest.approx(1.0)
