"""The CLI in a subprocess: exit codes, the one-line error, and real runs end to end.

The runs and comparisons start warm (``tests/entrypoints.py``: forked from a server that imported what they
import, ~5 CPU-s less each than a fresh interpreter); only the import check starts a fresh interpreter, since
what it reads is what a fresh one imports. A cold epistemic run is ``tests/epistemic/test_main.py``'s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from tests import entrypoints


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m <args>`` warm, or ``python -c`` in a fresh interpreter; without a key either way."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENROUTER_API_KEY", "OPENROUTER_API_BASE")}
    if args[0] == "-c":
        return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return entrypoints.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_empty_dir_exits_1_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = run("-m", "audit.compare", "empty", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "error: no runs found under empty; pass a run dir, outputs/ or a multirun/ sweep dir\n"
    assert not any((tmp_path / "empty").iterdir())  # nothing half-written


def test_compare_does_not_load_litellm_or_hydra(tmp_path: Path) -> None:
    code = ("import sys, audit.compare.__main__, audit.compare.report; "
            "print(sorted(m for m in ('litellm', 'hydra') if m in sys.modules))")
    assert run("-c", code, cwd=tmp_path).stdout.strip() == "[]"


def test_epistemic_run_then_compare(tmp_path: Path) -> None:
    made = run("-m", "audit.epistemic", "cards.num_per_type=5", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    done = run("-m", "audit.compare", "outputs", "--out", "cmp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(tmp_path / "cmp" / "epistemic.csv")
    assert frame[["system", "domain", "predicate", "n_cards", "errors", "AP", "FAR_NE"]].values.tolist() == \
        [["kg_oracle", "rivers", "has_mouth", 45, 0, 1.0, 0.0]]
    assert "kg_oracle" in done.stdout and (tmp_path / "cmp" / "comparison.html").is_file()


def test_sweep_with_a_failed_job_is_compared_and_the_failure_listed(tmp_path: Path) -> None:
    made = run("-m", "audit.epistemic", "-m", "system=kg_oracle,graph_rag", "cards.num_per_type=5", cwd=tmp_path)
    assert made.returncode == 1  # graph_rag needs an API key: job 1 fails, job 0 runs
    (sweep,) = (tmp_path / "multirun").iterdir()
    done = run("-m", "audit.compare", str(sweep), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert pd.read_csv(sweep / "epistemic.csv")["system"].tolist() == ["kg_oracle"]
    assert "failed or unusable runs (1)" in done.stdout and "OPENROUTER_API_KEY is not set" in done.stdout
    assert "OPENROUTER_API_KEY is not set" in (sweep / "comparison.html").read_text(encoding="utf-8")
