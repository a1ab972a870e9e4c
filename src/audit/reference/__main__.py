"""``python -m audit.reference [--docs DIR] [--check]``: write (or check) the generated doc pages."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from audit.io.atomic import write_texts
from audit.paths import conf_dir
from audit.reference import cli_page, config_page

PAGES = ("configuration.md", "cli.md")


def pages() -> dict[str, str]:
    """Each generated page's name and text, from the code as it is now."""
    env = {**os.environ, "COLUMNS": "100"}  # argparse wraps help at the terminal's width: fix it
    return {"configuration.md": config_page.render(conf_dir()), "cli.md": cli_page.render(cli_page.collect(env))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m audit.reference", description=__doc__.split(":", 1)[1].strip())
    parser.add_argument("--docs", type=Path, default=Path("docs"), help="the docs folder (default: docs)")
    parser.add_argument("--check", action="store_true", help="exit 1 naming each page that differs; write nothing")
    args = parser.parse_args(argv)
    wanted = pages()
    if args.check:
        stale = [n for n, text in wanted.items() if not (args.docs / n).is_file()
                 or (args.docs / n).read_text(encoding="utf-8") != text]
        if stale:
            print(f"error: {', '.join(stale)} differ from the code; run python -m audit.reference", file=sys.stderr)
            raise SystemExit(1)
        print("the generated pages match the code")
        return
    write_texts({args.docs / n: text for n, text in wanted.items()})
    print("wrote " + ", ".join(str(args.docs / n) for n in wanted))


if __name__ == "__main__":
    main()
