"""``python -m audit.runs``: ``list [DIR ...] [--html [FILE]]`` lists every run under the given
directories (default: ``outputs/`` and ``multirun/``); ``schema`` prints the JSON Schema of
``summary.json`` (the file published at ``schemas/summary.schema.json`` is this output)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from audit.cli import ArgParser
from audit.errors import UserError, exit_on_user_error

DEFAULT_DIRS = (Path("outputs"), Path("multirun"))
BESIDE_RUNS = Path("<beside the runs>")
"""``--html`` with no FILE: :func:`audit.runs.index.beside_runs` chooses the page's place (a Path:
argparse passes a string ``const`` through ``type``; no real file is named like this)."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgParser(prog="python -m audit.runs", description="The runs on disk, and the schema of their record.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="every run under DIRs: experiment, status, models, topic or "
                                               "domain, cost, headline figures, path")
    listing.add_argument("dirs", nargs="*", type=Path, metavar="DIR",
                         help="run dirs, outputs/ trees or sweep dirs (default: outputs/ and multirun/)")
    listing.add_argument("--html", nargs="?", type=Path, const=BESIDE_RUNS, default=None, metavar="FILE",
                         help="also write a sortable index page linking each report and comparison (default: "
                              "runs.html beside the runs: in the one DIR given, or the directory holding them all)")
    commands.add_parser("schema", help="print the JSON Schema of summary.json")
    return parser.parse_args(argv)


def list_runs(dirs: Sequence[Path], html: Path | None) -> str:
    """The text index of the runs under ``dirs`` (and the page, when ``html`` names one or is
    :data:`BESIDE_RUNS`)."""
    # lazy: --help answers before pandas and pydantic load
    from audit.runs.index import beside_runs, index_rows, text_table, write_index
    from audit.record.run_record import iter_runs

    roots = list(dirs) or [d for d in DEFAULT_DIRS if d.is_dir()]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        raise UserError(f"{missing[0]} is not a directory; pass run dirs, outputs/ or a multirun/ sweep dir")
    rows = index_rows(iter_runs(roots))
    if not rows:
        where = ", ".join(map(str, roots or DEFAULT_DIRS))
        raise UserError(f"no runs found under {where}; pass the directories that hold your runs")
    text = text_table(rows)
    if html is not None:
        page = beside_runs(roots) if html == BESIDE_RUNS else html
        text += f"\nwrote {write_index(rows, page, roots)}"
    return text


def main(argv: Sequence[str] | None = None) -> None:
    args = exit_on_user_error(lambda: parse_args(argv))
    if args.command == "schema":
        from audit.record.summary import json_schema  # lazy: pydantic loads only for this command

        print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
        return
    print(exit_on_user_error(lambda: list_runs(args.dirs, args.html)))


if __name__ == "__main__":
    main()
