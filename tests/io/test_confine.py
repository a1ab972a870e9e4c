"""The writers of audit.io never follow a link out of a run dir this process writes (audit.io.confine)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from audit.errors import UserError
from audit.io import confine
from audit.io.atomic import overwrite_in_place, write_json, write_texts
from audit.io.journal import Journal
from audit.io.lock import hold_lock
from audit.record.rundir import RunDir

OUTSIDE = "precious\n"


def _journal(path: Path) -> None:
    journal = Journal(path)
    try:
        journal.append({"a": 1})
    finally:
        journal.close()


WRITERS: dict[str, Callable[[Path], object]] = {
    "journal": _journal,
    "write_json": lambda path: write_json(path, {"a": 1}),
    "write_texts": lambda path: write_texts({path: "new"}),
    "overwrite_in_place": lambda path: overwrite_in_place(path, "x"),
}


@pytest.fixture
def run_dir(tmp_path: Path):
    root = tmp_path / "run"
    root.mkdir()
    confine.hold(root)
    yield root
    confine.let_go(root)


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_file_linked_out_of_the_run_dir_is_refused_and_the_target_untouched(tmp_path, run_dir, writer):
    outside = tmp_path / "bashrc"
    outside.write_text(OUTSIDE)
    (run_dir / "draws.jsonl").symlink_to(outside)
    with pytest.raises(confine.LinkOut) as raised:
        WRITERS[writer](run_dir / "draws.jsonl")
    assert outside.read_text() == OUTSIDE
    line = str(raised.value)
    assert "\n" not in line and str(run_dir / "draws.jsonl") in line and "replace the link" in line
    assert sorted(p.name for p in run_dir.iterdir()) == ["draws.jsonl"]  # no temporary file left


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_folder_linked_out_of_the_run_dir_is_refused(tmp_path, run_dir, writer):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "001.json").write_text(OUTSIDE)
    (run_dir / "auditor_turns").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(confine.LinkOut):
        WRITERS[writer](run_dir / "auditor_turns" / "001.json")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["001.json"] and (elsewhere / "001.json").read_text() == OUTSIDE


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_links_that_stay_inside_and_a_run_dir_reached_through_a_link_are_written(tmp_path, writer):
    real = tmp_path / "scratch" / "run"
    (real / "kept").mkdir(parents=True)
    (real / "kept" / "file").write_text("old")
    (tmp_path / "runs").symlink_to(tmp_path / "scratch", target_is_directory=True)
    root = tmp_path / "runs" / "run"
    (root / "alias").symlink_to(real / "kept", target_is_directory=True)
    with confine.confined(root):
        WRITERS[writer](root / "alias" / "file")
    assert (real / "kept" / "file").read_text() != "old"


def test_outside_a_held_run_dir_nothing_is_checked(tmp_path):
    target = tmp_path / "elsewhere.json"
    (tmp_path / "link.json").symlink_to(target)
    write_json(tmp_path / "link.json", {"a": 1})  # an atomic write replaces the link itself
    assert not target.exists() and (tmp_path / "link.json").is_file()


def test_a_linked_lock_file_is_refused_without_truncating_its_target(tmp_path):
    outside = tmp_path / "bashrc"
    outside.write_text(OUTSIDE)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".lock").symlink_to(outside)
    with pytest.raises(UserError, match="is a link"):
        hold_lock(tmp_path / "run", "python -m audit resume=run")
    assert outside.read_text() == OUTSIDE


@pytest.mark.parametrize("inside", ["draws.jsonl", "auditor_turns/001.json", "auditor_turns", "dangling"])
def test_a_resume_refuses_a_run_dir_with_any_link_out_before_it_locks(tmp_path, inside):
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "config.yaml").write_text("a: 1\n")
    (run / "questions.jsonl").write_text("")
    outside = tmp_path / "outside"
    outside.mkdir()
    link = run / inside
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside / "gone" if inside == "dangling" else outside)
    (run / "sub" / "inner").symlink_to(run / "config.yaml")  # a link that stays inside is fine
    with pytest.raises(confine.LinkOut) as raised:
        RunDir(run, "benchmark").open_existing(("questions.jsonl",))
    assert str(link) in str(raised.value)
    assert not (run / ".lock").exists()  # refused before anything was written


def test_a_run_dir_is_confined_while_it_is_held_and_not_after(tmp_path):
    outside = tmp_path / "outside.jsonl"
    run = RunDir(tmp_path / "run", "benchmark")
    run.create(lambda building: (building / "config.yaml").write_text("a: 1\n"))
    (run.path / "draws.jsonl").symlink_to(outside)
    with pytest.raises(confine.LinkOut):
        _journal(run.path / "draws.jsonl")
    run.release()
    assert os.path.realpath(run.path) not in confine._HELD and str(run.path) not in confine._HELD
