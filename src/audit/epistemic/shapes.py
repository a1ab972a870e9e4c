"""SHACL shapes: compiled once into plain data for the licenser, and validated once with pyshacl.

The licenser must judge ~10^5 claims per second, so it cannot run pyshacl per claim. Instead
the shapes file is read here into :class:`NodeShape`/:class:`PropertyConstraint` records that
the licenser evaluates with dict lookups. Only constraint components whose verdict can change
when ONE triple is added are compiled (sh:maxCount, sh:class, sh:disjoint, and sh:class on a
node shape, i.e. the focus node's own class); components that an
addition can never violate (sh:minCount, messages, names) are accepted and ignored; anything
else is refused, so the compiled checks never silently disagree with pyshacl.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from audit.epistemic.graph import RDF_TYPE, KnowledgeGraph, Literal
from audit.errors import UserError

SH = "http://www.w3.org/ns/shacl#"
_TARGETS = {SH + "targetSubjectsOf", SH + "targetClass", SH + "targetNode"}
_COMPILED = {SH + "maxCount", SH + "class", SH + "disjoint"}
_INERT = {
    SH + "minCount", SH + "name", SH + "description", SH + "message", SH + "severity", SH + "path",
    SH + "property", SH + "deactivated", RDF_TYPE,
    "http://www.w3.org/2000/01/rdf-schema#label", "http://www.w3.org/2000/01/rdf-schema#comment",
}
_KNOWN = _TARGETS | _COMPILED | _INERT


@dataclass(frozen=True)
class PropertyConstraint:
    """What a claim (s, path, o) can violate: more than ``max_count`` values, a value outside
    ``classes``, or a value shared with one of the ``disjoint`` properties."""

    path: str
    max_count: int | None
    classes: tuple[str, ...]
    disjoint: tuple[str, ...]


@dataclass(frozen=True)
class NodeShape:
    """A shape's targets (who is a focus node) and its property constraints."""

    iri: str
    target_subjects_of: frozenset[str]
    target_classes: frozenset[str]
    target_nodes: frozenset[str]
    properties: tuple[PropertyConstraint, ...]
    classes: tuple[str, ...] = ()   # sh:class on the shape itself: the focus node's own class


@dataclass(frozen=True)
class Shapes:
    """The compiled shapes of one domain and the file they came from (for pyshacl)."""

    path: Path
    node_shapes: tuple[NodeShape, ...]

    def paths(self) -> set[str]:
        """Every property a constraint reads (paths and their disjoint partners)."""
        out: set[str] = set()
        for shape in self.node_shapes:
            for c in shape.properties:
                out.add(c.path)
                out.update(c.disjoint)
        return out


def load_shapes(path: Path | str) -> Shapes:
    """Read and compile a shapes file; syntax errors and unsupported shapes are UserErrors."""
    path = Path(path)
    g = KnowledgeGraph.load(path)
    shapes = []
    for iri in sorted({s for p in _TARGETS for s in g.subjects(p)}):
        targets = {p: frozenset(g.objects(iri, p)) for p in _TARGETS}
        members = list(g.objects(iri, SH + "property"))
        if g.objects(iri, SH + "path"):
            members.append(iri)
        props = tuple(_compile_property(g, m, path) for m in members)
        own_classes = () if g.objects(iri, SH + "path") else tuple(g.objects(iri, SH + "class"))
        shapes.append(NodeShape(iri, targets[SH + "targetSubjectsOf"], targets[SH + "targetClass"],
                                targets[SH + "targetNode"], props, own_classes))
        _refuse_uncompilable(g, iri, f"{path}: shape {iri}")
    if not shapes:
        raise UserError(f"{path}: no targeted SHACL shapes found; add sh:targetSubjectsOf or sh:targetClass")
    return Shapes(path, tuple(shapes))


def _compile_property(g: KnowledgeGraph, node: str, source: Path) -> PropertyConstraint:
    paths = g.objects(node, SH + "path")
    if len(paths) != 1 or paths[0].startswith("_:") or isinstance(paths[0], Literal):
        raise UserError(f"{source}: property shape {node} needs exactly one IRI sh:path (no path expressions)")
    _refuse_uncompilable(g, node, f"{source}: property shape on {paths[0]}")
    counts = g.objects(node, SH + "maxCount")
    return PropertyConstraint(
        path=paths[0],
        max_count=int(counts[0]) if counts else None,
        classes=tuple(g.objects(node, SH + "class")),
        disjoint=tuple(g.objects(node, SH + "disjoint")),
    )


