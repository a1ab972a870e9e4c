"""A domain: graph + shapes + licenser + the predicate under test, loaded from Hydra config.

``conf/domain/<name>.yaml`` says where the graph comes from (a shipped file or a builder
that caches one), its shapes and provenance; ``conf/predicate/<name>.yaml`` names the
predicate's IRI, its question template and the domain it belongs to. Loading validates the
graph once with pyshacl and sets violating edges aside, so every later verdict starts from a
graph that satisfies its shapes.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from audit.epistemic.graph import RDF_TYPE, RDFS_LABEL, RDFS_SUBCLASS, KnowledgeGraph, Literal
from audit.epistemic.licensing import Licenser
from audit.epistemic.shapes import Shapes, load_shapes, read_paths, set_aside, validate
from audit.errors import UserError, unknown_choice
from audit.io.atomic import read_json, write_json
from audit.paths import CONF_DIR

DATA_DIR = Path(__file__).resolve().parent / "data"
_SCHEMA_PREDICATES = {RDFS_LABEL, RDFS_SUBCLASS}
_SCHEMA_TYPES = {"http://www.w3.org/2002/07/owl#Class", "http://www.w3.org/2000/01/rdf-schema#Class"}


@dataclass
class Predicate:
    """The relation whose claims the cards ask about."""

    name: str
    iri: str
    label: str
    question: str  # template with {subj} and {obj}, filled with labels


@dataclass
class Domain:
    """Everything a card generator or a system needs to know about one graph."""

    name: str
    graph: KnowledgeGraph
    licenser: Licenser
    predicate: Predicate
    violations: list[dict] = field(default_factory=list)
    provenance: str = ""
    # Relations that place a thing under a parent or in a region (a river's mouth, a city's
    # country): near-miss objects are chosen close along these (conf/domain/<name>.yaml `parents`).
    parents: tuple[str, ...] = ()
    shapes: Shapes | None = None  # what the licenser judges by; cards state its constraints in words

    def label(self, iri: str) -> str:
        """Human label for an IRI (rdfs:label, else its local name)."""
        return self.graph.label(iri)

    def verbalise(self, subj: str, pred: str, obj: str) -> str:
        """One fact sentence, e.g. "Escanaba River has mouth Lake Michigan."."""
        if pred == RDF_TYPE:
            return f"{self.label(subj)} is a {self.label(obj)}."
        value = str(obj) if isinstance(obj, Literal) else self.label(obj)
        return f"{self.label(subj)} {self.label(pred)} {value}."

    def all_facts(self) -> Iterator[tuple[str, str, str]]:
        """Every instance-level triple (labels and the class hierarchy excluded), e.g. for a RAG corpus."""
        for s, p, o in self.graph.triples():
            if p in _SCHEMA_PREDICATES or (p == RDF_TYPE and o in _SCHEMA_TYPES):
                continue
            yield s, p, o


def available_predicates(domain: str) -> dict[str, DictConfig]:
    """Predicate configs (conf/predicate/*.yaml) that belong to ``domain``, by name."""
    found = {}
    for path in sorted(Path(CONF_DIR, "predicate").glob("*.yaml")):
        cfg = OmegaConf.load(path)
        if cfg.get("domain") == domain:
            found[path.stem] = cfg
    return found


def load_domain(domain_cfg: DictConfig, predicate_cfg: DictConfig | None = None) -> Domain:
    """Build the domain; ``predicate_cfg`` None means the domain's ``default_predicate``.

    Raises UserError (one line) for a graph syntax error (file + line), an empty graph, a
    predicate of another domain, or a predicate with no triples in the graph.
    """
    name = domain_cfg.name
    available = available_predicates(name)
    if predicate_cfg is None:
        pred_name = domain_cfg.default_predicate
        if pred_name not in available:
            raise unknown_choice("predicate", pred_name, available)
        predicate_cfg = available[pred_name]
    if predicate_cfg.get("domain") != name:
        wrong = predicate_cfg.get("name", "?")
        message = str(unknown_choice("predicate", wrong, available))
        raise UserError(message.replace(f"{wrong!r}.", f"{wrong!r} for domain {name!r}.", 1))
    predicate = Predicate(predicate_cfg.name, predicate_cfg.iri, predicate_cfg.label, predicate_cfg.question)
    built = bool(domain_cfg.get("builder"))
    graph_path = _graph_path(domain_cfg)
    graph = KnowledgeGraph.load(graph_path, snapshot=built)
    if not graph.subjects(predicate.iri):
        raise UserError(f"No triples found for predicate {predicate.iri} in domain {name!r}; "
                        "check the predicate's iri in conf/predicate/")
    shapes = load_shapes(_data_path(domain_cfg.shapes))
    violations = _validated(graph, graph_path, shapes, predicate.iri, cache=built)
    parents = tuple(str(p) for p in (domain_cfg.get("parents") or ()))
    return Domain(name, graph, Licenser(graph, shapes), predicate, violations, domain_cfg.provenance, parents,
                  shapes)


def _validated(graph: KnowledgeGraph, graph_path: Path, shapes: Shapes, pred: str, *, cache: bool) -> list[dict]:
    """Validate once with pyshacl, or read the verdict stored beside the graph.

    The verdict is a pure function of the graph, the shapes and the properties they read for the
    predicate (:func:`read_paths`): geography's has_neighbour and located_in_country read the same two
    (a country does not border the country it lies in) and share one stored verdict. A built (cached,
    immutable) graph stores its verdict on first use: pyshacl needs ~45 s for the 170k cities of the
    large geography graph. A shipped graph's verdict is stored with the package by
    ``python -m audit.epistemic.build.verdicts`` and keyed by the graph's bytes too, so an edited graph is
    validated again: validating the rivers graph was ~0.6 CPU-s of every epistemic run's ~2.
    """
    if not cache:
        stored = verdict_path(graph_path, shapes, pred, content=True)
        if stored.is_file():
            return _stored(graph, stored)
        return validate(graph, shapes, paths={pred})
    stored = verdict_path(graph_path, shapes, pred, content=False)
    if stored.is_file() and stored.stat().st_mtime >= graph_path.stat().st_mtime:
        return _stored(graph, stored)
    violations = validate(graph, shapes, paths={pred})
    write_json(stored, violations)
    return violations


def verdict_path(graph_path: Path, shapes: Shapes, pred: str, *, content: bool) -> Path:
    """Where the verdict of ``graph_path`` for ``pred`` is stored: beside the graph, keyed by the shapes
    and the properties they read, and with ``content`` by the graph's bytes as well (a shipped graph; a
    built one is checked by its file's time instead, since hashing the large graph costs what it saves)."""
    read = "\n".join(sorted(read_paths(shapes, {pred})))
    material = shapes.path.read_bytes() + read.encode() + (graph_path.read_bytes() if content else b"")
    return graph_path.with_name(f"{graph_path.name}.violations-{hashlib.sha256(material).hexdigest()[:16]}.json")


def shipped_verdicts() -> dict[Path, list[dict]]:
    """The verdict of each shipped graph (a domain in ``conf/domain/`` naming a graph file, not a builder)
    for each of its predicates, validated now, by the path :func:`_validated` reads it from."""
    verdicts: dict[Path, list[dict]] = {}
    for path in sorted(Path(CONF_DIR, "domain").glob("*.yaml")):
        domain_cfg = OmegaConf.load(path)
        if domain_cfg.get("builder") or not domain_cfg.get("graph"):
            continue
        graph_path, shapes = _data_path(domain_cfg.graph), load_shapes(_data_path(domain_cfg.shapes))
        for predicate_cfg in available_predicates(domain_cfg.name).values():
            graph = KnowledgeGraph.load(graph_path)
            if graph.subjects(predicate_cfg.iri):
                stored = verdict_path(graph_path, shapes, predicate_cfg.iri, content=True)
                verdicts[stored] = validate(graph, shapes, paths={predicate_cfg.iri})
    return verdicts


def _stored(graph: KnowledgeGraph, stored: Path) -> list[dict]:
    """A stored verdict, its violating edges set aside as :func:`validate` would have."""
    violations = read_json(stored)
    set_aside(graph, violations)
    return violations


def _graph_path(domain_cfg: DictConfig) -> Path:
    """A shipped/explicit graph file, or the cache file the domain's builder ensures."""
    if domain_cfg.get("builder"):
        return importlib.import_module(domain_cfg.builder).ensure_graph(domain_cfg)
    if not domain_cfg.get("graph"):
        raise UserError(f"domain {domain_cfg.name!r} names neither a graph file nor a builder; set one in conf/domain/")
    return _data_path(domain_cfg.graph)


def _data_path(value: str) -> Path:
    """Relative paths are inside the package's data/ directory; absolute ones are used as given."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else DATA_DIR / path
