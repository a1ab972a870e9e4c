"""The packages form layers, and the layers hold at three grains:

1. a module imports only from its own floor or the floors below it, at the top of the file or
   inside a function alike (an import made late to dodge a cycle is still upward);
2. the top-level packages (``audit.X``; ``__main__`` modules are entry points and left out) import
   each other without a cycle, so each package can be read, tested and moved from the ones below it;
3. an ``audit`` import inside a function is there only for start-up time, and each one is listed in
   :data:`LATE_IMPORTS` with the reason: a new one must be moved to the top of its file or listed.

The floors, lowest first, are written out here, not derived. The README's layout section and
``docs/design.md`` draw them; a test keeps both drawings equal to :func:`drawing`.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

import audit

SRC = Path(audit.__file__).resolve().parent
ROOT = SRC.parent.parent
ENTRY = "*.__main__"
"""Every ``__main__`` module: an entry point, on the top floor and outside the package graph."""

FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("audit", "audit.errors", "audit.neutral", "audit.io", "audit.paths", "audit.cli", "audit.config_values",
              "audit.prompt_files", "audit.model_json", "audit.quotes", "audit.fence", "audit.counted",
              "audit.progress", "audit.runtime", "audit.stop_signals", "audit.tasks", "audit.stats", "audit.templates", "audit.pages")),
    ("run record", ("audit.record",)),
    ("model calls", ("audit.llm",)),
    ("job runtime", ("audit.jobs",)),
    ("judging", ("audit.judging",)),
    ("experiments", ("audit.censorship", "audit.epistemic", "audit.benchmark")),
    ("readers", ("audit.runs", "audit.compare", "audit.export", "audit.rescore", "audit.judge_check",
                 "audit.benchmark.tables")),
    ("top", ("audit.app", "audit.doctor", "audit.testing", "audit.reference", ENTRY)),
)

LATE_IMPORTS: Mapping[tuple[str, str], str] = {
    # Entry points: --help and a bad command line answer before the experiment loads.
    ("audit.__main__", "audit.censorship.loop"): "the audit loads after Hydra composed the config",
    ("audit.benchmark.__main__", "audit.benchmark.run"): "the benchmark loads after Hydra composed the config",
    ("audit.doctor", "audit.censorship.doctor"): "the check loads after Hydra composed the config",
    ("audit.rescore.__main__", "audit.rescore.rescore"): "rescore (pandas) loads after Hydra composed the config",
    ("audit.judge_check.__main__", "audit.judge_check.check"): "the check (pandas) loads after Hydra composed it",
    ("audit.compare.__main__", "audit.compare.build"): "compare (pandas) loads after argparse",
    ("audit.runs.__main__", "audit.runs.index"): "the index (pandas) loads after argparse",
    ("audit.runs.__main__", "audit.record.run_record"): "the run record (pydantic) loads after argparse",
    ("audit.runs.__main__", "audit.record.summary"): "the summary schema (pydantic) loads after argparse",
    # Every entrypoint imports export.writing for its `export.inspect=true` hook.
    ("audit.export.writing", "audit.export.inspect_log"): "the Inspect mapping loads only when an export runs",
    ("audit.export.writing", "audit.export.run_log"): "the Inspect mapping loads only when an export runs",
    ("audit.export.writing", "audit.runs.loading"): "the readers load only when an export runs",
    ("audit.export.writing", "audit.record.summary"): "the summary (pydantic) loads only when an export runs",
    # The gateway (asyncio and the HTTP stack) loads once the config is checked: a refused run never pays it.
    ("audit.censorship.loop", "audit.llm.gateway"): "the gateway loads once the config is checked",
    ("audit.censorship.doctor", "audit.llm.gateway"): "the gateway loads once the config is checked",
    ("audit.benchmark.run", "audit.llm.gateway"): "the gateway loads once the config is checked",
    ("audit.judge_check.check", "audit.llm.gateway"): "the gateway loads once the config is checked",
    ("audit.rescore.rescore", "audit.llm.gateway"): "the gateway loads once the config is checked",
    ("audit.epistemic.pipeline", "audit.llm.gateway"): "litellm loads with the gateway, not in the first ETA",
    ("audit.epistemic.pipeline", "audit.llm.backend"): "litellm loads with the gateway, not in the first ETA",
    # `python -m audit.epistemic --help` imports the pipeline; the graph stack loads when a run starts.
    ("audit.epistemic.pipeline", "audit.epistemic.cards"): "rdflib and the card generator load when a run starts",
    ("audit.epistemic.pipeline", "audit.epistemic.conditions"): "rdflib loads when a run starts",
    ("audit.epistemic.pipeline", "audit.epistemic.domain"): "rdflib and pyshacl load when a run starts",
    # Hydra instantiates the sweep-end callback in every run; only a sweep's end needs compare.
    ("audit.app.sweep_end", "audit.compare.build"): "compare (pandas) loads only when a sweep ends",
}
"""``(module, imported module)`` -> why the import is made inside a function (start-up time only)."""


class Import(NamedTuple):
    line: int
    target: str
    late: bool
    """Made inside a function."""


def floor_of(module: str) -> int:
    """The floor of the longest prefix that names ``module`` (a package's floor covers its modules;
    ``audit`` names only the package itself); every ``__main__`` is on the floor that names :data:`ENTRY`."""
    best, found = -1, None
    for n, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if prefix == ENTRY and module.endswith(".__main__"):
                return n
            if (module == prefix or module.startswith(prefix + ".") and prefix != "audit") and len(prefix) > best:
                best, found = len(prefix), n
    assert found is not None, f"{module} is on no floor: add it to FLOORS in {__file__}"
    return found


def module_name(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, src: Path = SRC) -> list[Import]:
    """Every import of an ``audit`` module in ``path``, functions included (``late``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_function = {id(inner) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for inner in ast.walk(node) if inner is not node}
    found = []
    for node in ast.walk(tree):
        late = id(node) in in_function
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                (node.module == "audit" or node.module.startswith("audit.")):
            names = [f"{node.module}.{a.name}" for a in node.names]  # `from audit import x` may name a module
            found += [Import(node.lineno, n if (src.parent / n.replace(".", "/")).exists()
                             or (src.parent / (n.replace(".", "/") + ".py")).exists() else node.module, late)
                      for n in names]
        elif isinstance(node, ast.Import):
            found += [Import(node.lineno, a.name, late) for a in node.names if a.name.split(".")[0] == "audit"]
    return found


def all_imports(src: Path = SRC) -> Iterable[tuple[str, Import]]:
    for path in sorted(src.rglob("*.py")):
        here = module_name(path, src)
        for found in imports(path, src):
            yield here, found


def upward_imports(src: Path = SRC) -> list[str]:
    """Every import from a higher floor, as ``module:line imports target (floor -> floor)``."""
    return [f"{here}:{i.line} imports {i.target} ({FLOORS[floor_of(here)][0]} -> {FLOORS[floor_of(i.target)][0]})"
            for here, i in all_imports(src) if floor_of(i.target) > floor_of(here)]


def package_of(module: str) -> str:
    """``audit.X`` for any module under it (a top-level module is its own package)."""
    return ".".join(module.split(".")[:2])


def package_graph(src: Path = SRC) -> dict[str, dict[str, list[str]]]:
    """package -> package it imports -> the imports that make the edge (``module:line imports target``).
    Entry points (``__main__``) and ``audit`` itself (the version) are left out."""
    graph: dict[str, dict[str, list[str]]] = {}
    for here, i in all_imports(src):
        if here.endswith(".__main__") or here == "audit":
            continue
        source, target = package_of(here), package_of(i.target)
        graph.setdefault(source, {})
        if target not in (source, "audit"):
            graph[source].setdefault(target, []).append(f"{here}:{i.line} imports {i.target}")
    return graph


def package_cycles(graph: Mapping[str, Mapping[str, list[str]]]) -> list[list[str]]:
    """Cycles of packages (``[a, b, ..., a]``), at most one through each package, found depth first;
    [] when the packages form layers."""
    cycles: list[list[str]] = []
    done: set[str] = set()
    for start in sorted(graph):
        if start not in done and (cycle := _cycle_from(start, graph, [], done)):
            cycles.append(cycle)
            done.update(cycle)
    return cycles


def _cycle_from(node: str, graph: Mapping[str, Mapping[str, list[str]]], path: list[str],
                done: set[str]) -> list[str] | None:
    """A cycle reached from ``node`` along ``path`` (the packages walked so far); None when every
    package below ``node`` is done without one."""
    path.append(node)
    for nxt in sorted(graph.get(node, {})):
        if nxt in path:
            return path[path.index(nxt):] + [nxt]
        if nxt not in done and (found := _cycle_from(nxt, graph, path, done)):
            return found
    path.pop()
    done.add(node)
    return None


def cycle_text(cycle: list[str], graph: Mapping[str, Mapping[str, list[str]]]) -> str:
    """A cycle with the import that makes each step, one step a line."""
    return "\n".join(f"  {a} -> {b}: {'; '.join(graph[a][b][:3])}" for a, b in zip(cycle, cycle[1:]))


def late_imports(src: Path = SRC) -> dict[tuple[str, str], str]:
    """``(module, imported module)`` -> ``module:line`` of every ``audit`` import made inside a function."""
    return {(here, i.target): f"{here}:{i.line}" for here, i in all_imports(src) if i.late}


def drawing() -> str:
    """The floors as the README and docs/design.md draw them: lowest first, one floor a line (wrapped
    under itself when long), ``audit.`` left out."""
    lines = []
    for n, (name, prefixes) in enumerate(FLOORS):
        names = ", ".join("every __main__" if p == ENTRY else p.removeprefix("audit.")
                          for p in prefixes if p != "audit")
        lines += textwrap.wrap(names, 100, initial_indent=f"{n}  {name:<12} ", subsequent_indent=" " * 16)
    return "\n".join(lines)


def test_no_module_imports_from_a_higher_floor():
    assert upward_imports() == []


def test_the_packages_import_each_other_without_a_cycle():
    graph = package_graph()
    cycles = package_cycles(graph)
    assert not cycles, "packages that import each other in a loop (break one step):\n" + "\n\n".join(
        cycle_text(c, graph) for c in cycles)


def test_every_import_inside_a_function_is_a_listed_lazy_import():
    found = late_imports()
    unlisted = [f"{where} imports {target} inside a function" for (module, target), where in sorted(found.items())
                if (module, target) not in LATE_IMPORTS]
    assert not unlisted, ("move each to the top of its file; only a lazy import of a heavy module, for start-up "
                          f"time, belongs in LATE_IMPORTS (with its reason) in {__file__}:\n" + "\n".join(unlisted))
    stale = sorted(set(LATE_IMPORTS) - set(found))
    assert not stale, f"LATE_IMPORTS lists imports no function makes any more; remove them: {stale}"


def test_the_readme_and_the_design_notes_draw_the_floors_as_they_are():
    expected = drawing()
    for page in ("README.md", "docs/design.md"):
        assert expected in (ROOT / page).read_text(encoding="utf-8"), (
            f"{page} must draw the floors of {__file__} in a code block, as:\n{expected}")


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    src = tmp_path / "audit"
    for name, text in {"__init__.py": "", **files}.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


def test_an_upward_import_is_caught_even_inside_a_function(tmp_path):
    """The check itself, on a tree of three files: the record importing an experiment (inside a
    function, as a late import dodging a cycle would) and the job runtime importing a reader."""
    src = _tree(tmp_path, {"record/__init__.py": "", "record/summary.py":
                           "def late():\n    from audit.censorship.loop import Audit\n",
                           "jobs/__init__.py": "", "jobs/sweep.py": "from audit.export import writing\n",
                           "export/__init__.py": "", "export/writing.py": "from audit.record import summary\n"})
    found = upward_imports(src)
    assert [line.split(" (")[0] for line in found] == ["audit.jobs.sweep:1 imports audit.export.writing",
                                                       "audit.record.summary:2 imports audit.censorship.loop"]
    assert late_imports(src) == {("audit.record.summary", "audit.censorship.loop"): "audit.record.summary:2"}
    assert floor_of("audit.record.summary") < floor_of("audit.censorship.loop") < floor_of("audit.compare.tables")
    assert floor_of("audit.jobs.sweep") < floor_of("audit.runs.loading") < floor_of("audit.app.sweep_end")
    assert floor_of("audit.compare.__main__") == floor_of("audit.app") == len(FLOORS) - 1


def test_a_package_cycle_is_found_and_named_step_by_step(tmp_path):
    """Two packages that each import a module of the other (neither import upward within its own
    floor, so only the package check sees the loop); entry points stay out of the graph."""
    src = _tree(tmp_path, {"errors.py": "from audit.io.neutral import text\n", "io/__init__.py": "",
                           "io/neutral.py": "", "io/lock.py": "from audit.errors import UserError\n",
                           "runs/__init__.py": "", "runs/__main__.py": "from audit.app import run\n",
                           "app/__init__.py": "from audit.runs import loading\n"})
    graph = package_graph(src)
    assert package_cycles(graph) == [["audit.errors", "audit.io", "audit.errors"]]
    assert cycle_text(package_cycles(graph)[0], graph) == (
        "  audit.errors -> audit.io: audit.errors:1 imports audit.io.neutral\n"
        "  audit.io -> audit.errors: audit.io.lock:1 imports audit.errors")
    assert package_cycles({"a": {"b": []}, "b": {"c": []}, "c": {}}) == []
