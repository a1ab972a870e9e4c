"""``python -m audit.runs``: ``schema`` prints the JSON Schema of ``summary.json`` (the file
published at ``schemas/summary.schema.json`` is this output)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["schema"]:
        from audit.runs.summary import json_schema

        print(json.dumps(json_schema(), indent=2, ensure_ascii=False))
        return
    print("usage: python -m audit.runs schema", file=sys.stderr)
    raise SystemExit(1)


if __name__ == "__main__":
    main()
