"""Finishing what was started: ``resume=<sweep dir>`` runs only the jobs (and the steps) that
did not finish, in the same sweep dir, and rewrites the comparison."""

from __future__ import annotations

import hashlib
import json
import signal
import sys
from pathlib import Path

from audit.record import iter_runs
from audit.testing.scripted_audit import Script
from tests.censorship.test_main import BASE, audit, finish, wait_while_running
from tests import entrypoints

SWEEP = ["-m", *(a for a in BASE if not a.startswith("output_dir")), "audited=deepseek_chat,kimi_k2,qwen3_235b"]
MODELS = ["deepseek/deepseek-chat", "moonshotai/kimi-k2", "qwen/qwen3-235b-a22b-2507"]
STEPS = 5
"""Files (= requests, judge off) of one job with the script stopping at turn 3: 3 turns, 2 responses."""


def digest(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != "job.log"}


def steps_on_disk(job: Path) -> int:
    return len(list(job.glob("*/auditor_turns/*.json"))) + len(list(job.glob("*/audited_responses/*.json")))


def test_an_interrupted_sweep_is_finished_by_resume_of_its_dir(tmp_path, fake_openrouter):
    fake_openrouter.handler = Script(stop_at_turn=3, target_delay_s=0.3).handler
    # one job after another (named, though it is the default), so a Ctrl-C in job 1 leaves job 2 unstarted
    proc = audit(tmp_path, fake_openrouter, *SWEEP, "hydra/launcher=basic")
    sweeps = tmp_path / "multirun"

    def job1_started() -> bool:
        done = [r for r in iter_runs([sweeps]) if r.finished]
        return len(done) == 1 and bool(list(sweeps.glob("*/1/*/audited_responses/001.json")))

    wait_while_running(proc, job1_started)
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 1 and "interrupted" in err, err
    (sweep_dir,) = sweeps.iterdir()
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == ["0", "1"]  # job 2 never started
    # the one line names the sweep's own resume (not job 1's run dir) and where the sweep stands
    assert err.count("\n") == 1 and err.rstrip().endswith(f"finish the sweep with: python -m audit resume={sweep_dir.relative_to(tmp_path)}")
    assert "interrupted in sweep job 1 (runs so far: 1 cancelled, 1 success; later jobs not started)" in err, err
    job0 = digest(sweep_dir / "0")
    on_disk = steps_on_disk(sweep_dir / "1")
    assert 0 < on_disk < STEPS
    sent = len(fake_openrouter.requests)
    # A sweep dir saved before the sweep-end callback moved (audit.jobs -> audit.app) names the old class
    # in multirun.yaml (no job dir keeps a .hydra/); a finish replays only the saved overrides, so such a
    # sweep still resumes.
    saved = sweep_dir / "multirun.yaml"
    assert "_target_: audit.app.sweep_end.SweepEnd" in saved.read_text()
    saved.write_text(saved.read_text().replace("audit.app.sweep_end.SweepEnd", "audit.jobs.sweep_end.SweepEnd"))

    code, out, err = finish(audit(tmp_path, fake_openrouter, f"resume={sweep_dir}", "gateway.timeout_s=30"))
    assert code == 0, err
    new = fake_openrouter.requests[sent:]
    # only the missing jobs' requests: what job 1 had not saved, and all of job 2; nothing of job 0
    assert len(new) == (STEPS - on_disk) + STEPS
    targets = [r.json["model"] for r in new if r.endpoint == "completion"]
    assert MODELS[0] not in targets and targets.count(MODELS[2]) == 2 and targets.count(MODELS[1]) >= 1
    assert digest(sweep_dir / "0") == job0  # the finished job is untouched
    assert "left as it is" in out and "sweep: 3 job(s): 3 completed, 0 failed" in out
    runs = [r for r in iter_runs([sweep_dir])]
    assert [r.state for r in runs] == ["success"] * 3 and len(list((sweep_dir / "1").iterdir())) == 2  # run + job.log
    assert all(r.summary.total_iterations == 2 for r in runs)
    resumed = next(r for r in runs if r.path.parent.name == "1")
    assert len(resumed.summary.resumes) == 1  # continued in its own run dir
    html = (sweep_dir / "comparison.html").read_text()
    assert html.count("success") >= 3 and "cancelled" not in html

    # finishing a finished sweep sends nothing and leaves every run as it is
    before, sent = digest(sweep_dir), len(fake_openrouter.requests)
    code, out, err = finish(audit(tmp_path, fake_openrouter, f"resume={sweep_dir}"))
    assert code == 0, err
    assert len(fake_openrouter.requests) == sent
    assert {k: v for k, v in digest(sweep_dir).items() if "/" in k} == {k: v for k, v in before.items() if "/" in k}


def test_a_failed_job_is_run_again_and_other_overrides_are_refused(tmp_path, fake_openrouter):
    script = Script(stop_at_turn=2)
    fake_openrouter.handler = script.handler
    code, _, err = finish(audit(tmp_path, fake_openrouter, *SWEEP[:-1], "audited=deepseek_chat,kimi_k2", key=False))
    assert code == 1
    (sweep_dir,) = (tmp_path / "multirun").iterdir()
    stubs = [json.loads((sweep_dir / job / "summary.json").read_text()) for job in ("0", "1")]
    assert [(s["experiment"], s["status"]) for s in stubs] == [("censorship", "error")] * 2
    code, _, err = finish(audit(tmp_path, fake_openrouter, f"resume={sweep_dir}", "topic=tibet"))
    assert code == 1 and err.count("\n") == 1 and "topic cannot change" in err
    code, _, err = finish(audit(tmp_path, fake_openrouter, f"resume={sweep_dir}"))
    assert code == 0, err
    assert [r.state for r in iter_runs([sweep_dir])] == ["success", "success"]  # the stubs are gone
    code, _, err = finish(audit(tmp_path, fake_openrouter, "-m", f"resume={sweep_dir}", "audited=kimi_k2"))
    assert code == 1 and "audited cannot change" in err
    code, out, err = finish(audit(tmp_path, None, f"resume={sweep_dir}", key=False))  # no call, so no key
    assert code == 0 and out.count("left as it is") == 2, err
    wrong = entrypoints.run([sys.executable, "-m", "audit.epistemic", f"resume={sweep_dir}"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 1
    assert f"is a sweep of python -m audit; run python -m audit resume={sweep_dir}" in wrong.stderr
