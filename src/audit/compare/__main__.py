"""``python -m audit.compare <dir> [<dir> ...] [--out DIR]``: the CLI, kept thin (the work
is in :func:`audit.compare.report.compare`, which tests call directly)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from audit.errors import UserError, exit_on_user_error


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line as one line and exit 1, like every entrypoint
    (its default is the usage text plus the message, exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message}; see {self.prog} --help")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = _Parser(
        prog="python -m audit.compare",
        description="Compare finished runs: censorship audits (model x topic x technique) and epistemic "
                    "runs (system x domain x predicate). Writes comparison.html, audits.csv and "
                    "epistemic.csv, and prints the tables.",
    )
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                        help="a run dir, an outputs/ tree or a multirun/<date>/ sweep dir (searched recursively)")
    parser.add_argument("--out", type=Path, default=None, help="where to write the comparison (default: the first DIR)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = exit_on_user_error(lambda: parse_args(argv))
    from audit.compare.report import compare  # after argparse, so --help stays instant

    exit_on_user_error(lambda: compare(args.dirs, args.out))


if __name__ == "__main__":
    main()
