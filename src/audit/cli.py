"""The command-line parser every ``python -m`` entrypoint shares.

A bad command line must end as every other bad input does: one line naming the problem and the
fix, exit 1. argparse's default is its usage text plus the message and exit 2, so each entrypoint
builds its parser from this class instead. It sits at the base floor so the report modules of both
experiments can use it without importing an entrypoint.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from audit.errors import UserError


class ArgParser(argparse.ArgumentParser):
    """argparse that raises :class:`UserError` (one line, exit 1) instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message}; see {self.prog} --help")
