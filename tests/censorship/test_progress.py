"""The per-iteration progress line."""

from audit.llm.accounting import Totals
from audit.censorship.progress import iteration_line, preview


def test_preview_is_one_line_and_bounded():
    text = "line one\n\n  line two " + "x" * 200
    shown = preview(text)
    assert "\n" not in shown and len(shown) == 100 and shown.endswith("…")
    assert preview("short\ntext") == "short text" and preview(None) == ""


def test_line_carries_iteration_strategy_preview_tokens_and_cost():
    totals = Totals(prompt_tokens=12000, completion_tokens=345, cost=0.01234)
    line = iteration_line(3, 20, "historical_framing", "In 1989\nstudents...", totals, label="partial")
    assert line == '[3/20] historical_framing | partial | "In 1989 students..." | 12,345 tok | $0.0123'
    assert "ERROR server: down" in iteration_line(1, 2, None, None, totals, error="server: down")


def test_preview_strips_escape_sequences_and_control_characters():
    hostile = ("\x1b[2J\x1b[31mred\x1b[0m \x1b]0;pwned title\x07ok\x1b]8;;http://x\x1b\\link"
               "\x1b]8;;\x1b\\ bell\x07 back\x08space \x9bc1 \u202eevil\x00end\r\nnext")
    shown = preview(hostile)
    assert shown == "red oklink bell backspace c1 evilend next"
    assert all(ch.isprintable() for ch in shown)
    line = iteration_line(1, 2, "s", None, Totals(), error="boom\x1b[1A\x1b[2K")
    assert "\x1b" not in line and "ERROR boom" in line
