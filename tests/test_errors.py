"""The one line for a file-system error: the path, the cause in plain words, the fix."""

from __future__ import annotations

import errno

import pytest

from audit.errors import UserError, os_error_line, print_error_line, user_error_line


@pytest.mark.parametrize("code, cause", [
    (errno.ENOSPC, "disk full or file too large"), (errno.EFBIG, "disk full or file too large"),
    (errno.EACCES, "not writable"), (errno.EROFS, "not writable"), (errno.EEXIST, "a file is in the way"),
])
def test_os_errors_name_the_path_and_the_cause(code, cause):
    line = os_error_line(OSError(code, "strerror text", "/runs/out/summary.json"))
    assert line is not None and "\n" not in line
    assert line.startswith(f"cannot write /runs/out/summary.json: {cause} (strerror text); ")


def test_a_file_in_the_way_is_named_itself(tmp_path):
    (tmp_path / "taken").write_text("x")
    line = os_error_line(NotADirectoryError(errno.ENOTDIR, "Not a directory", str(tmp_path / "taken" / "out" / "run")))
    assert line is not None and line.startswith(f"cannot write {tmp_path / 'taken'}: a file is in the way")


def test_errors_that_are_not_the_users_stay_unhandled():
    assert os_error_line(OSError("no errno")) is None
    assert user_error_line(ValueError("a bug")) is None
    assert user_error_line(UserError("fix it")) == "fix it"


def test_an_error_line_is_one_line_no_terminal_can_act_on(capsys):
    """A single run's and a sweep job's line alike (a server's message may hold line breaks and escapes)."""
    print_error_line("auth 401: key sk-or-[REDACTED]\n  half\x1b]0;pwned\x07 \x1b[2J")
    err = capsys.readouterr().err
    assert err.startswith("error: auth 401") and err.count("\n") == 1 and "\x1b" not in err, repr(err)
