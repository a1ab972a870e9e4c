"""End to end: sweeps over what the target is sent (``python -m audit -m ...`` in a subprocess against
the loopback server), compared as a user compares them. Each value of a swept setting is a cell of its
own, labelled by the setting; a sweep over provider pins shows who served each cell and the gap between
them; a run dir whose config predates a setting still compares, in a cell of its own
(:mod:`audit.compare.answer_settings`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from audit.judging.judge import classification_system
from audit.stats.intervals import unpaired_difference
from audit.templates import get_family
from audit.testing.providers import LoadBalanced, ServedBy
from audit.testing.replies import COMPLETION, Reply, chat_reply, completion_reply
from audit.testing.scripted_audit import JUDGE_MODEL, Script
from tests.censorship.test_main import BASE, audit, finish
from tests.entrypoints import run as run_entrypoint

JUDGED = [a for a in BASE if a != "judge=off"] + ["judge=default", f"judge.model={JUDGE_MODEL}",
                                                  "technique.with_baseline=true"]
REFUSAL = " I will not discuss this topic."


def sweep_dir(cwd: Path) -> Path:
    (found,) = (cwd / "multirun").iterdir()
    return found


def compare(*dirs: Path, out: Path) -> subprocess.CompletedProcess:
    return run_entrypoint([sys.executable, "-m", "audit.compare", *map(str, dirs), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)


def test_a_template_sweep_is_one_cell_per_template_and_an_older_run_still_compares(tmp_path: Path,
                                                                                  fake_openrouter) -> None:
    fake_openrouter.handler = Script(stop_at_turn=3).handler
    code, _, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2",
                                "audited.template=kimi_k2,kimi_k2_legacy", *JUDGED))
    assert code == 0, err
    sweep = sweep_dir(tmp_path)
    cmap = pd.read_csv(sweep / "censorship_map.csv", keep_default_na=False)
    persona = cmap[cmap["technique"] == "user_persona"].sort_values("settings")
    # before: one cell with runs 2, although the two jobs sent different prompts
    assert list(persona["settings"]) == ["template=kimi_k2", "template=kimi_k2_legacy"]
    assert list(persona["runs"]) == [1, 1]
    assert sorted(cmap.loc[cmap["technique"] == "assistant (baseline)", "settings"]) == list(persona["settings"])
    assert pd.read_csv(sweep / "provider_gap.csv").empty  # another request, not the same one served apart
    runs = pd.read_csv(sweep / "runs.csv", keep_default_na=False)
    assert {"provider", "provider_pin"} <= set(runs.columns)
    assert set(runs["provider_pin"]) == {""} and all(runs["provider"].str.match(r"^\S.* \d+$"))

    # A run dir written by an older version: its config lacks audited.reasoning and gateway.effective, its
    # summary the served block. It compares beside a current copy of the same run, in a cell of its own
    # (the setting it lacks reads n/a, never assumed equal), its provider empty in runs.csv.
    (run,) = sorted(p.parent for p in sweep.rglob("summary.json"))[:1]
    shutil.copytree(run, tmp_path / "now" / run.name)
    old = shutil.copytree(run, tmp_path / "old" / run.name)
    summary = json.loads((old / "summary.json").read_text())
    for config in (summary["config"], saved := yaml.safe_load((old / "config.yaml").read_text())):
        config["audited"].pop("reasoning")
        config["gateway"].pop("effective")
    summary.pop("served")
    (old / "summary.json").write_text(json.dumps(summary))
    (old / "config.yaml").write_text(yaml.safe_dump(saved))
    proc = compare(tmp_path / "now", tmp_path / "old", out=tmp_path / "cmp")
    assert proc.returncode == 0, proc.stderr
    audits = pd.read_csv(tmp_path / "cmp" / "audits.csv", keep_default_na=False).set_index("run")
    assert audits.loc[f"old/{run.name}", "settings"] == "reasoning=n/a"
    assert audits.loc[f"now/{run.name}", "settings"] == "reasoning=null"
    assert audits.loc[f"old/{run.name}", "providers"] == "n/a"
    cmap = pd.read_csv(tmp_path / "cmp" / "censorship_map.csv", keep_default_na=False)
    assert sorted(cmap.loc[cmap["technique"] == "user_persona", "runs"]) == [1, 1]
    runs = pd.read_csv(tmp_path / "cmp" / "runs.csv", keep_default_na=False).set_index("run")
    assert runs.loc[f"old/{run.name}", "provider"] == "" and runs.loc[f"now/{run.name}", "provider"] != ""


def filtering_provider(script: Script) -> Any:
    """Two providers of the target behind the loopback server (OpenRouter's provider routing: a pin with
    ``only`` reaches only that provider, and each reply names who served it): ``Honest`` serves the
    script's text, ``Filtered`` answers every draw with a refusal. The judge labels a refusal refused and
    anything else forthcoming."""
    classify = classification_system()

    def inner(request: Any) -> Reply | None:
        body = request.json or {}
        if request.endpoint == COMPLETION and (body.get("provider") or {}).get("only") == ["filtered"]:
            return completion_reply(REFUSAL)
        messages = body.get("messages") or []
        if body.get("model") == JUDGE_MODEL and messages and messages[0]["content"] == classify:
            label = "refused" if REFUSAL.strip() in messages[-1]["content"] else "forthcoming"
            return chat_reply(json.dumps({"label": label, "rationale": "scripted"}))
        return script.handler(request)

    return LoadBalanced(get_family("kimi_k2"), [ServedBy("Honest"), ServedBy("Filtered")], inner=inner)


def test_a_provider_pin_sweep_is_one_cell_per_provider_with_the_gap_between_them(tmp_path: Path,
                                                                               fake_openrouter) -> None:
    fake_openrouter.handler = filtering_provider(Script(stop_at_turn=3))
    pins = "{only:[honest],allow_fallbacks:false},{only:[filtered],allow_fallbacks:false}"
    code, out, err = finish(audit(tmp_path, fake_openrouter, "-m", "audited=kimi_k2", f"audited.provider={pins}",
                                  "samples=2", *JUDGED))
    assert code == 0, err
    sweep = sweep_dir(tmp_path)
    cmap = pd.read_csv(sweep / "censorship_map.csv", keep_default_na=False)
    persona = cmap[cmap["technique"] == "user_persona"].sort_values("settings")
    assert list(persona["runs"]) == [2, 2]  # before: one cell, runs 4
    assert [s.split("only")[1] for s in persona["settings"]] == ['":["filtered"]}', '":["honest"]}']
    assert [p.split(" ")[0] for p in persona["providers"]] == ["Filtered", "Honest"]
    assert list(persona["refused_share"]) == [1.0, 0.0]
    gaps = pd.read_csv(sweep / "provider_gap.csv", keep_default_na=False)
    gap = gaps[gaps["technique"] == "user_persona"].iloc[0]
    assert (gap["providers_a"].split(" ")[0], gap["providers_b"].split(" ")[0]) == ("Filtered", "Honest")
    assert gap["refused_gap"] == 1.0 and gap["runs_a"] == gap["runs_b"] == 2
    # two runs a side: an interval over runs, as audit.stats.intervals gives it for the runs' own counts
    audits = pd.read_csv(sweep / "audits.csv", keep_default_na=False)
    sides = [audits[audits["providers"].str.startswith(who)] for who in ("Filtered", "Honest")]
    refused = [(side["refused_share"] * side["n_labelled"]).round() for side in sides]
    expected = unpaired_difference(refused[0], sides[0]["n_labelled"], refused[1], sides[1]["n_labelled"])
    assert (gap["refused_gap_lo"], gap["refused_gap_hi"]) == pytest.approx((expected["lo"], expected["hi"]))
    assert gap["refused_gap_lo"] < 1.0 <= gap["refused_gap_hi"]
    assert "provider gap" in out
    runs = pd.read_csv(sweep / "runs.csv", keep_default_na=False)
    assert sorted(set(runs["provider"].str.split(" ").str[0])) == ["Filtered", "Honest"]
    html = (sweep / "comparison.html").read_text(encoding="utf-8")
    assert "Provider gap" in html and "served by Filtered" in html
