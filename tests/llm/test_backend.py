"""The litellm boundary's one-time setup (:func:`audit.llm.backend.litellm`)."""

from __future__ import annotations

import subprocess
import sys

FROZEN = """
import gc
from audit.llm import backend
module = backend.litellm()
print(gc.get_freeze_count(), any(obj is module.model_cost for obj in gc.get_objects()))
"""


def test_litellm_s_import_time_objects_are_frozen_out_of_the_collector_s_walks():
    """Every full collection walked litellm's ~400,000 import-time objects again (0.3 s of CPU each,
    one every ~500 calls at 128 in flight); frozen, the collector no longer sees them. A fresh
    interpreter: in this one another test's ``long_lived_heap`` block may have unfrozen them."""
    out = subprocess.run([sys.executable, "-c", FROZEN], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) > 100_000
    assert out[1] == "False"  # litellm's price map is out of the collector's generations
