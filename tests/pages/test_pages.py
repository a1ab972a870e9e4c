"""The shared page pieces: an id wraps at its separators only, and stays escaped."""

from __future__ import annotations

import os
import time

from audit.pages import breakable, compile_all, environment


def test_an_id_may_wrap_after_its_slashes_and_underscores_only() -> None:
    assert str(breakable("deepseek/deepseek-chat_v3")) == "deepseek/<wbr>deepseek-chat_<wbr>v3"
    assert str(breakable("refused_share")) == "refused_<wbr>share"
    assert str(breakable("tibet")) == "tibet"


def test_text_with_spaces_or_markup_is_left_as_written_and_escaped() -> None:
    assert str(breakable("failed </script>")) == "failed &lt;/script&gt;"
    assert str(breakable("m/<b>")) == "m/<wbr>&lt;b&gt;"
    assert "<b>" not in str(breakable("<b>x_y</b>"))


def test_a_report_s_templates_are_compiled_once_per_process_and_an_edited_one_is_read_anew(tmp_path) -> None:
    """One environment for the same arguments (a template compiled once, not at every page written), and
    Jinja's check of the file on each load still sees an edit (a template is never served stale)."""
    page = tmp_path / "page.html.j2"
    page.write_text("first {{ x }}")
    env = environment(tmp_path, filters={"twice": str})
    assert environment(tmp_path, filters={"twice": str}) is env
    assert environment(tmp_path, lenient=True) is not env  # other settings: another environment
    compile_all(env)
    compiled = env.get_template("page.html.j2")
    assert env.get_template("page.html.j2") is compiled and compiled.render(x="<b>") == "first &lt;b&gt;"
    page.write_text("second {{ x }}")
    os.utime(page, (time.time() + 5, time.time() + 5))  # a later modification time, whatever the clock's grain
    assert environment(tmp_path, filters={"twice": str}).get_template("page.html.j2").render(x=1) == "second 1"
