"""The licenser: E / C / U for a claim (s, p, o) from the graph and its compiled shapes.

E (entailed): the triple is in the graph. C (contradictory): adding the triple would violate
a shape (a second value of a single-valued property, a value of the wrong class, a value shared
with a disjoint property). U (unknown): neither. This is what pyshacl would say about the graph
plus the claim, with one deliberate difference: an object with NO rdf:type at all is U, not C,
because under the open world a missing type is missing knowledge, not a wrong class (pyshacl
flags it). The graph was validated once at load, so only constraints the new triple can
disturb are re-checked, a few dict lookups per claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit.epistemic.graph import RDF_TYPE, KnowledgeGraph, Literal, local_name
from audit.epistemic.shapes import NodeShape, PropertyConstraint, Shapes


@dataclass(frozen=True)
class Verdict:
    """A label and the fact or shape that decided it (shown in reports, never in prompts)."""

    label: str  # "E", "C" or "U"
    reason: str


ENTAILED = Verdict("E", "entailed: triple in KG")
OPEN_WORLD = Verdict("U", "open world: no fact or shape decides")


class Licenser:
    """Judge claims against one graph; construction compiles the shapes' lookups once."""

    def __init__(self, graph: KnowledgeGraph, shapes: Shapes) -> None:
        self._graph = graph
        self._supers = graph.superclasses()
        self._type_memo: dict[str, frozenset[str]] = {}
        relevant: dict[str, list[NodeShape]] = {}
        for shape in shapes.node_shapes:
            triggers = set(shape.target_subjects_of)
            if shape.target_classes:
                triggers.add(RDF_TYPE)
            for c in shape.properties:
                triggers.add(c.path)
                triggers.update(c.disjoint)
            for p in triggers:
                relevant.setdefault(p, []).append(shape)
        self._relevant = relevant

    def judge(self, subj: str, pred: str, obj: str) -> Verdict:
        """E, C or U for the claim (IRIs only; card text is never consulted)."""
        if obj in self._graph.nodes(subj, pred):
            return ENTAILED
        untyped: str | None = None
        for shape in self._relevant.get(pred, ()):
            was_focus = self._is_focus(shape, subj)
            if not (was_focus or pred in shape.target_subjects_of
                    or (pred == RDF_TYPE and self._supers.get(obj, frozenset((obj,))) & shape.target_classes)):
                continue
            if shape.classes and (not was_focus or pred == RDF_TYPE):
                verdict = self._check_focus_class(shape, subj, pred, obj)
                if isinstance(verdict, Verdict):
                    return verdict
                untyped = untyped or verdict
            for c in shape.properties:
                if was_focus and c.path != pred and pred not in c.disjoint:
                    continue  # untouched by the claim and already validated at load
                verdict = self._check(c, subj, pred, obj, only_new=was_focus)
                if isinstance(verdict, Verdict):
                    return verdict
                untyped = untyped or verdict
        if untyped:
            return Verdict("U", f"open world: {self._name(untyped)} has no type, so no sh:class can refute it")
        return OPEN_WORLD

    def _check(self, c: PropertyConstraint, s: str, p: str, o: str, *, only_new: bool) -> Verdict | str | None:
        """A C verdict, or the name of an untyped value (U note), or None when satisfied."""
        g = self._graph
        old = g.objects(s, c.path)  # distinct (the graph is a set) and without o (else E)
        adds = c.path == p
        if c.max_count is not None and len(old) + adds > c.max_count:
            has = ", ".join(self._name(v) for v in old)
            return Verdict("C", f"sh:maxCount {c.max_count} on {local_name(c.path)}: {self._name(s)} already has {has}")
        values = [*old, o] if adds else old
        for q in c.disjoint:
            others = [*g.objects(s, q), o] if q == p else g.objects(s, q)
            shared = set(values).intersection(others)
            if shared:
                v = self._name(sorted(shared)[0])
                return Verdict("C", f"sh:disjoint {local_name(c.path)} / {local_name(q)}: "
                                    f"{self._name(s)} has {v} as both")
        untyped = None
        to_check = ([o] if c.path == p else []) if only_new else values
        for v in to_check if c.classes else ():
            classes = self._classes(v)
            if not classes and not isinstance(v, Literal):
                untyped = v
                continue
            for cls in c.classes:
                if cls not in classes:
                    kinds = ", ".join(sorted(local_name(t) for t in g.types(v))) or "literal"
                    return Verdict("C", f"sh:class {local_name(cls)} on {local_name(c.path)}: "
                                        f"{self._name(v)} is a {kinds}")
        return untyped

    def _check_focus_class(self, shape: NodeShape, s: str, p: str, o: str) -> Verdict | str | None:
        """The claim makes ``s`` a focus node (or retypes it): is ``s`` of the shape's class?"""
        classes = self._classes(s)
        if p == RDF_TYPE:
            classes = classes | self._supers.get(o, frozenset((o,)))
        if not classes:
            return s
        for cls in shape.classes:
            if cls not in classes:
                kinds = ", ".join(sorted(local_name(t) for t in self._graph.types(s)))
                return Verdict("C", f"sh:class {local_name(cls)} on {local_name(shape.iri)} subjects: "
                                    f"{self._name(s)} is a {kinds}")
        return None

    def _is_focus(self, shape: NodeShape, s: str) -> bool:
        nodes = self._graph.nodes
        for q in shape.target_subjects_of:
            if nodes(s, q):
                return True
        return s in shape.target_nodes or bool(shape.target_classes and self._classes(s) & shape.target_classes)

    def _classes(self, node: str) -> frozenset[str]:
        """Types of ``node`` closed under rdfs:subClassOf (memoised: types never change after load)."""
        found = self._type_memo.get(node)
        if found is None:
            found = frozenset(sup for t in self._graph.types(node) for sup in self._supers.get(t, (t,)))
            self._type_memo[node] = found
        return found

    def _name(self, node: str) -> str:
        return str(node) if isinstance(node, Literal) else self._graph.label(node)
