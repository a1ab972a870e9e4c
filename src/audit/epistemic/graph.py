"""An in-memory, read-mostly triple index tuned for licensing and card generation.

Why not an rdflib Graph: licensing and card sampling need a handful of dict lookups per claim,
and a 1M-triple domain must load in seconds. Parsing goes through pyoxigraph (Rust) and the
triples land in plain dicts of strings; rdflib is used only for the small, focused subgraph
handed to pyshacl (see ``shapes.validate``).

Nodes are plain ``str`` IRIs (blank nodes as ``_:id``); literal objects are :class:`Literal`
(a ``str`` subclass) so the two never compare equal by accident of spelling.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pyoxigraph as ox

from audit.errors import UserError

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDFS_SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"

_FORMATS = {".ttl": ox.RdfFormat.TURTLE, ".nt": ox.RdfFormat.N_TRIPLES}

Triple = tuple[str, str, str]


class Literal(str):
    """A literal value; distinct type so ``"Paris"`` the label never equals an IRI node."""

    __slots__ = ()


def local_name(iri: str) -> str:
    """The last segment of an IRI, a readable fallback when a node has no rdfs:label."""
    tail = iri.rstrip("/")
    for sep in ("#", "/", ":"):
        if sep in tail:
            tail = tail.rsplit(sep, 1)[1]
            break
    return tail


class KnowledgeGraph:
    """Triples indexed by subject (s -> p -> objects) and by object for IRI-valued edges."""

    def __init__(self, triples: Iterable[Triple] = ()) -> None:
        self._out: dict[str, dict[str, list[str]]] = {}
        self._in: dict[str, list[tuple[str, str]]] = {}
        self._subjects_of: dict[str, dict[str, None]] = {}
        self._size = 0
        for s, p, o in triples:
            self.add(s, p, o)

    @classmethod
    def load(cls, path: Path | str) -> KnowledgeGraph:
        """Parse a Turtle (.ttl) or N-Triples (.nt) file; a syntax error names file and line."""
        path = Path(path)
        fmt = _FORMATS.get(path.suffix)
        if fmt is None:
            raise UserError(f"{path}: unsupported graph format {path.suffix!r}; use .ttl or .nt")
        if not path.is_file():
            raise UserError(f"{path}: graph file not found; check the domain config or rebuild it")
        graph = cls()
        try:
            for t in ox.parse(path=str(path), format=fmt):
                o = t.object
                graph.add(_node(t.subject), t.predicate.value, Literal(o.value) if isinstance(o, ox.Literal) else _node(o))
        except SyntaxError as exc:
            raise UserError(f"{path}: RDF syntax error at line {exc.lineno}: {exc.msg}; fix that line") from None
        if not graph:
            raise UserError(f"{path}: the graph is empty (no triples); point the domain at a non-empty graph")
        return graph

    def add(self, s: str, p: str, o: str) -> None:
        """Add one triple (duplicates are ignored, as in RDF set semantics)."""
        objs = self._out.setdefault(s, {}).setdefault(p, [])
        if o in objs and any(type(x) is type(o) and x == o for x in objs):
            return
        objs.append(o)
        self._size += 1
        self._subjects_of.setdefault(p, {})[s] = None
        if not isinstance(o, Literal) and p != RDF_TYPE:
            self._in.setdefault(o, []).append((s, p))

    def remove(self, s: str, p: str) -> list[str]:
        """Remove every (s, p, *) triple and return the removed objects (used to set nodes aside)."""
        objs = self._out.get(s, {}).pop(p, [])
        self._size -= len(objs)
        if objs:
            self._subjects_of[p].pop(s, None)
        for o in objs:
            if not isinstance(o, Literal) and p != RDF_TYPE:
                self._in[o].remove((s, p))
        return objs

    def __len__(self) -> int:
        return self._size

    def __contains__(self, triple: Triple) -> bool:
        s, p, o = triple
        return any(x == o and not isinstance(x, Literal) for x in self._out.get(s, {}).get(p, ()))

    def objects(self, s: str, p: str) -> list[str]:
        """Objects of (s, p, *) in insertion order (empty list when none)."""
        return self._out.get(s, {}).get(p, [])

    def subjects(self, p: str) -> list[str]:
        """Subjects having at least one ``p`` edge, in file order (deterministic sampling)."""
        return list(self._subjects_of.get(p, ()))

    def outgoing(self, s: str) -> Iterator[tuple[str, str]]:
        """(p, o) pairs of every triple with subject ``s``."""
        for p, objs in self._out.get(s, {}).items():
            for o in objs:
                yield p, o

    def incoming(self, o: str) -> list[tuple[str, str]]:
        """(s, p) pairs of IRI-valued, non-type triples pointing at ``o``."""
        return self._in.get(o, [])

    def triples(self, p: str | None = None) -> Iterator[Triple]:
        """Every triple, or every triple with predicate ``p``."""
        if p is not None:
            for s in self._subjects_of.get(p, ()):
                for o in self._out[s][p]:
                    yield s, p, o
            return
        for s, by_pred in self._out.items():
            for pred, objs in by_pred.items():
                for o in objs:
                    yield s, pred, o

    def predicates(self) -> list[str]:
        """Predicates with at least one triple."""
        return [p for p, subs in self._subjects_of.items() if subs]

    def types(self, node: str) -> list[str]:
        """Asserted rdf:type values of ``node`` (no subclass closure; see ``superclasses``)."""
        return self.objects(node, RDF_TYPE)

    def superclasses(self) -> dict[str, frozenset[str]]:
        """Reflexive-transitive rdfs:subClassOf closure, as SHACL's sh:class uses it."""
        direct: dict[str, set[str]] = {}
        for s, _, o in self.triples(RDFS_SUBCLASS):
            direct.setdefault(s, set()).add(o)
        closure: dict[str, frozenset[str]] = {}
        for cls in direct:
            seen, stack = {cls}, [cls]
            while stack:
                for sup in direct.get(stack.pop(), ()):
                    if sup not in seen:
                        seen.add(sup)
                        stack.append(sup)
            closure[cls] = frozenset(seen)
        return closure

    def label(self, iri: str) -> str:
        """rdfs:label of ``iri`` if present, else its local name with underscores as spaces."""
        labels = self.objects(iri, RDFS_LABEL)
        return str(labels[0]) if labels else local_name(iri).replace("_", " ")


def _node(term: ox.NamedNode | ox.BlankNode) -> str:
    return f"_:{term.value}" if isinstance(term, ox.BlankNode) else term.value
