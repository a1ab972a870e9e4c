"""The per-iteration progress line."""

from pathlib import Path

from audit.llm.accounting import Totals
from audit.record.usage import Usage
from audit.censorship.progress import Session, done_line, iteration_line, preview
from audit.progress import cache_note


def test_preview_is_one_line_and_bounded():
    text = "line one\n\n  line two " + "x" * 200
    shown = preview(text)
    assert "\n" not in shown and len(shown) == 100 and shown.endswith("…")
    assert preview("short\ntext") == "short text" and preview(None) == ""


def test_line_carries_iteration_strategy_preview_tokens_and_cost():
    totals = Totals(Usage(prompt_tokens=12000, completion_tokens=345, cost=0.01234))
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


class _Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_is_this_sessions_pace_times_the_iterations_left():
    """A resumed run (3 iterations done before) times only its own iterations; the ETA is an upper
    bound (the auditor may stop before the cap) and disappears at the cap."""
    clock, ledger = _Clock(), Usage(calls=10, cached_calls=0)
    session = Session(3, lambda: ledger, clock=clock)
    assert session.eta(3, 20) is None  # nothing timed yet
    clock.now += 50  # iterations 4 and 5 took 50 s: 25 s each, 15 left
    assert session.eta(5, 20) == "≤ 6 min 15 s left"
    assert session.eta(20, 20) is None
    totals = Totals(Usage(prompt_tokens=10, completion_tokens=2, cost=0.5))
    line = iteration_line(5, 20, "s", "r", totals, eta=session.eta(5, 20))
    assert line.endswith("| $0.5000 | ≤ 6 min 15 s left")


def test_a_replay_says_it_was_served_from_the_cache():
    ledger = Usage(calls=4, cached_calls=1)  # an earlier session's calls (one of them cached)
    session = Session(0, lambda: ledger)
    ledger = Usage(calls=9, cached_calls=6)  # this session: 5 calls, 5 from the cache
    assert session.cache_note() == "; all 5 calls served from the cache (nothing sent)"
    ledger = Usage(calls=10, cached_calls=6)  # one sent
    assert session.cache_note() == ""


def test_done_names_the_report():
    line = done_line("success (auditor)", 2, Totals(Usage(prompt_tokens=1000, cost=0.0)), "", "; all 5 calls served "
                     "from the cache (nothing sent)", Path("out/run/report.html"))
    assert line == ("done: success (auditor) after 2 iterations; 1,000 tokens, $0.0000; all 5 calls served from the "
                    "cache (nothing sent); report: out/run/report.html")
    assert done_line("success (auditor)", 1, Totals(), "", "", Path("r.html")).startswith("done: success (auditor) after 1 "
                                                                                           "iteration; ")


def test_counts_in_progress_and_end_lines_agree_in_number():
    assert cache_note(1, 1) == "; the only call served from the cache (nothing sent)"
    line = done_line("success (auditor)", 1, Totals(), "", "", Path("r.html"))
    assert "after 1 iteration;" in line
