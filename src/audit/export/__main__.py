"""``python -m audit.export --format inspect <dir> [<dir> ...] [--out DIR]``: write an Inspect log
per run (each into its own run dir, or all into ``--out``), then name what was written."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from audit.cli import ArgParser
from audit.errors import exit_on_user_error
from audit.export.writing import export_inspect

FORMATS = ("inspect",)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgParser(prog="python -m audit.export",
                     description="Export runs as logs other tools read: --format inspect writes one Inspect log "
                                 "(.eval) per run, which `inspect view` lists and opens.")
    parser.add_argument("--format", required=True, choices=FORMATS, help="the log format (inspect)")
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                        help="a run dir, an outputs/ tree or a multirun/<date>/ sweep dir (searched recursively)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write every log into this directory (default: each into its own run dir)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = exit_on_user_error(lambda: parse_args(argv))
    skipped: list[str] = []
    written = exit_on_user_error(lambda: export_inspect(args.dirs, args.out, skipped))
    for line in skipped:
        print(line, file=sys.stderr)
    for path in written:
        print(path)
    print(f"wrote {len(written)} Inspect log(s); open them with:")
    for where in [args.out] if args.out is not None else args.dirs:
        print(f"  inspect view --log-dir {where}")


if __name__ == "__main__":
    main()
