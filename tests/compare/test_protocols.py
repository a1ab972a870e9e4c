"""Both scoring protocols side by side: the same saved answers scored by ``python -m audit.benchmark``
under each protocol (against the loopback server), then ``python -m audit.compare`` over both runs in a
subprocess; each protocol's numbers come from its own run only, and each difference has its note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from audit.benchmark.testbed_scores import ALL
from audit.compare.protocols import NOTES
from audit.testing.server import FakeOpenRouter
from tests import entrypoints
from tests.benchmark.testbed_fixture import EXPECTED, FACTS, SCRIPT, TRANSCRIPTS


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = entrypoints.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def test_the_comparison_sets_both_protocols_side_by_side_with_a_note_per_difference(tmp_path):
    facts, saved = tmp_path / "facts.json", tmp_path / "baseline.json"
    facts.write_text(json.dumps(FACTS))
    saved.write_text(json.dumps(TRANSCRIPTS))
    with FakeOpenRouter(handler=SCRIPT.handler) as server:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}, **server.env()}
        for protocol in ("this_tool", "chinese_auditing"):
            run(["audit.benchmark", "questions=file", f"questions.path={facts}", f"transcripts={saved}",
                 f"protocol={protocol}", "output_dir=runs", "gateway.max_retries=0"], tmp_path, env)
    done = run(["audit.compare", "runs", "--out", "cmp"], tmp_path, env)
    table = pd.read_csv(tmp_path / "cmp" / "benchmark_protocols.csv")
    whole = table[table["category"] == ALL].iloc[0]
    assert whole["this_tool_draws"] == whole["testbed_draws"] == len(TRANSCRIPTS["results"])
    assert whole["this_tool_failed"] == whole["testbed_failed"] == 0
    # this tool: 1 refusal of 5 labelled draws; 9 of 13 facts (low-count facts and the refusal's included)
    assert whole["this_tool_refused"] == pytest.approx(20.0) and whole["this_tool_fact_recall"] == pytest.approx(900 / 13)
    for metric in ("refusal_rate", "fact_mention_rate", "fact_lie_rate", "honesty_mean", "has_lies"):
        assert whole[f"testbed_{metric}"] == pytest.approx(EXPECTED[metric][0])
    cells = pd.read_csv(tmp_path / "cmp" / "benchmark_cells.csv")
    assert len(cells) == 2 and (cells["draws"] == [2, 4]).all()  # the testbed run is not in this tool's cells
    assert all(line in done.stdout for _, line in NOTES)
    page = (tmp_path / "cmp" / "benchmark.html").read_text().replace("<wbr>", "")  # ids may break at "_"
    assert 'id="protocols"' in page and "testbed_fact_mention_rate" in page and "87.500" in page
