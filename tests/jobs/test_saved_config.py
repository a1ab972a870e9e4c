"""A saved run or sweep is data: resuming one runs no code from it and sends the key nowhere new.

The end-to-end cases write the hostile ``multirun.yaml`` / ``config.yaml`` a colleague's (or a
downloaded) dir could hold, run the real entrypoint on it, and check the one-line refusal, that
the code did not run and that the other server received nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from audit.errors import UserError
from audit.jobs.saved_config import check_replayed, check_saved_config
from audit.testing.replies import TEST_API_KEY
from audit.testing.server import FakeOpenRouter
from tests.censorship.test_main import BASE, audit, finish
from tests import entrypoints

SWEEP_TASK = [o for o in BASE if not o.startswith("output_dir")] + ["audited=deepseek_chat"]

HOSTILE = [
    ("hydra.callbacks.x._target_=os.makedirs", "hydra.callbacks.x._target_"),
    ("+hydra.callbacks.x.name=/tmp/x", "hydra.callbacks.x.name"),
    ("hydra.launcher._target_=os.system", "hydra.launcher._target_"),
    ("+judge._target_=os.system", "judge._target_"),
    ("hydra.searchpath=[file:///tmp/evil]", "hydra.searchpath"),
    ("hydra.job_logging.handlers.x.()=os.system", "hydra.job_logging"),
    ("topic.display_name=${oc.env:OPENROUTER_API_KEY}", "oc.env"),
    ("topic.description=${oc.decode:'x'}", "oc.decode"),
    ("gateway.api_base=http://127.0.0.1:1/v1", "gateway.api_base"),
    ("+gateway.endpoints.x.api_base=http://127.0.0.1:1/v1", "gateway.endpoints.x.api_base"),
    ("+gateway.endpoints.x.key_env=AWS_SECRET_ACCESS_KEY", "gateway.endpoints.x.key_env"),
]


@pytest.mark.parametrize("override, named", HOSTILE)
def test_a_saved_override_that_runs_code_or_moves_the_key_is_refused_by_name(override, named):
    with pytest.raises(UserError, match=named.replace(".", r"\.").replace("$", r"\$")) as caught:
        check_replayed(["audited=kimi_k2", override], set(), Path("s/multirun.yaml"))
    assert "\n" not in str(caught.value) and "s/multirun.yaml" in str(caught.value)


@pytest.mark.parametrize("override", ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "audited=kimi_k2,qwen3_235b",
                                      "topic.key_facts=[a,b]", "hydra.job.chdir=false"])
def test_the_projects_own_overrides_are_replayed(override):
    check_replayed([override], set(), Path("multirun.yaml"))


def test_a_saved_base_url_passes_when_the_command_or_the_environment_names_it(monkeypatch):
    saved = ["gateway.api_base=http://127.0.0.1:9/v1"]
    check_replayed(saved, {"gateway.api_base"}, Path("multirun.yaml"))
    monkeypatch.setenv("OPENROUTER_API_BASE", "http://127.0.0.1:9/v1/")
    check_replayed(saved, set(), Path("multirun.yaml"))


@pytest.mark.parametrize("saved, named", [({"topic": {"_target_": "os.system"}}, "topic._target_"),
                                          ({"hydra": {"callbacks": {}}}, "'hydra'"),
                                          ({"surprise": 1}, "'surprise'")])
def test_a_saved_run_config_holds_only_the_projects_keys(saved, named):
    current = OmegaConf.create({"topic": {"name": "t"}, "gateway": {}, "resume": "r"})
    with pytest.raises(UserError, match=named):
        check_saved_config(OmegaConf.create(saved), current, Path("run/config.yaml"))


def _with_key_only(cwd: Path, *args: str) -> entrypoints.Process:
    """The entrypoint with the user's key in the environment and no base URL: the config decides where calls go."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    return entrypoints.start([sys.executable, "-m", "audit", *args], cwd=cwd, text=True,
                             env={**env, "OPENROUTER_API_KEY": TEST_API_KEY},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _hostile_sweep(sweep: Path, *extra: str) -> Path:
    """A sweep dir as Hydra leaves it (its command in multirun.yaml), with ``extra`` overrides slipped in."""
    sweep.mkdir(parents=True)
    record = {"hydra": {"overrides": {"hydra": ["hydra.mode=MULTIRUN"], "task": [*SWEEP_TASK, *extra]},
                        "job": {"config_name": "config"}}}
    (sweep / "multirun.yaml").write_text(yaml.safe_dump(record), encoding="utf-8")
    return sweep


def test_resuming_a_sweep_whose_record_adds_a_callback_runs_nothing(tmp_path, fake_openrouter):
    """Before: ``os.makedirs`` ran (1/1). Now: one line naming the key, and no directory made."""
    made = tmp_path / "pwned"
    sweep = _hostile_sweep(tmp_path / "multirun" / "s", "+hydra.callbacks.x._target_=os.makedirs",
                           f"+hydra.callbacks.x.name={made}")
    code, out, err = finish(audit(tmp_path, fake_openrouter, f"resume={sweep}"))
    assert code == 1 and "hydra.callbacks.x" in err and len(err.strip().splitlines()) == 1, err
    assert not made.exists() and not fake_openrouter.requests


def test_resuming_a_sweep_whose_record_moves_the_base_url_sends_the_key_nowhere(tmp_path):
    """Before: the edited ``gateway.api_base`` received the key in 5/5 requests. Now: refused, 0 requests."""
    with FakeOpenRouter() as elsewhere:
        sweep = _hostile_sweep(tmp_path / "multirun" / "s", f"gateway.api_base={elsewhere.base_url}")
        code, out, err = finish(_with_key_only(tmp_path, f"resume={sweep}"))
        assert code == 1 and f"gateway.api_base={elsewhere.base_url}" in err, err
        assert len(err.strip().splitlines()) == 1 and not elsewhere.requests


@pytest.mark.parametrize("content, named", [("topic: {name: t, display_name: '${oc.env:OPENROUTER_API_KEY}'}\n",
                                             "oc.env"),
                                            ("a: &a [x,x,x,x,x,x,x,x]\nb: [" + ",".join(["*a"] * 101) + "]\n",
                                             "aliases"),
                                            ("topic: {_target_: os.system}\n", "_target_")])
def test_resuming_a_run_whose_config_reads_the_environment_or_runs_code_is_one_line(tmp_path, content, named):
    """Before: ``${oc.env:OPENROUTER_API_KEY}`` in a resumed config.yaml put the key in 2 files."""
    run = tmp_path / "out" / "r"
    (run / "auditor_turns").mkdir(parents=True)
    (run / "config.yaml").write_text(content, encoding="utf-8")
    code, out, err = finish(_with_key_only(tmp_path, f"resume={run}"))
    assert code == 1 and named in err and len(err.strip().splitlines()) == 1, err
    assert (run / "config.yaml").read_text(encoding="utf-8") == content and not (run / "summary.json").exists()
