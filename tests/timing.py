"""Waits that scale with the machine's load, read once at import (in the main thread).

A subprocess that finishes in 5 s on free cores can take minutes when the cores are shared; a
fixed timeout then fails for load alone. :func:`scaled` multiplies a wait by how oversubscribed the
cores are (load average over cores, at least 1), or by ``AUDIT_TEST_TIME_SCALE`` when it is set.
"""

from __future__ import annotations

import os


def _factor() -> float:
    given = os.environ.get("AUDIT_TEST_TIME_SCALE")
    if given:
        return max(1.0, float(given))
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:  # no load average on this platform
        return 1.0


FACTOR = _factor()

def scaled(seconds: float) -> float:
    """``seconds`` times the load factor, for a wait on work whose speed the load sets."""
    return seconds * FACTOR
