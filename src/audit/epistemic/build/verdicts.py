"""Store the SHACL verdict of each shipped graph beside it, for every predicate of its domain.

An epistemic run on a shipped graph (the rivers domain) reads this file instead of validating the
graph with pyshacl at every start (~0.6 CPU-s of a run's ~2). The file's name holds a hash of the
graph, the shapes and the properties they read, so an edited graph or shapes file is validated
again at the next run until this is run again; ``--check`` (a test runs it) says whether the stored
verdicts are those of the files as they are.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from audit.epistemic.domain import shipped_verdicts
from audit.io.atomic import read_json, write_json


def main(argv: list[str] | None = None) -> None:
    """CLI: ``python -m audit.epistemic.build.verdicts [--check]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming each verdict that is missing or stale; write nothing")
    args = parser.parse_args(argv)
    wanted = shipped_verdicts()
    stale = sorted(str(path) for path, verdict in wanted.items()
                   if not path.is_file() or read_json(path) != verdict)
    graphs = {path.parent / path.name.split(".violations-")[0] for path in wanted}
    outdated = sorted(str(old) for graph in graphs for old in graph.parent.glob(f"{graph.name}.violations-*.json")
                      if old not in wanted)
    if args.check:
        if stale or outdated:
            print(f"error: stored verdicts differ from the graphs: {', '.join(stale + outdated)}; "
                  "run python -m audit.epistemic.build.verdicts", file=sys.stderr)
            raise SystemExit(1)
        print(f"the {len(wanted)} stored verdicts are the graphs' own")
        return
    for path, verdict in wanted.items():
        write_json(path, verdict)
    for old in outdated:
        Path(old).unlink()
    print(f"stored {len(wanted)} verdicts ({sum(map(len, wanted.values()))} violations): "
          + ", ".join(path.name for path in wanted))


if __name__ == "__main__":
    main()