def _refuse_uncompilable(g: KnowledgeGraph, node: str, where: str) -> None:
    """UserError for a component the licenser would silently ignore (its verdicts would then
    disagree with pyshacl's)."""
    for p, _ in g.outgoing(node):
        if p not in _KNOWN:
            raise UserError(f"{where} uses {p}, which the licenser cannot compile; "
                            "use sh:maxCount, sh:class or sh:disjoint")


def validate(graph: KnowledgeGraph, shapes: Shapes, paths: set[str] | None = None) -> list[dict]:
    """Run pyshacl ONCE on the focused subgraph the shapes read; set violating edges aside.

    The subgraph is the triples of the constrained properties (restricted to ``paths`` when
    given) plus rdf:type of every node they touch and the rdfs:subClassOf hierarchy: exactly
    what sh:maxCount/sh:class/sh:disjoint and the targets look at, so the verdicts equal those
    on the whole graph while pyshacl never sees the (irrelevant) bulk of literal triples.
    Each violation's (focus, path) edges are removed from ``graph`` and returned as
    ``{"focus", "path", "value", "message"}``. A violation of a node shape's own sh:class has
    no result path: the focus node is of the wrong class, and what made it a focus is its
    sh:targetSubjectsOf edges, so those are the edges set aside (path None when a shape
    targets by class or node, where no edge can be blamed).
    """
    import pyshacl
    import rdflib

    wanted = read_paths(shapes, paths)
    data = rdflib.Graph()
    touched: set[str] = set()
    for p in wanted:
        for s, _, o in graph.triples(p):
            data.add((_term(s), rdflib.URIRef(p), _term(o)))
            touched.add(s)
            if not isinstance(o, Literal):
                touched.add(o)
    for node in touched:
        for t in graph.types(node):
            data.add((_term(node), rdflib.RDF.type, _term(t)))
    for s, p, o in graph.triples("http://www.w3.org/2000/01/rdf-schema#subClassOf"):
        data.add((_term(s), rdflib.URIRef(p), _term(o)))
    shacl = rdflib.Graph().parse(shapes.path, format="turtle")
    _, report, _ = pyshacl.validate(data, shacl_graph=shacl, inference="none", allow_warnings=True)
    focus_edges = {shape.iri: sorted(shape.target_subjects_of) for shape in shapes.node_shapes}
    violations = []
    for result in report.subjects(rdflib.RDF.type, rdflib.SH.ValidationResult):
        focus = str(report.value(result, rdflib.SH.focusNode))
        result_path = report.value(result, rdflib.SH.resultPath)
        if result_path is not None:
            paths_hit: list[str | None] = [str(result_path)]
        else:
            paths_hit = list(focus_edges.get(str(report.value(result, rdflib.SH.sourceShape)), ())) or [None]
        value = report.value(result, rdflib.SH.value)
        message = (f"{_local(report.value(result, rdflib.SH.sourceConstraintComponent))}: "
                   f"{report.value(result, rdflib.SH.resultMessage)}")
        for path in paths_hit:
            violations.append({"focus": focus, "path": path, "value": None if value is None else str(value),
                               "message": message})
    violations.sort(key=lambda v: (v["focus"], v["path"] or "", v["value"] or ""))
    set_aside(graph, violations)
    return violations


def set_aside(graph: KnowledgeGraph, violations: list[dict]) -> None:
    """Remove each violation's (focus, path) edges, so verdicts start from a valid graph."""
    for v in violations:
        if v["path"] is not None:
            graph.remove(v["focus"], v["path"])


def read_paths(shapes: Shapes, paths: set[str] | None = None) -> set[str]:
    """The properties :func:`validate` reads for ``paths`` (all the shapes' when None), its verdict being a
    function of these alone: two predicates whose constraints compare each other (``sh:disjoint``) read the
    same ones, so a stored verdict keyed by them serves both."""
    return shapes.paths() if paths is None else shapes.paths() & _closure_paths(shapes, paths)


def _closure_paths(shapes: Shapes, paths: set[str]) -> set[str]:
    """``paths`` plus the disjoint partners their constraints compare against."""
    out = set(paths)
    for shape in shapes.node_shapes:
        for c in shape.properties:
            if c.path in paths or set(c.disjoint) & paths:
                out.add(c.path)
                out.update(c.disjoint)
    return out


def _local(term) -> str:
    return str(term).rsplit("#", 1)[-1]


def _term(node: str):
    import rdflib

    if isinstance(node, Literal):
        return rdflib.Literal(str(node))
    if node.startswith("_:"):
        return rdflib.BNode(node[2:])
    return rdflib.URIRef(node)
