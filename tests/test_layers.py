"""The packages form layers: a module imports only from its own floor or the floors below it, at the
top of the file or inside a function alike (an import made late to dodge a cycle is still upward).

The floors, lowest first, are written out here, not derived: a new module must be placed on one
(the test fails for a module no floor names). The README's layout section draws the same picture.
"""

from __future__ import annotations

import ast
from pathlib import Path

import audit

SRC = Path(audit.__file__).resolve().parent

FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base: pure helpers, files, statistics", (
        "audit", "audit.errors", "audit.io", "audit.paths", "audit.stats", "audit.card_stats", "audit.coverage", "audit.model_json",
        "audit.prompt_files", "audit.config_values", "audit.quotes", "audit.progress", "audit.runtime", "audit.counted",
        "audit.pages", "audit.templates", "audit.usage", "audit.tasks")),
    ("model calls", ("audit.llm",)),
    ("the run record and the job runtime", (
        "audit.runs.status", "audit.runs.summary", "audit.runs.rundir", "audit.runs.record", "audit.runs.draws",
        "audit.runs.finish", "audit.runs", "audit.jobs.interrupts", "audit.jobs.resume", "audit.jobs.sweep",
        "audit.jobs.cli_help", "audit.jobs")),
    ("judging", ("audit.judging",)),
    # The glossary defines every experiment's numbers (the epistemic rates come from their one table),
    # so it and the page tools that draw it sit beside the experiments, not in the base floor.
    ("the experiments", ("audit.censorship", "audit.epistemic", "audit.benchmark", "audit.pages.glossary",
                         "audit.pages.tools")),
    ("readers of run dirs", (
        "audit.runs.loading", "audit.runs.tables", "audit.runs.index", "audit.compare",
        "audit.export", "audit.rescore", "audit.judge_check", "audit.benchmark.tables")),
    ("entrypoints: the Hydra app, the sweep-end callback, the loopback server", (
        "audit.__main__", "audit.doctor", "audit.jobs.hydra_app", "audit.jobs.sweep_end", "audit.jobs.warm_imports", "audit.testing",
        "audit.epistemic.__main__", "audit.compare.__main__", "audit.export.__main__", "audit.rescore.__main__",
        "audit.judge_check.__main__", "audit.runs.__main__", "audit.benchmark.__main__")),
)


def floor_of(module: str) -> int:
    """The floor of the longest prefix that names ``module`` (a package's floor covers its modules)."""
    best, found = -1, None
    for n, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), n
    assert found is not None, f"{module} is on no floor: add it to FLOORS in {__file__}"
    return found


def module_name(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, src: Path = SRC) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of an ``audit`` module in ``path`` (functions included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                (node.module == "audit" or node.module.startswith("audit.")):
            names = [f"{node.module}.{a.name}" for a in node.names]  # `from audit import x` may name a module
            found += [(node.lineno, n if (src.parent / n.replace(".", "/")).exists()
                       or (src.parent / (n.replace(".", "/") + ".py")).exists() else node.module) for n in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "audit"]
    return found


def upward_imports(src: Path = SRC) -> list[str]:
    """Every import from a higher floor, as ``module:line imports target (floor -> floor)``."""
    out = []
    for path in sorted(src.rglob("*.py")):
        here = module_name(path, src)
        for line, target in imports(path, src):
            if floor_of(target) > floor_of(here):
                out.append(f"{here}:{line} imports {target} ({FLOORS[floor_of(here)][0]} -> "
                           f"{FLOORS[floor_of(target)][0]})")
    return out


def test_no_module_imports_from_a_higher_floor():
    assert upward_imports() == []


def test_an_upward_import_is_caught_even_inside_a_function(tmp_path):
    """The check itself, on a tree of three files: the record importing an experiment (inside a
    function, as a late import dodging a cycle would) and the job runtime importing a reader."""
    src = tmp_path / "audit"
    for name, text in {"__init__.py": "", "runs/__init__.py": "", "runs/summary.py":
                       "def late():\n    from audit.censorship.loop import Audit\n",
                       "jobs/__init__.py": "", "jobs/sweep.py": "from audit.export import writing\n",
                       "export/__init__.py": "", "export/writing.py": "from audit.runs import summary\n"}.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    found = upward_imports(src)
    assert [line.split(" (")[0] for line in found] == ["audit.jobs.sweep:1 imports audit.export.writing",
                                                       "audit.runs.summary:2 imports audit.censorship.loop"]
    assert floor_of("audit.runs.summary") < floor_of("audit.censorship.loop") < floor_of("audit.compare.tables")
    assert floor_of("audit.jobs.sweep") < floor_of("audit.runs.loading") < floor_of("audit.jobs.sweep_end")
