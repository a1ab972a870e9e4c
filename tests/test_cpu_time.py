"""The per-test CPU log's accounting of children that outlive a test (tests/cpu_time.py)."""

from __future__ import annotations

import subprocess
import sys

from tests.cpu_time import _running_children, _running_delta


def test_a_running_child_counts_for_what_it_spent_and_an_ended_one_is_not_counted_twice():
    # a child alive across the test grew 3 s; one that ended had 2 s counted before, which RUSAGE_CHILDREN
    # now adds again with its whole lifetime; one started during the test counts from zero
    assert _running_delta({1: 5.0, 2: 2.0}, {1: 8.0, 3: 0.5}) == 3.0 - 2.0 + 0.5


def test_a_busy_child_is_seen_with_its_cpu():
    with subprocess.Popen([sys.executable, "-c", "import sys\nwhile sys.stdin.read(1): pass"],
                          stdin=subprocess.PIPE) as child:
        try:
            seen = _running_children()
            assert child.pid in seen and seen[child.pid] >= 0.0
        finally:
            assert child.stdin is not None
            child.stdin.close()
    assert child.pid not in _running_children()
