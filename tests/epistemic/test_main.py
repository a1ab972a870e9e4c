"""End to end: ``python -m audit.epistemic`` in a subprocess, in a temporary cwd."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from audit.testing.replies import chat_reply
from audit.testing.server import FakeOpenRouter
from tests import entrypoints


def run_cli(cwd: Path, *args: str, env: dict[str, str] | None = None, cold: bool = False) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    return entrypoints.run([sys.executable, "-m", "audit.epistemic", *args], cwd=cwd, env={**base, **(env or {})},
                           capture_output=True, text=True, timeout=120, cold=cold)


def only_run_dir(cwd: Path) -> Path:
    (run_dir,) = (cwd / "outputs" / "epistemic").iterdir()
    return run_dir


def test_no_arguments_runs_rivers_through_the_oracle_without_a_key(tmp_path):
    """Cold on purpose (tests/entrypoints.py): the README's first epistemic command in a fresh interpreter."""
    proc = run_cli(tmp_path, cold=True)
    assert proc.returncode == 0, proc.stderr
    run_dir = only_run_dir(tmp_path)
    assert run_dir.name.startswith("rivers_has_mouth_")
    for name in ("config.yaml", "cards.jsonl", "results.jsonl", "metrics.json", "report.html"):
        assert (run_dir / name).stat().st_size > 0, name
    m = json.loads((run_dir / "metrics.json").read_text())["kg_oracle"]
    assert m["n_rows"] == 1800 and m["n_errors"] == 0
    assert [m["metrics"][k]["value"] for k in ("AP", "CVRR", "LA", "FAR_NE")] == [1, 1, 1, 0]
    assert set(m["suites"]) == {"standard", "distractor", "near_miss"}
    assert "AP=1.000" in proc.stdout


def test_local_true_with_only_the_oracle_starts_no_model_server(tmp_path):
    proc = run_cli(tmp_path, "local=true", "cards.num_per_type=2", "cards.suites=[standard]")
    assert proc.returncode == 0, proc.stderr
    assert "embedded model" not in proc.stdout  # the line local=true prints when it starts the server
    assert json.loads((only_run_dir(tmp_path) / "metrics.json").read_text())["kg_oracle"]["n_errors"] == 0


def test_per_system_settings_give_each_listed_system_its_own_endpoint(tmp_path, fake_openrouter):
    """With systems=[...], system.endpoint=... reaches only the `system` choice; per_system.<name> reaches any."""
    fake_openrouter.default_reply = chat_reply('{"answer": "YES"}')
    with FakeOpenRouter(default_reply=chat_reply('{"answer": "NO"}')) as gpu:
        proc = run_cli(tmp_path, "systems=[raw_llm,rag]", "+per_system.rag.endpoint=gpu",
                       "+per_system.rag.model=acme/local", f"+gateway.endpoints.gpu={{api_base: '{gpu.base_url}'}}",
                       "cards.num_per_type=2", "cards.suites=[standard]", env=fake_openrouter.env())
        assert proc.returncode == 0, proc.stderr
        assert {r.json["model"] for r in gpu.chat_requests()} == {"acme/local"} and len(gpu.chat_requests()) == 6
    assert len(fake_openrouter.chat_requests()) == 6  # raw_llm stayed on openrouter
    rows = [json.loads(line) for line in (only_run_dir(tmp_path) / "results.jsonl").read_text().splitlines()]
    assert {(r["system"], r["pred"]) for r in rows} == {("raw_llm:openai/gpt-4o-mini", "YES"), ("rag:acme/local", "NO")}

    typo = run_cli(tmp_path, "systems=[raw_llm,rag]", "+per_system.rag.endpont=gpu", env=fake_openrouter.env())
    assert typo.returncode != 0 and "Did you mean 'endpoint'" in typo.stderr and "Traceback" not in typo.stderr
    absent = run_cli(tmp_path, "systems=[raw_llm]", "+per_system.rag.endpoint=gpu", env=fake_openrouter.env())
    assert absent.returncode != 0 and "per_system.rag: rag is not a system of this run" in absent.stderr


def test_raw_llm_against_the_loopback_server_stores_half_an_emoji_in_every_answer(tmp_path, fake_openrouter):
    """A raw_llm run's rows, calls, metrics, ledger and cost line; every answer ends in half an emoji, which
    is stored (as U+FFFD) and is no error (once a test of its own, which ran this same run again)."""
    from audit.testing.replies import BROKEN_EMOJI
    fake_openrouter.default_reply = chat_reply('{"answer": "UNKNOWN"} ' + BROKEN_EMOJI)
    proc = run_cli(tmp_path, "system=raw_llm", "system.model=acme/tiny", "cards.num_per_type=2",
                   env=fake_openrouter.env())
    assert proc.returncode == 0, proc.stderr
    run_dir = only_run_dir(tmp_path)
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 18 and all(r["pred"] == "UNKNOWN" and r["system"] == "raw_llm:acme/tiny" for r in rows)
    assert all(r["error"] is None and r["raw_output"].endswith("\ufffd") for r in rows), "half an emoji is stored"
    assert len(fake_openrouter.chat_requests()) == 18
    assert fake_openrouter.chat_requests()[0].json["model"].endswith("acme/tiny")
    usage = json.loads((run_dir / "usage.json").read_text())
    assert usage["totals"]["calls"] == 18
    m = json.loads((run_dir / "metrics.json").read_text())["raw_llm:acme/tiny"]["metrics"]
    assert m["coverage"]["value"] == 0 and m["LA"]["value"] == 0 and m["AP"]["value"] == 12 / 18
    assert "test-key-123" not in (run_dir / "config.yaml").read_text()
    assert "answered 18/18" in proc.stdout
    cost = f"${usage['totals']['cost']:.4f} over 18 calls"
    assert f"cost: {cost}" in proc.stdout  # cost per run: terminal, report, and (via summary.json) the comparison
    assert cost in (run_dir / "report.html").read_text(encoding="utf-8")
    assert json.loads((run_dir / "summary.json").read_text())["usage"]["cost"] == usage["totals"]["cost"]


