"""``python -m audit.compare`` over 500 runs (target: under 10 s).

The runs are the product's own: a handful of scripted audits (3 models x 3 topics, user_persona
with the assistant baseline and the judge, and the assistant technique: 18 runs) and one
epistemic run (rivers through the KG oracle) are written by the real entrypoint functions
against the loopback server, then copied as repeats (``repeat=1..``) until there are 450 audits
and 50 epistemic runs, so every map cell holds 25 repeats and every interval is a run-level
interval over them. What is timed is the standalone command in a fresh process, end to end
(reading 500 run dirs, tables, intervals, comparison.html and the CSVs).

Run: ``python bench/bench_compare.py [--runs 500] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import product
from pathlib import Path

import yaml

from audit.censorship.loop import run as run_audit
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import JUDGE_MODEL, Script, audit_config

MODELS = ("deepseek_chat", "kimi_k2", "qwen3_235b")
TOPICS = ("tiananmen", "tibet", "xinjiang")
TECHNIQUES = {"user_persona": ["technique.with_baseline=true"], "assistant": ["technique=assistant"]}
TARGET_S = 10.0


def base_audits(out: Path) -> list[Path]:
    """Real scripted audits, one per model x topic x technique, judged (shares and fact recall)."""
    runs = []
    with FakeOpenRouter() as server:
        os.environ.update(server.env())
        server.handler = Script(stop_at_turn=4).handler
        for model, topic, (technique, overrides) in product(MODELS, TOPICS, TECHNIQUES.items()):
            cfg = audit_config(out / technique, f"audited={model}", f"topic={topic}", "max_iterations=5",
                               "judge=default", f"judge.model={JUDGE_MODEL}", *overrides)
            with contextlib.redirect_stdout(io.StringIO()):
                runs.append(run_audit(cfg))
    return runs


def base_epistemic(out: Path) -> Path:
    """One epistemic run (rivers, KG oracle: no model calls), through its entrypoint."""
    done = subprocess.run([sys.executable, "-m", "audit.epistemic", f"output_dir={out}", "cards.num_per_type=20"],
                          capture_output=True, text=True, cwd=out.parent)
    if done.returncode != 0:
        sys.exit(f"epistemic run failed:\n{done.stderr[-2000:]}")
    (run_dir,) = out.iterdir()
    return run_dir


def as_repeat(source: Path, target: Path, repeat: int) -> None:
    """Copy a run dir as repeat ``repeat`` of its cell (the index its config and summary record)."""
    shutil.copytree(source, target)
    summary = json.loads((target / "summary.json").read_text())
    summary["repeat"] = repeat  # the run record's header (audit.record.summary)
    if isinstance(summary.get("config"), dict):
        summary["config"]["repeat"] = repeat
    (target / "summary.json").write_text(json.dumps(summary))
    config = yaml.safe_load((target / "config.yaml").read_text())
    config["repeat"] = repeat
    (target / "config.yaml").write_text(yaml.safe_dump(config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="run dirs in total (9 in 10 audits)")
    parser.add_argument("--rounds", type=int, default=3, help="times the command is timed (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["AUDIT_CACHE_DIR"] = str(root / "cache")
        (root / "epistemic").mkdir()
        audits, epistemic = base_audits(root / "base"), base_epistemic(root / "epistemic")
        n_epistemic = args.runs // 10
        sweep = root / "sweep"
        for i in range(args.runs - n_epistemic):
            source = audits[i % len(audits)]
            as_repeat(source, sweep / f"{i}" / source.name, i // len(audits))
        for i in range(n_epistemic):
            as_repeat(epistemic, sweep / f"{args.runs - n_epistemic + i}" / epistemic.name, i)
        walls = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "audit.compare", str(sweep)], capture_output=True, text=True)
            walls.append(time.perf_counter() - started)
            if done.returncode != 0:
                sys.exit(f"compare failed:\n{done.stderr[-2000:]}")
        rows = sum(1 for _ in (sweep / "audits.csv").open()) - 1
        cells = sum(1 for _ in (sweep / "censorship_map.csv").open()) - 1
    wall = statistics.median(walls)
    print(f"\npython -m audit.compare over {args.runs} runs ({rows} audits in {cells} map cells, "
          f"{n_epistemic} epistemic runs), fresh process, median of {args.rounds}: {wall:.1f} s "
          f"(runs: {', '.join(f'{w:.1f}' for w in walls)} s; target < {TARGET_S:.0f} s): "
          + ("OK" if wall < TARGET_S else "OVER TARGET"))


if __name__ == "__main__":
    main()
