import errno

import pytest

from audit.io.atomic import atomic_open, new_directory, read_json, remove_partial_writes, write_json, write_text


def test_write_replaces_whole_file_and_keeps_text_exact(tmp_path):
    path = tmp_path / "a" / "f.txt"
    write_text(path, "old")
    write_text(path, "新 \"quoted\"\r\nline")
    assert path.read_bytes() == "新 \"quoted\"\r\nline".encode()
    assert [p.name for p in path.parent.iterdir()] == ["f.txt"]


def test_failure_leaves_previous_content_and_no_temp_file(tmp_path):
    path = tmp_path / "f.json"
    write_json(path, {"kept": True})
    with pytest.raises(RuntimeError), atomic_open(path) as handle:
        handle.write('{"half": ')
        raise RuntimeError("killed mid-write")
    assert read_json(path) == {"kept": True}
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_binary_mode(tmp_path):
    with atomic_open(tmp_path / "b.bin", "wb") as handle:
        handle.write(b"\x00\xff")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\xff"


def test_remove_partial_writes_clears_only_leftover_temp_files(tmp_path):
    write_json(tmp_path / "runs" / "001.json", {"ok": 1})
    leftover = tmp_path / "runs" / ".002.json.ab12cd.tmp"  # what a SIGKILL mid-write leaves
    leftover.write_text('{"half": ')
    (tmp_path / "notes.tmp").write_text("a user's file, not ours")
    removed = remove_partial_writes(tmp_path)
    assert removed == [leftover] and not leftover.exists()
    assert (tmp_path / "notes.tmp").exists() and read_json(tmp_path / "runs" / "001.json") == {"ok": 1}


def test_written_files_get_the_mode_the_umask_gives_a_new_file(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    written = write_text(tmp_path / "atomic.txt", "x")
    assert (written.stat().st_mode & 0o777) == (plain.stat().st_mode & 0o777)


def test_an_os_error_from_a_write_names_the_file(tmp_path):
    """A full disk fails in write(), which knows no file name: the writer adds the target's."""
    target = tmp_path / "summary.json"
    with pytest.raises(OSError) as caught:
        with atomic_open(target) as handle:
            handle.write("{}")
            raise OSError(errno.EFBIG, "File too large")
    assert caught.value.filename == str(target) and not target.exists()
    assert not list(tmp_path.iterdir())  # no temporary file left behind


def test_a_write_that_fails_while_a_directory_is_built_names_the_file_where_it_would_be(tmp_path):
    """A disk that fills before a run dir exists: the one line names ``<run dir>/cards.jsonl``, not
    the hidden temporary directory that is gone by the time the user reads it."""
    target = tmp_path / "run"
    with pytest.raises(OSError) as failed:
        with new_directory(target) as building:
            raise OSError(errno.ENOSPC, "No space left on device", str(building / "cards.jsonl"))
    assert failed.value.filename == str(target / "cards.jsonl") and not list(tmp_path.iterdir())
