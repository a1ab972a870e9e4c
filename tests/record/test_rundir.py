"""The run dir (audit.record.rundir): naming, clock, atomic creation, lock; and the censorship
layout on top of it (audit.censorship.run_dir): its files and the resume scan."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest
from omegaconf import OmegaConf

from audit.censorship.run_dir import AuditDir, open_existing
from audit.errors import UserError
from audit.record.rundir import RunDir, fresh_run_path, iso, run_dir_name

MOMENT = datetime(2024, 1, 15, 10, 30, 0, tzinfo=timezone.utc)


def test_name_and_timestamps_follow_the_spec():
    parts = {"audited.name": "kimi_k2", "topic.name": "tiananmen"}
    assert run_dir_name(parts, MOMENT) == "kimi_k2_tiananmen_2024-01-15T10-30-00"
    assert iso(MOMENT) == "2024-01-15T10:30:00Z"
    # one clock: a moment in another zone names the same UTC second
    tokyo = MOMENT.astimezone(timezone(timedelta(hours=9)))
    assert run_dir_name({"domain.name": "rivers", "predicate.name": "has_mouth"}, tokyo) == \
        "rivers_has_mouth_2024-01-15T10-30-00"
    with pytest.raises(UserError, match="topic.name='../x' cannot name a directory"):
        run_dir_name({"audited.name": "a", "topic.name": "../x"}, MOMENT)


def test_same_second_runs_get_distinct_dirs(tmp_path):
    first = fresh_run_path(tmp_path, {"a": "a", "b": "b"}, MOMENT)
    first.mkdir()
    second = fresh_run_path(tmp_path, {"a": "a", "b": "b"}, MOMENT)
    assert second != first and second.name == first.name + "-2" and not second.exists()


def test_create_never_shares_a_dir_with_another_run(tmp_path):
    AuditDir(tmp_path / "run").create_with(OmegaConf.create({"n": 1}))
    with pytest.raises(UserError, match="another run"):
        AuditDir(tmp_path / "run").create_with(OmegaConf.create({"n": 2}))
    assert OmegaConf.load(tmp_path / "run" / "config.yaml").n == 1


def test_the_lock_names_the_command_that_resumes_the_run(tmp_path):
    epistemic = RunDir(tmp_path / "e", "epistemic")
    epistemic.create(lambda building: (building / "config.yaml").write_text("{}"))
    assert epistemic.resume_command == f"python -m audit.epistemic resume={tmp_path / 'e'}"
    with pytest.raises(UserError, match=r"in use by pid .* before running python -m audit.epistemic resume="):
        RunDir(tmp_path / "e", "epistemic").lock()
    epistemic.release()
    RunDir(tmp_path / "e", "epistemic").lock()  # released: free again (this one is closed by the GC)


def test_scan_reads_consecutive_files_and_ignores_temp_and_gaps(tmp_path):
    rd = AuditDir(tmp_path / "run")
    rd.create_with(OmegaConf.create({"topic": {"name": "t"}}))
    for k in (1, 2, 4):
        rd.write_turn(k, {"iteration": k})
    rd.write_response(1, {"iteration": 1})
    (rd.path / "auditor_turns" / ".003.json.abc.tmp").write_text("{half")
    saved = rd.scan()
    assert sorted(saved.turns) == [1, 2] and sorted(saved.responses) == [1]
    assert saved.turns[2] == {"iteration": 2}


def test_writes_are_atomic_utf8_json(tmp_path):
    rd = AuditDir(tmp_path / "run")
    rd.write_response(7, {"raw_response": "天安门 \"x\"\n<script>"})
    path = rd.response_path(7)
    assert path.name == "007.json"
    assert json.loads(path.read_text(encoding="utf-8"))["raw_response"] == "天安门 \"x\"\n<script>"
    assert "天安门" in path.read_text(encoding="utf-8")
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_open_existing_rejects_what_is_not_a_run_dir(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        open_existing(tmp_path / "missing")
    with pytest.raises(UserError, match=r"not a run directory \(no config.yaml and auditor_turns\); "
                                        r"pass a run directory written by `python -m audit`"):
        open_existing(tmp_path)
    rd = AuditDir(tmp_path / "run")
    rd.create_with(OmegaConf.create({"topic": {"name": "t"}}))
    killed_write = rd.path / "auditor_turns" / ".004.json.x1y2z3.tmp"  # SIGKILL between write and rename
    killed_write.write_text('{"iteration": 4, "raw_')
    rd._lock.close()  # the creating process ended; while it runs, open_existing is refused (test_main)
    run_dir, cfg = open_existing(rd.path)
    assert run_dir.path == rd.path and cfg.topic.name == "t"
    assert not killed_write.exists()
    rd.config_path.write_text("- a\n- b\n")
    with pytest.raises(UserError, match="not a mapping"):
        open_existing(rd.path)


def test_a_run_dir_appears_whole_with_its_config_and_lock(tmp_path):
    rd = AuditDir(tmp_path / "out" / "run")
    rd.create_with(OmegaConf.create({"topic": {"name": "t"}}))
    assert sorted(p.name for p in rd.path.iterdir()) == [".lock", "audited_responses", "auditor_turns", "config.yaml"]
    assert [p.name for p in rd.path.parent.iterdir()] == ["run"]  # no hidden build dir left behind
    assert f"pid {os.getpid()} " in (rd.path / ".lock").read_text()  # the lock taken while building is held
    with pytest.raises(UserError, match="in use by pid"):
        open_existing(rd.path)
    rd._lock.close()
    with pytest.raises(UserError, match="just created by another run"):
        AuditDir(rd.path).create_with(OmegaConf.create({"topic": {"name": "t"}}))
    assert [p.name for p in rd.path.parent.iterdir()] == ["run"]


def test_a_dir_an_older_version_left_without_its_config_says_so(tmp_path):
    killed = tmp_path / "run"
    (killed / "auditor_turns").mkdir(parents=True)
    (killed / ".lock").write_text("pid 1 on host since 2026-11-22T10:00:00Z\n")
    (killed / ".config.yaml.x1y2.tmp").write_text("topic: {na")
    with pytest.raises(UserError, match="stopped before its config.yaml was saved, so nothing ran in it; delete it"):
        open_existing(killed)
