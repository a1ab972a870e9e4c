"""Sweeps as a user runs them (``python -m audit -m ...`` in a subprocess, loopback server):
the exit status and the comparison at the end come from the job dirs' files, with the joblib and submitit launchers too."""

from __future__ import annotations

import json

import pytest

from audit.testing.scripted_audit import BASELINE, Script, chat_role
from tests.censorship.test_main import BASE, audit, finish, kimi_fails

SWEEP = [a for a in BASE if not a.startswith("output_dir")]


NO_KEY = ("+gateway.endpoints.gpu={api_base: 'http://127.0.0.1:9/v1', key_env: AUDIT_TEST_UNSET_KEY}",
          "audited=deepseek_chat", "audited.endpoint=gpu,openrouter")
"""A sweep whose job 0 fails before its first call (its endpoint's key is not set) and job 1 completes."""


@pytest.mark.parametrize(("launcher", "sweep", "failure"), [
    (["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], NO_KEY, "AUDIT_TEST_UNSET_KEY is not set"),
    (["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"], NO_KEY,  # the jobs run in other processes
     "AUDIT_TEST_UNSET_KEY is not set"),
    (["hydra/launcher=warm", "hydra.launcher.n_jobs=2"], ["audited=kimi_k2,deepseek_chat"], "no such model"),
], ids=["joblib", "submitit_local", "warm"])
def test_sweep_with_one_failing_job_exits_1_and_still_writes_the_comparison(tmp_path, fake_openrouter, launcher,
                                                                            sweep, failure):
    """Each launcher's jobs report back how they ended, a failure with its error, and the sweep goes on.

    Under the warm launcher job 0's target answers 404 (a failed call, as a user's typo in a model id
    gives). Under joblib and submitit every job is a fresh interpreter that pays ~4.5 CPU-s for litellm
    at its first call, so there job 0 fails before any call (an endpoint whose key is not set) and only
    job 1 pays it: what those launchers add, a job's end and its error crossing from a process of their
    own to the sweep's end, is the same either way (until issue 40 cut the suite's cost, both of their
    jobs called, ~15 CPU-s per launcher)."""
    fake_openrouter.handler = kimi_fails(404, "no such model")
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", *sweep, *launcher, *SWEEP))
    assert code == 1
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    assert (sweep_dir / "comparison.html").is_file()
    assert "sweep: 2 job(s): 1 completed, 1 failed" in err and "failed job 0" in err and failure in err
    assert f"comparison: multirun/{sweep_dir.name}/comparison.html" in err
    assert "job 0" in err.splitlines()[-1]  # the exit line names the failed job
    assert (sweep_dir / "0" / "job.log").is_file() and (sweep_dir / "1" / "job.log").is_file()


def test_a_ray_sweep_with_one_failing_job_exits_1_and_writes_the_comparison(tmp_path, fake_openrouter, monkeypatch):
    """hydra/launcher=ray_io starts a local Ray instance; the jobs run in Ray workers. Needs the
    [ray] extra (Ray is large, so the test extra does not pull it): without it this test skips."""
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="the [ray] extra is not installed")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # else Ray writes a token into ~/.ray
    fake_openrouter.handler = kimi_fails(404, "no such model")
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2,deepseek_chat",
                                  "hydra/launcher=ray_io", "+hydra.launcher.ray.init.num_cpus=1", *SWEEP))
    assert code == 1, err
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    assert "sweep: 2 job(s): 1 completed, 1 failed" in err and "no such model" in err
    assert (sweep_dir / "comparison.html").is_file() and (sweep_dir / "1" / "job.log").is_file()


def test_samples_give_distinct_repeats_and_a_rerun_sends_nothing(tmp_path, fake_openrouter, cache_root):
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
    # the cache is under the one cache root ($AUDIT_CACHE_DIR here), never in the start dir
    assert (cache_root / "responses.sqlite").is_file() and not (tmp_path / ".cache").exists()
    code, _, err = finish(audit(tmp_path, fake_openrouter, *args, f"cache.dir={tmp_path / 'elsewhere'}"))
    assert code == 0, err
    assert len(fake_openrouter.requests) == 2 * sent  # a run pointed at another root starts from an empty cache
    assert (tmp_path / "elsewhere" / "responses.sqlite").is_file()


def test_a_spent_budget_stops_the_run_cleanly(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=5)
    fake_openrouter.handler = script.handler
    code, out, err = finish(audit(tmp_path, fake_openrouter, *BASE, "audited=deepseek_chat",
                                  "budget.max_cost_usd=0.0000001"))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["stop_reason"]) == ("cancelled", "budget") and "budget" in summary["error"]
    assert "stopped: budget spent" in out
    sent = len(fake_openrouter.requests)
    # a resume counts what the run already spent (its ledger): the same cap sends nothing more
    code, out, err = finish(audit(tmp_path, fake_openrouter, f"resume={run_dir}", "budget.max_cost_usd=0.0000001"))
    assert code == 0, err
    assert len(fake_openrouter.requests) == sent
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "budget"


