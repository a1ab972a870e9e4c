"""The shared page pieces: an id wraps at its separators only, and stays escaped."""

from __future__ import annotations

from audit.pages import breakable


def test_an_id_may_wrap_after_its_slashes_and_underscores_only() -> None:
    assert str(breakable("deepseek/deepseek-chat_v3")) == "deepseek/<wbr>deepseek-chat_<wbr>v3"
    assert str(breakable("refused_share")) == "refused_<wbr>share"
    assert str(breakable("tibet")) == "tibet"


def test_text_with_spaces_or_markup_is_left_as_written_and_escaped() -> None:
    assert str(breakable("failed </script>")) == "failed &lt;/script&gt;"
    assert str(breakable("m/<b>")) == "m/<wbr>&lt;b&gt;"
    assert "<b>" not in str(breakable("<b>x_y</b>"))
