"""An epistemic report over 100,000 cards: its size on disk and how long headless Chromium takes to load it.

The cards and rows are synthetic (two systems, one of them wrong on every tenth card, a short raw
output each), written by the real :func:`audit.epistemic.report.write_report`. What is timed is a
fresh headless Chromium (fresh profile, no network, the project's flags) loading the file and
printing its DOM after the load event (``--dump-dom``), best of ``--rounds``; a load that takes
longer than ``--timeout`` seconds is reported as such.

Run: ``python bench/bench_report_pages.py [--cards 100000] [--rounds 2] [--timeout 120]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from audit.epistemic.metrics import compute_metrics
from audit.epistemic.report import write_report

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync")
LABELS = {"E": "YES", "C": "NO", "U": "UNKNOWN"}


def synthetic(n: int) -> tuple[list[dict], dict[str, dict]]:
    """``n`` cards and two systems' rows on them."""
    cards, rows = {}, []
    for i in range(n):
        label = "ECU"[i % 3]
        card_id = f"card{i:06d}"
        cards[card_id] = {"id": card_id, "facts": [f"River {i} has mouth Lake {i}.", f"Lake {i} is in Land {i}."],
                          "question": f"Is Lake {i} the mouth of River {i}?", "gold": LABELS[label], "label": label,
                          "claim": {"subj": f"ex:R{i}", "pred": "ex:hasMouth", "obj": f"ex:L{i}"},
                          "reason": "entailed: triple in KG", "suite": "standard"}
        for system, wrong in (("kg_oracle", False), ("raw_llm:m", i % 10 == 0)):
            pred = "UNKNOWN" if wrong else LABELS[label]
            rows.append({"id": card_id, "gold": LABELS[label], "pred": pred, "pass": not wrong, "system": system,
                         "label": label, "suite": "standard", "reason": f"{system} answered {pred}", "error": None,
                         "raw_output": f'{{"answer": "{pred}"}}' if system != "kg_oracle" else None})
    return rows, cards


def load_seconds(page: Path, timeout_s: float) -> float | None:
    """Seconds a fresh headless Chromium takes to load ``page`` and dump its DOM (None: timed out)."""
    profile = Path(tempfile.mkdtemp(prefix="bench-chromium-"))
    start = time.monotonic()
    browser = subprocess.Popen(["/usr/bin/chromium", *FLAGS, f"--user-data-dir={profile}", "--dump-dom",
                                page.as_uri()], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # its own group: a timeout ends every child it started
    try:
        browser.wait(timeout=timeout_s)
        return time.monotonic() - start
    except subprocess.TimeoutExpired:
        return None
    finally:
        if browser.poll() is None:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    rows, cards = synthetic(args.cards)
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        start = time.monotonic()
        write_report(page, compute_metrics(rows), rows, cards, {"bench": "synthetic"})
        built = time.monotonic() - start
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
        times = [load_seconds(page, args.timeout) for _ in range(args.rounds)]
        done = [t for t in times if t is not None]
        load = f"{min(done):.1f} s (best of {len(done)})" if done else f"over {args.timeout:.0f} s"
        print(f"{args.cards:,} cards: report {page.stat().st_size / 1e6:.1f} MB "
              f"({size / 1e6:.1f} MB with the files beside it), built in {built:.1f} s; Chromium load {load}")


if __name__ == "__main__":
    main()
