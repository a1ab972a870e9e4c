"""Reading the experiment's JSON Lines files (cards, results) with one-line errors.

Cards and results files are often hand-edited or come from the original project, so a bad
line must name file and line and say how to fix it, not surface as a JSONDecodeError.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from audit.errors import UserError
from audit.io.safe_read import parse_json


def read_jsonl(path: Path, what: str, fix: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a missing file or a line that is not a
    JSON object raises a one-line UserError naming file and line and ending with ``fix``."""
    if not path.is_file():
        raise UserError(f"{path}: {what} file not found; {fix}")
    for n, raw in enumerate(path.read_bytes().splitlines(), 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"{path.name} line {n}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                            f"save it as UTF-8; {fix}") from None
        if not text.strip():
            continue
        row = parse_json(text, f"{path.name} line {n}", fix=fix)
        if not isinstance(row, dict):
            raise UserError(f"{path.name} line {n}: not a JSON object; {fix}")
        yield n, row
