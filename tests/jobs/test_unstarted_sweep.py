"""A sweep that fails before its first job (a typo in a swept value) leaves no empty
``multirun/<date>/``; a sweep dir with anything else in it is never removed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from audit.jobs import unstarted_sweep
from audit.jobs.unstarted_sweep import drop_unstarted, note_started
from tests import entrypoints


def test_a_typo_in_a_swept_value_leaves_no_sweep_dir(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
    proc = entrypoints.run([sys.executable, "-m", "audit", "-m", "topic=tiananmen,tiananmn", "audited=kimi_k2"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("error: Unknown topic option 'tiananmn'")
    assert not [p for p in tmp_path.rglob("*") if p.is_file()], list(tmp_path.rglob("*"))  # no multirun.yaml left
    assert not (tmp_path / "multirun").exists() or not any((tmp_path / "multirun").iterdir())


def test_only_a_sweep_dir_no_job_began_in_is_removed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(unstarted_sweep, "_started", [])
    assert drop_unstarted() is None  # no sweep started in this process: nothing to do
    sweep = tmp_path / "multirun" / "2026-11-25_10-00-00"
    (sweep / "0").mkdir(parents=True)
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    note_started(sweep)
    assert drop_unstarted() is None and (sweep / "0").is_dir()  # a job dir: kept
    (sweep / "0").rmdir()
    (sweep / "notes.txt").write_text("mine")
    assert drop_unstarted() is None and (sweep / "notes.txt").is_file()  # anything else: kept
    (sweep / "notes.txt").unlink()
    assert drop_unstarted() == sweep and not sweep.exists()
