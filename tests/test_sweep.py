"""Sweeps as a user runs them (``python -m audit -m ...`` in a subprocess, loopback server):
the exit status and the comparison at the end come from the job dirs' files, with the joblib and submitit launchers too."""

from __future__ import annotations

import json

import pytest

from audit.testing.scripted_audit import Script
from tests.censorship.test_main import BASE, audit, finish, kimi_fails

SWEEP = [a for a in BASE if not a.startswith("output_dir")]


@pytest.mark.parametrize("launcher", [
    ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"],  # the jobs run in other processes
], ids=["joblib", "submitit_local"])
def test_sweep_with_one_failing_job_exits_1_and_still_writes_the_comparison(tmp_path, fake_openrouter, launcher):
    fake_openrouter.handler = kimi_fails(404, "no such model")
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2,deepseek_chat",
                                  *launcher, *SWEEP))
    assert code == 1
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    assert (sweep_dir / "comparison.html").is_file()
    assert "sweep: 2 job(s): 1 completed, 1 failed" in err and "failed job 0" in err and "no such model" in err
    assert f"comparison: multirun/{sweep_dir.name}/comparison.html" in err
    assert "job 0" in err.splitlines()[-1]  # the exit line names the failed job
    assert (sweep_dir / "0" / "job.log").is_file() and (sweep_dir / "1" / "job.log").is_file()


def test_samples_give_distinct_repeats_and_a_rerun_sends_nothing(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=2)
    fake_openrouter.handler = script.handler
    args = [a for a in BASE if "cache" not in a] + ["audited=deepseek_chat", "samples=3"]
    code, out, err = finish(audit(tmp_path, fake_openrouter, *args))
    assert code == 0, err
    runs = sorted((tmp_path / "out").iterdir())
    assert len(runs) == 3
    assert sorted(json.loads((r / "summary.json").read_text())["config"]["repeat"] for r in runs) == [0, 1, 2]
    sent = len(fake_openrouter.requests)
    code, _, err = finish(audit(tmp_path, fake_openrouter, *args))
    assert code == 0, err
    assert len(fake_openrouter.requests) == sent  # every repeat came from the cache


def test_a_spent_budget_stops_the_run_cleanly(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=5)
    fake_openrouter.handler = script.handler
    code, out, err = finish(audit(tmp_path, fake_openrouter, *BASE, "audited=deepseek_chat",
                                  "budget.max_cost_usd=0.0000001"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "stopped_budget" and "budget" in summary["error"]
    assert "stopped: budget spent" in out


def test_the_slurm_launcher_config_composes_with_its_defaults_and_overrides(tmp_path):
    """A sweep moved to a cluster is one override; checked by composing, since no Slurm runs here."""
    code, out, err = finish(audit(tmp_path, None, "hydra/launcher=slurm", "hydra.launcher.partition=gpu",
                                  "--cfg", "hydra"))
    assert code == 0, err
    launcher = out.split("\n  launcher:\n", 1)[1].split("\n  sweeper:", 1)[0]
    assert "SlurmLauncher" in launcher and "partition: gpu" in launcher
    assert "timeout_min: 240" in launcher and "cpus_per_task: 2" in launcher


def test_a_sweep_budget_stops_every_job_cleanly_and_loses_no_charge(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script(stop_at_turn=5).handler
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2,deepseek_chat",
                                  "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                                  "budget.max_cost_usd=0.0000001", "gateway.max_concurrency=2", *SWEEP))
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    summaries = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/*/summary.json"))]
    assert [s["status"] for s in summaries] == ["stopped_budget", "stopped_budget"], err
    assert code == 0, err  # stopped by the budget is not a failure
    assert "0 completed, 0 failed, 2 stopped by budget" in out
    budget = json.loads((sweep_dir / "budget.json").read_text())
    ledgers = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/*/usage.json"))]
    # every charge is in some run's ledger, and past the cap only calls already in flight were charged
    assert budget["spent_usd"] == pytest.approx(sum(u["totals"]["cost"] for u in ledgers))
    assert budget["charged_calls"] <= 2 * 2
    assert (sweep_dir / "comparison.html").is_file()
