"""The shipped graphs' stored SHACL verdicts: current, read in place of pyshacl, and ignored once the graph changes."""

from __future__ import annotations

import shutil
from pathlib import Path

from omegaconf import OmegaConf

from audit.epistemic.build import verdicts
from audit.epistemic.domain import load_domain, verdict_path
from audit.epistemic.shapes import load_shapes
from audit.io.atomic import write_json
from audit.paths import CONF_DIR


def test_the_stored_verdicts_are_those_of_the_shipped_graphs_as_they_are(capsys) -> None:
    """Validated now with pyshacl and compared with what is stored; an edited graph or shapes file without
    ``python -m audit.epistemic.build.verdicts`` fails here, not silently in every run's time."""
    verdicts.main(["--check"])
    assert "stored verdicts are the graphs' own" in capsys.readouterr().out


def _rivers_copy(tmp_path: Path):
    """The rivers domain with its graph and shapes copied out of the package (absolute paths)."""
    domain = OmegaConf.load(Path(CONF_DIR, "domain", "rivers.yaml"))
    data = Path(verdicts.__file__).resolve().parents[1] / "data"
    for name in ("graph", "shapes"):
        copy = tmp_path / Path(domain[name]).name
        shutil.copy(data / domain[name], copy)
        domain[name] = str(copy)
    return domain


def test_a_run_reads_the_stored_verdict_and_validates_an_edited_graph_again(tmp_path: Path) -> None:
    """The stored file is what a run uses (here an empty verdict beside a graph with 39 violations), and a
    graph whose bytes changed (one comment line) has no stored verdict under its new key: pyshacl again."""
    domain = _rivers_copy(tmp_path)
    shapes = load_shapes(domain.shapes)
    predicate = OmegaConf.load(Path(CONF_DIR, "predicate", f"{domain.default_predicate}.yaml"))
    write_json(verdict_path(Path(domain.graph), shapes, predicate.iri, content=True), [])
    assert load_domain(domain).violations == []
    with open(domain.graph, "a", encoding="utf-8") as graph:
        graph.write("# edited\n")
    assert len(load_domain(domain).violations) > 0
