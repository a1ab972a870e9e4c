"""The comparison's one entry point: collect runs, build every table and page, write them all or none.

It sits above both :mod:`audit.compare.report` (the audit and epistemic page) and
:mod:`audit.compare.benchmark` (the benchmark page, which reuses the report's cell formatting), so
neither page module has to import the other.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from audit.compare.benchmark import benchmark_output
from audit.compare.collect import collect
from audit.compare.judgings import chosen
from audit.compare.report import relative_paths, render_html, summary_text
from audit.compare.tables import Tables, build_tables
from audit.errors import UserError
from audit.io.atomic import write_texts
from audit.io.table import csv_text
from audit.runs.tables import RunTables, build_run_tables, table_files


def compare(dirs: Sequence[Path], out: Path | None = None, judging: str | None = None) -> Tables:
    """Collect the runs under ``dirs``, write the comparison into ``out`` (default: the first
    dir) and print the summary. Everything is computed before the first file is written.
    ``judging`` names the judging shown (default: the original), or two side by side (``a,b``):
    :mod:`audit.compare.judgings`."""
    target = Path(out) if out is not None else Path(dirs[0])
    if target.exists() and not target.is_dir():
        raise UserError(f"--out {target} is a file; pass a directory")
    collected = collect([Path(d) for d in dirs])
    unreadable = [f for f in collected.failures if f.status == "unreadable"]
    if not collected.runs and unreadable and len(unreadable) == len(collected.failures):
        # Damaged files beside good runs are listed in the comparison; with nothing else there
        # would be no comparison at all, only a page saying so.
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise UserError(f"no readable run under {', '.join(map(str, dirs))}: {unreadable[0].label}: "
                        f"{unreadable[0].problem}{more}; restore or remove the damaged summary.json")
    names = chosen(judging, collected.runs)
    tables = build_tables(collected, names)
    benchmark = benchmark_output(collected.runs, dirs, target)
    html = render_html(tables, dirs, target, names, benchmark_page=bool(benchmark.files))
    csvs = {"audits.csv": tables.audits, "censorship_map.csv": tables.censorship_map,
            "knows_vs_says.csv": tables.gaps, "language_gap.csv": tables.languages,
            "provider_gap.csv": tables.provider_gaps, "draw_labels.csv": tables.draws,
            "facts.csv": tables.facts, "epistemic_matrix.csv": tables.epistemic_matrix, "epistemic.csv": tables.epistemic,
            **({"judgings.csv": tables.judgings} if len(names) == 2 else {})}
    # Model text reaches these cells (facts, hypotheses): written by the one table writer.
    texts = {target / name: csv_text(relative_paths(frame, target)) for name, frame in csvs.items()}
    rows = build_run_tables(collected.loaded)
    rows = RunTables(*(relative_paths(frame, target) for frame in (rows.runs, rows.responses, rows.answers)))
    per_row = {target / name: content for name, content in table_files(rows).items()}
    # all or none: never CSVs without their page, or the per-row tables of another comparison
    write_texts({**texts, **per_row, **benchmark.files, target / "comparison.html": html})
    print(summary_text(tables, target, [p.name for p in benchmark.files], benchmark.printed))
    return tables
