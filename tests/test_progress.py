"""The progress line: its wording, rate and ETA, and when it is printed (a fake clock, no timing)."""

from __future__ import annotations

import pytest

from audit.progress import Progress, format_duration, progress_line


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (7.4, "7 s"), (59.6, "1 min 00 s"), (125, "2 min 05 s"),
                                           (3725, "1 h 02 min"), (-3, "0 s")])
def test_durations_read_in_whole_units(seconds, text):
    assert format_duration(seconds) == text


def test_line_shows_share_rate_of_calls_and_eta_from_the_answers_rate():
    # 3,000 of 6,000 answers in 10 s with 4,000 calls (some cards call twice): 400 calls/s,
    # and the other half takes as long again.
    assert progress_line(3000, 6000, 10.0, 4000) == "answered 3000/6000 (50%), 400.0 calls/s, ETA 10 s"


def test_last_line_says_how_long_it_took_and_first_moment_has_no_rate():
    assert progress_line(6000, 6000, 15.0, 6000) == "answered 6000/6000 (100%), 400.0 calls/s, took 15 s"
    assert progress_line(0, 6000, 0.0, 0) == "answered 0/6000 (0%)"
    assert progress_line(0, 0, 0.0, 0) == "answered 0/0 (100%)"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_prints_every_tenth_and_after_a_silence_counting_only_this_runs_calls():
    clock, lines, calls = Clock(), [], [50]  # 50 calls were in the ledger before (a resumed run)
    progress = Progress(100, lambda: calls[0], every_s=10.0, clock=clock, out=lines.append)
    for _ in range(9):
        clock.now += 0.1
        calls[0] += 1
        progress.tick()
    assert lines == []
    clock.now += 0.1
    calls[0] += 1
    progress.tick()
    assert lines == ["answered 10/100 (10%), 10.0 calls/s, ETA 9 s"]
    clock.now += 30  # a slow stretch: one answer after 30 s of silence still reports
    progress.tick()
    assert lines[-1] == "answered 11/100 (11%), 0.3 calls/s, ETA 4 min 11 s"  # 89 left at 11 per 31 s; 10 calls in 31 s (was "0 calls/s")
    for _ in range(89):
        progress.tick()
    assert len(lines) == 11 and lines[-1].startswith("answered 100/100 (100%)")