def test_bad_cards_line_and_unknown_predicate_are_one_line_errors(tmp_path):
    cards = tmp_path / "cards.jsonl"
    cards.write_text('{"id": "CARD_E_000000"}\n')
    for args, expected in (
        ((f"cards.path={cards}",), "cards.jsonl line 1:"),
        (("predicate=has_capital",), "Unknown predicate 'has_capital' for domain 'rivers'"),
    ):
        proc = run_cli(tmp_path, *args)
        assert proc.returncode == 1
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], proc.stderr
    assert not (tmp_path / "outputs").exists()


def test_metrics_stage_on_an_original_results_file(tmp_path):
    original = tmp_path / "gpt4_balanced.jsonl"
    rows = [{"id": f"CARD_{x}_{i}", "gold": g, "pred": p, "pass": g == p, "system": "gpt-4", "label": x}
            for x, g, p in (("E", "YES", "YES"), ("C", "NO", "NO"), ("U", "UNKNOWN", "NO")) for i in range(10)]
    original.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = run_cli(tmp_path, "stage=metrics", f"results={original}", "metrics.mapping=legacy")
    assert proc.returncode == 0, proc.stderr
    m = json.loads((only_run_dir(tmp_path) / "metrics.json").read_text())["gpt-4"]["metrics"]
    # the original's published balanced_metrics.json for this table
    assert m["AP"] is None and m["CVRR"]["value"] == 0 and m["FAR_NE"]["value"] == 1 and m["LA"]["value"] == 1


def test_sweep_runs_every_job_and_records_a_failed_one(tmp_path):
    proc = run_cli(tmp_path, "-m", "predicate=has_capital,has_mouth", "cards.num_per_type=1")
    assert proc.returncode == 1
    (sweep,) = (tmp_path / "multirun").iterdir()
    failed = json.loads((sweep / "0" / "summary.json").read_text())
    assert failed["status"] == "error" and "Unknown predicate 'has_capital'" in failed["error"]
    (run_dir,) = (sweep / "1").glob("rivers_has_mouth_*")
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "success"
    assert (run_dir / "report.html").is_file()
    assert "1 sweep job(s) failed" in proc.stderr


def test_a_run_whose_answers_are_mostly_errors_says_so_and_exits_1(tmp_path, fake_openrouter):
    """Six cards (one suite) fail as the 18 of three suites did: the stop is a share of the answers."""
    from audit.testing.replies import error_in_200
    fake_openrouter.handler = lambda request: error_in_200(502, "upstream provider died")
    proc = run_cli(tmp_path, "system=raw_llm", "system.model=acme/tiny", "cards.num_per_type=2",
                   "cards.suites=[standard]",
                   "gateway.max_retries=1", "gateway.backoff_initial_s=0.01", env=fake_openrouter.env())
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "6/6 answers are errors" in line and "upstream provider died" in line and "Traceback" not in proc.stderr
    run_dir = only_run_dir(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["stop_reason"]) == ("error", "mostly_errors") and summary["answer_errors"] == {"raw_llm:acme/tiny": [6, 6]}
    usage = json.loads((run_dir / "usage.json").read_text())
    # every call, its retries and its error are in the ledger and the summary alike
    assert usage["totals"] == summary["usage"] and usage["totals"]["errors"] == 6
    assert len(fake_openrouter.requests) == 6 * 2 == usage["totals"]["calls"] + usage["totals"]["retries"]
    assert (run_dir / "usage.jsonl").read_text().count("\n") == 6


def test_a_401_mid_run_leaves_an_error_summary_not_running(tmp_path, fake_openrouter):
    """Before: the summary stayed "running" and compare called the run killed, offering a resume."""
    from audit.compare.collect import collect
    from audit.testing.replies import error_reply
    calls = []

    def handler(request):
        calls.append(request)
        return chat_reply('{"answer": "YES"}') if len(calls) <= 3 else error_reply(401, "key revoked")

    fake_openrouter.handler = handler
    proc = run_cli(tmp_path, "system=raw_llm", "cards.num_per_type=2", "gateway.max_retries=0",
                   "gateway.cache.enabled=false", "gateway.max_concurrency=1", env=fake_openrouter.env())
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1 and "key revoked" in proc.stderr
    run_dir = only_run_dir(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "error" and summary["answered"] == 3 and "key revoked" in summary["error"]
    (listed,) = collect([tmp_path / "outputs"]).failures
    assert listed.status == "error"
