"""The cells a comparison keys a set of runs into, for tests that compare two sets (a resumed run
and its unkilled twin must land in the same cells with the same numbers)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from audit.benchmark.cells import benchmark_tables
from audit.compare.benchmark import benchmark_runs, load
from audit.compare.collect import collect
from audit.compare.tables import build_tables


def comparison_cells(*dirs: Path) -> dict[str, pd.DataFrame]:
    """The audit cells (censorship map), the epistemic cells (its matrix) and the benchmark cells of the
    runs under ``dirs``, as ``python -m audit.compare`` builds them (no column names a run)."""
    collected = collect(list(dirs))
    assert not collected.failures, collected.failures
    tables = build_tables(collected)
    runs = benchmark_runs(collected.runs)
    bench = benchmark_tables(*load(runs)).cells if runs else pd.DataFrame()
    return {"audits": tables.censorship_map, "epistemic": tables.epistemic_matrix, "benchmark": bench}


def assert_same_cells(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> None:
    """Every table of ``a`` equals ``b``'s: the same cells (every key), the same numbers."""
    for name in a:
        pd.testing.assert_frame_equal(a[name].reset_index(drop=True), b[name].reset_index(drop=True), obj=name)
