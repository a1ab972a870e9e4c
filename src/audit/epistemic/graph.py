"""An in-memory, read-mostly triple index tuned for licensing and card generation.

Why not an rdflib Graph: licensing and card sampling need a handful of dict lookups per claim,
and a 1M-triple domain must load in seconds. Parsing goes through pyoxigraph (Rust) and the
triples land in plain dicts of strings; rdflib is used only for the small, focused subgraph
handed to pyshacl (see ``shapes.validate``). A graph built into a cache can also be saved as
a ``marshal`` snapshot of those dicts (core types only, no code execution on load), which
loads several times faster than re-parsing.

Nodes are plain ``str`` IRIs (blank nodes as ``_:id``). Literal values are stored apart from
node-valued edges and handed out as :class:`Literal` (a ``str`` subclass), so a literal
"Paris" never equals an IRI by accident of spelling.
"""

from __future__ import annotations

import gc
import marshal
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyoxigraph as ox

from audit.errors import UserError
from audit.io.atomic import atomic_open

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
RDFS_SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"

_FORMATS = {".ttl": ox.RdfFormat.TURTLE, ".nt": ox.RdfFormat.N_TRIPLES}
_SNAPSHOT_VERSION = 1
_NONE: dict = {}  # shared empty mapping for lookups of absent subjects (never mutated)

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


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while millions of acyclic containers are created: its repeated
    full scans otherwise double the load time of a 1M-triple graph."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class KnowledgeGraph:
    """Node-valued triples indexed by subject (s -> p -> objects) and by object; literal
    values by subject (s -> p -> values)."""

    def __init__(self, triples: Iterable[Triple] = ()) -> None:
        self._out: dict[str, dict[str, list[str]]] = {}
        self._lit: dict[str, dict[str, list[str]]] = {}
        self._in: dict[str, list[tuple[str, str]]] = {}
        self._subjects_of: dict[str, dict[str, None]] = {}
        self._size = 0
        for s, p, o in triples:
            self.add(s, p, o)

    @classmethod
    def load(cls, path: Path | str, *, snapshot: bool = False) -> KnowledgeGraph:
        """Parse a Turtle (.ttl) or N-Triples (.nt) file; a syntax error names file and line.

        ``snapshot=True`` (for machine-built cache files) reuses ``<path>.idx`` when it is
        newer than ``path``, and writes it after a parse otherwise.
        """
        path = Path(path)
        fmt = _FORMATS.get(path.suffix)
        if fmt is None:
            raise UserError(f"{path}: unsupported graph format {path.suffix!r}; use .ttl or .nt")
        if not path.is_file():
            raise UserError(f"{path}: graph file not found; check the domain config or rebuild it")
        idx = path.with_name(path.name + ".idx")
        with _gc_paused():
            if snapshot and idx.is_file() and idx.stat().st_mtime >= path.stat().st_mtime:
                graph = cls._from_snapshot(idx)
                if graph is not None:
                    return graph
            graph = cls()
            try:
                # lenient (no IRI re-validation) only for N-Triples, the format our builders cache
                graph._bulk_add(ox.parse(path=str(path), format=fmt, lenient=fmt == ox.RdfFormat.N_TRIPLES))
            except SyntaxError as exc:
                raise UserError(f"{path}: RDF syntax error at line {exc.lineno}: {exc.msg}; fix that line") from None
        if not graph:
            raise UserError(f"{path}: the graph is empty (no triples); point the domain at a non-empty graph")
        if snapshot:
            graph._write_snapshot(idx)
        return graph

    @classmethod
    def _from_snapshot(cls, idx: Path) -> KnowledgeGraph | None:
        """The saved index, or None when it is from another snapshot version or unreadable."""
        try:
            version, out, lit, incoming, subjects_of, size = marshal.loads(idx.read_bytes())
        except (ValueError, EOFError, TypeError):
            return None
        if version != _SNAPSHOT_VERSION:
            return None
        graph = cls()
        graph._out, graph._lit, graph._in, graph._subjects_of, graph._size = out, lit, incoming, subjects_of, size
        return graph

    def _write_snapshot(self, idx: Path) -> None:
        data = marshal.dumps((_SNAPSHOT_VERSION, self._out, self._lit, self._in, self._subjects_of, self._size))
        with atomic_open(idx, "wb") as handle:
            handle.write(data)

    def _bulk_add(self, parsed: Iterable[ox.Triple]) -> None:
        """``add`` for a parser's stream, inlined and with shared predicate/class strings,
        because attribute access on parsed terms dominates loading a 1M-triple graph."""
        out, lits, incoming, subjects_of = self._out, self._lit, self._in, self._subjects_of
        shared: dict[str, str] = {}
        named, lit = ox.NamedNode, ox.Literal
        size = 0
        for t in parsed:
            subj, obj = t.subject, t.object
            s = subj.value if type(subj) is named else f"_:{subj.value}"
            p = t.predicate.value
            p = shared.setdefault(p, p)
            is_lit = type(obj) is lit
            if is_lit:
                o = obj.value
                index = lits
            else:
                o = obj.value if type(obj) is named else f"_:{obj.value}"
                if p == RDF_TYPE:
                    o = shared.setdefault(o, o)
                index = out
            by_pred = index.get(s)
            if by_pred is None:
                by_pred = index[s] = {}
            objs = by_pred.get(p)
            if objs is None:
                by_pred[p] = [o]
            elif o in objs:
                continue
            else:
                objs.append(o)
            size += 1
            subs = subjects_of.get(p)
            if subs is None:
                subs = subjects_of[p] = {}
            subs[s] = None
            if not is_lit and p != RDF_TYPE:
                back = incoming.get(o)
                if back is None:
                    incoming[o] = [(s, p)]
                else:
                    back.append((s, p))
        self._size += size

    def add(self, s: str, p: str, o: str) -> None:
        """Add one triple (a :class:`Literal` ``o`` is a value); duplicates are ignored."""
        is_lit = isinstance(o, Literal)
        objs = (self._lit if is_lit else self._out).setdefault(s, {}).setdefault(p, [])
        if str(o) in objs:
            return
        objs.append(str(o))
        self._size += 1
        self._subjects_of.setdefault(p, {})[s] = None
        if not is_lit and p != RDF_TYPE:
            self._in.setdefault(o, []).append((s, p))

    def remove(self, s: str, p: str) -> list[str]:
        """Remove every node-valued (s, p, *) triple and return the objects (sets edges aside)."""
        objs = self._out.get(s, {}).pop(p, [])
        self._size -= len(objs)
        if objs and not self._lit.get(s, {}).get(p):
            self._subjects_of[p].pop(s, None)
        if p != RDF_TYPE:
            for o in objs:
                self._in[o].remove((s, p))
        return objs

    def discard(self, s: str, p: str, o: str) -> bool:
        """Remove one node-valued triple if present (held-out facts); True when it was there."""
        objs = self._out.get(s, {}).get(p)
        if not objs or o not in objs:
            return False
        objs.remove(o)
        self._size -= 1
        if not objs:
            del self._out[s][p]
            if not self._lit.get(s, {}).get(p):
                self._subjects_of[p].pop(s, None)
        if p != RDF_TYPE:
            self._in[o].remove((s, p))
        return True

    def __len__(self) -> int:
        return self._size

    def __contains__(self, triple: Triple) -> bool:
        s, p, o = triple
        return not isinstance(o, Literal) and o in self._out.get(s, _NONE).get(p, ())

    def objects(self, s: str, p: str) -> list[str]:
        """Node objects of (s, p, *) then literal values (as :class:`Literal`), in file order."""
        nodes = self._out.get(s, _NONE).get(p, [])
        values = self._lit.get(s, _NONE).get(p)
        return nodes + [Literal(v) for v in values] if values else nodes

    def nodes(self, s: str, p: str) -> list[str] | tuple[()]:
        """Node objects only (no literals): the hot lookup of licensing. Do not mutate."""
        return self._out.get(s, _NONE).get(p, ())

    def subjects(self, p: str) -> list[str]:
        """Subjects having at least one ``p`` triple, in file order (deterministic sampling)."""
        return list(self._subjects_of.get(p, ()))

    def outgoing(self, s: str) -> Iterator[tuple[str, str]]:
        """(p, o) pairs of every triple with subject ``s``: nodes first, then literal values."""
        for p, objs in self._out.get(s, {}).items():
            for o in objs:
                yield p, o
        for p, values in self._lit.get(s, {}).items():
            for v in values:
                yield p, Literal(v)

    def incoming(self, o: str) -> list[tuple[str, str]]:
        """(s, p) pairs of node-valued, non-type triples pointing at ``o``."""
        return self._in.get(o, [])

    def triples(self, p: str | None = None) -> Iterator[Triple]:
        """Every triple, or every triple with predicate ``p``."""
        subjects = self._subjects_of.get(p, ()) if p is not None else dict.fromkeys([*self._out, *self._lit])
        for s in subjects:
            for pred, o in self.outgoing(s):
                if p is None or pred == p:
                    yield s, pred, o

    def types(self, node: str) -> list[str]:
        """Asserted rdf:type values of ``node`` (no subclass closure; see ``superclasses``)."""
        return self._out.get(node, _NONE).get(RDF_TYPE, [])

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
        labels = self._lit.get(iri, _NONE).get(RDFS_LABEL)
        return labels[0] if labels else local_name(iri).replace("_", " ")
