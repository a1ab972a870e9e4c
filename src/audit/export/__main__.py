"""``python -m audit.export --format inspect <dir> [<dir> ...] [--out DIR]``: write an Inspect log
per run (each into its own run dir, or all into ``--out``), then name what was written."""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Sequence
from pathlib import Path

from audit.compare.__main__ import _Parser
from audit.errors import UserError, exit_on_user_error
from audit.io.atomic import atomic_open

FORMATS = ("inspect",)
MISSING = "the Inspect export needs inspect-ai; install it with: pip install 'audit[inspect]' (or pip install inspect-ai)"


def parse_args(argv: Sequence[str] | None = None):
    parser = _Parser(prog="python -m audit.export",
                     description="Export runs as logs other tools read: --format inspect writes one Inspect log "
                                 "(.eval) per run, which `inspect view` lists and opens.")
    parser.add_argument("--format", required=True, choices=FORMATS, help="the log format (inspect)")
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                        help="a run dir, an outputs/ tree or a multirun/<date>/ sweep dir (searched recursively)")
    parser.add_argument("--out", type=Path, default=None,
                        help="write every log into this directory (default: each into its own run dir)")
    return parser.parse_args(argv)


def export_inspect(dirs: Sequence[Path], out: Path | None = None) -> list[Path]:
    """Write one Inspect log per run found under ``dirs``; the paths written.

    Every log is made before the first is written, so a run that cannot be mapped leaves no
    partial export; each file is written atomically (a second export of a run replaces its log:
    the name is stable per run dir).
    """
    if importlib.util.find_spec("inspect_ai") is None:
        raise UserError(MISSING)
    from inspect_ai.log import write_eval_log

    from audit.export.inspect_log import inspect_log, log_file_name
    from audit.runs.loading import load_runs

    if out is not None and out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; pass a directory")
    runs = [run for run in load_runs(dirs) if run.experiment != "unknown"]
    if not runs:
        raise UserError(f"no run of either experiment under {', '.join(map(str, dirs))}; nothing to export")
    logs = [(run, inspect_log(run)) for run in runs]
    written = []
    with tempfile.TemporaryDirectory(prefix="audit-export-") as scratch:
        for run, log in logs:
            target = (out if out is not None else run.path) / log_file_name(log)
            staged = Path(scratch) / target.name
            write_eval_log(log, str(staged), format="eval")  # inspect_ai's own writer, then one atomic move
            with atomic_open(target, "wb") as handle:
                handle.write(staged.read_bytes())
            written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    args = exit_on_user_error(lambda: parse_args(argv))
    written = exit_on_user_error(lambda: export_inspect(args.dirs, args.out))
    for path in written:
        print(path)
    print(f"wrote {len(written)} Inspect log(s); open them with:")
    for where in [args.out] if args.out is not None else args.dirs:
        print(f"  inspect view --log-dir {where}")


if __name__ == "__main__":
    main()
