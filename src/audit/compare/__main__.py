"""``python -m audit.compare <dir> [<dir> ...] [--out DIR]``: the CLI, kept thin (the work
is in :func:`audit.compare.build.compare`, which tests call directly)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from audit.cli import ArgParser
from audit.errors import exit_on_user_error


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = ArgParser(
        prog="python -m audit.compare",
        description="Compare finished runs: censorship audits (model x topic x technique), epistemic "
                    "runs (system x domain x predicate) and benchmark runs (model x category). Writes "
                    "comparison.html, audits.csv and epistemic.csv (and benchmark.html with its "
                    "benchmark_*.csv for benchmark runs), and prints the tables.",
    )
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                        help="a run dir, an outputs/ tree or a multirun/<date>/ sweep dir (searched recursively)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the comparison (default: the first DIR)")
    parser.add_argument("--judging", default=None, metavar="NAME[,NAME]",
                        help="the judging to show: original (default) or a rescore's name (<run>/judgings/<name>); "
                             "two, comma-separated, side by side with their agreement. judging=NAME works too")
    return parser.parse_args(judging_as_option(list(argv) if argv is not None else sys.argv[1:]))


def judging_as_option(argv: list[str]) -> list[str]:
    """``judging=<name>`` (as the other entrypoints spell a setting) as ``--judging <name>``."""
    return [part for a in argv for part in (["--judging", a.split("=", 1)[1]] if a.startswith("judging=") else [a])]


def main(argv: Sequence[str] | None = None) -> None:
    args = exit_on_user_error(lambda: parse_args(argv))
    from audit.compare.build import compare  # after argparse, so --help stays instant

    exit_on_user_error(lambda: compare(args.dirs, args.out, args.judging))


if __name__ == "__main__":
    main()
