"""The one walk over directories others write (audit.io.walk): hidden folders skipped, nothing raised."""

from __future__ import annotations

from audit.io import walk


def test_hidden_folders_are_skipped_unless_asked_and_hidden_files_are_listed(tmp_path):
    (tmp_path / "run" / "turns").mkdir(parents=True)
    (tmp_path / ".run.abc.tmp").mkdir()
    (tmp_path / ".run.abc.tmp" / "summary.json").write_text("{}")
    (tmp_path / "run" / "summary.json").write_text("{}")
    (tmp_path / "run" / ".lock").write_text("")
    assert [p.relative_to(tmp_path).as_posix() for p in walk.files(tmp_path)] == ["run/.lock", "run/summary.json"]
    assert ".run.abc.tmp/summary.json" in [p.relative_to(tmp_path).as_posix() for p in walk.files(tmp_path, hidden=True)]
    assert [(f.relative_to(tmp_path).as_posix(), sorted(n)) for f, n in walk.folders(tmp_path)] == [
        (".", []), ("run", [".lock", "summary.json"]), ("run/turns", [])]


def test_a_root_that_vanished_yields_nothing(tmp_path):
    assert list(walk.folders(tmp_path / "gone")) == [] and list(walk.files(tmp_path / "gone")) == []