def test_a_budget_running_out_mid_sweep_stops_runs_cleanly(tmp_path, fake_openrouter):
    """Two parallel audits that would go on for 20 iterations share $0.012 (an iteration costs
    ~$0.0006 more than the last): the sweep gets several iterations in, then both runs stop with
    everything they had on disk. (How the cap splits between the jobs depends on when each started.)
    The jobs run in processes of their own (the warm launcher's, forked: the budget is shared through
    budget.json under its lock as under joblib, whose loky workers each import litellm cold; joblib itself
    is the first test's)."""
    fake_openrouter.handler = Script().handler
    cap, jobs, concurrency = 0.012, 2, 2
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2,deepseek_chat",
                                  "hydra/launcher=warm", f"hydra.launcher.n_jobs={jobs}", "max_iterations=20",
                                  f"budget.max_cost_usd={cap}", f"gateway.max_concurrency={concurrency}",
                                  *[a for a in SWEEP if not a.startswith("max_iterations")]))
    assert code == 0, err
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    runs = sorted(p.parent for p in sweep_dir.glob("*/*/summary.json"))
    assert len(runs) == jobs and "0 completed, 0 failed, 2 stopped by budget" in out
    charged, iterations = [], 0
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        usage = json.loads((run / "usage.json").read_text())
        responses = sorted((run / "audited_responses").iterdir())
        assert (summary["status"], summary["stop_reason"]) == ("cancelled", "budget") and "budget" in summary["error"]
        # nothing lost: every response on disk with its text; the summary's totals are the ledger's
        assert all(json.loads(r.read_text())["raw_response"] for r in responses)
        assert summary["totals"]["cost"] == pytest.approx(usage["totals"]["cost"])
        assert summary["totals"]["calls"] == usage["totals"]["calls"]
        iterations += len(responses)
        charged += [c["cost"] for c in usage["calls"]]
    assert iterations >= 4  # it ran out mid-sweep, not at the first call
    budget = json.loads((sweep_dir / "budget.json").read_text())
    assert budget["spent_usd"] == pytest.approx(sum(charged))
    # past the cap only by calls already in flight: at most jobs x max_concurrency of them
    assert cap <= budget["spent_usd"] <= cap + jobs * concurrency * max(charged)
    assert "cancelled" in (sweep_dir / "comparison.html").read_text()


def test_the_slurm_launcher_config_composes_with_its_defaults_and_overrides(tmp_path):
    """A sweep moved to a cluster is one override; checked by composing, since no Slurm runs here."""
    code, out, err = finish(audit(tmp_path, None, "hydra/launcher=slurm", "hydra.launcher.partition=gpu",
                                  "--cfg", "hydra"))
    assert code == 0, err
    launcher = out.split("\n  launcher:\n", 1)[1].split("\n  sweeper:", 1)[0]
    assert "SlurmLauncher" in launcher and "partition: gpu" in launcher
    assert "timeout_min: 240" in launcher and "cpus_per_task: 2" in launcher


def test_a_sweep_budget_stops_every_job_cleanly_and_loses_no_charge(tmp_path, fake_openrouter):
    """Two jobs in processes of their own (the warm launcher's, as in the test above) share one spent budget."""
    fake_openrouter.handler = Script(stop_at_turn=5).handler
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2,deepseek_chat",
                                  "hydra/launcher=warm", "hydra.launcher.n_jobs=2",
                                  "budget.max_cost_usd=0.0000001", "gateway.max_concurrency=2", *SWEEP))
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    summaries = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/*/summary.json"))]
    assert [(s["status"], s["stop_reason"]) for s in summaries] == [("cancelled", "budget")] * 2, err
    assert code == 0, err  # stopped by the budget is not a failure
    assert "0 completed, 0 failed, 2 stopped by budget" in out
    budget = json.loads((sweep_dir / "budget.json").read_text())
    ledgers = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/*/usage.json"))]
    # every charge is in some run's ledger, and past the cap only calls already in flight were charged
    assert budget["spent_usd"] == pytest.approx(sum(u["totals"]["cost"] for u in ledgers))
    assert budget["charged_calls"] <= 2 * 2
    assert (sweep_dir / "comparison.html").is_file()


def test_a_baseline_and_an_assistant_run_are_distinct_draws_in_a_cached_sweep(tmp_path, fake_openrouter, cache_root):
    """The three techniques send the same probes; the assistant baseline of the user-persona run,
    that of the prefill run and the assistant run's own answers are six draws (2 probes x 3 runs),
    each sent once, not two cached replies counted three times. The same sweep again sends nothing."""
    script = Script(stop_at_turn=3)
    fake_openrouter.handler = script.handler
    args = ["-m", "technique=user_persona,prefill,assistant", *[a for a in SWEEP if "cache" not in a and
                                                                  "with_baseline" not in a]]  # baseline by default
    code, _, err = finish(audit(tmp_path, fake_openrouter, *args))
    assert code == 0, err
    chat_answers = [r for r in fake_openrouter.chat_requests() if chat_role(r.json) == BASELINE]
    assert len(chat_answers) == 6
    assert len({json.dumps(r.json["messages"]) for r in chat_answers}) == 2  # the same two probes each time
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    summaries = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/*/summary.json"))]
    assert sorted(s["technique"] for s in summaries) == ["assistant", "prefill", "user_persona"]
    sent = len(fake_openrouter.requests)
    code, _, err = finish(audit(tmp_path, fake_openrouter, *args))
    assert code == 0, err
    assert len(fake_openrouter.requests) == sent  # every draw came from the cache, each to its own run
