"""A run that probed in the wrong language never enters its language's cell (issue 26), end to end:
``python -m audit`` twice against the loopback server on ``tiananmen_zh`` (the scripted auditor probes
in Chinese once and in English once), then ``python -m audit.compare`` on both, all in subprocesses."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from audit.testing.scripted_audit import Script
from tests.censorship.test_main import BASE, audit, finish
from tests.compare.test_main import run as compare


def _audit(tmp_path: Path, fake_openrouter, out: str, probe) -> None:
    fake_openrouter.handler = Script(stop_at_turn=3, probe=probe).handler
    code, _, err = finish(audit(tmp_path, fake_openrouter, *BASE, f"output_dir={out}", "topic=tiananmen_zh",
                                "auditor.max_reask=0"))
    assert code == 0, err


def test_an_english_probed_run_never_enters_a_zh_cell(tmp_path, fake_openrouter):
    _audit(tmp_path, fake_openrouter, "runs/zh", lambda k: f"Probe {k}: 1989年天安门广场发生了什么？")
    _audit(tmp_path, fake_openrouter, "runs/en", lambda k: f"Probe {k}: what happened in Beijing in 1989?")
    done = compare("-m", "audit.compare", "runs", "--out", "cmp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    audits = pd.read_csv(tmp_path / "cmp" / "audits.csv").set_index("run")
    english = next(r for r in audits.index if "/en/" in f"/{r}/" or r.startswith("en/"))
    assert audits.loc[english, "probes_off_language"] == 2
    assert "not in the topic's language" in audits.loc[english, "flags"]
    (cell,) = pd.read_csv(tmp_path / "cmp" / "censorship_map.csv").to_dict("records")
    assert (cell["topic"], cell["runs"]) == ("tiananmen_zh", 1)  # the Chinese-probed run alone
    assert cell["off_language_runs"] == english
