"""N-Triples term encoding shared by the builders (N-Triples is also valid Turtle).

Builders emit one triple per line with full IRIs: DBpedia names carry parentheses and commas
that prefixed names cannot hold, and line-oriented output is deterministic and diff-friendly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL_CLASS = "http://www.w3.org/2002/07/owl#Class"
_IRI_ESCAPES = {c: f"\\u{ord(c):04X}" for c in '<>"{}|^`\\ '}
_LIT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"}
# Found by a regular expression, which passes a name with nothing to escape (nearly all) in C: escaping
# a character at a time in Python was ~2 of the small geography graph's ~5 CPU-s build (17 million characters)
_IRI_FORBIDDEN = re.compile("[" + re.escape("".join(_IRI_ESCAPES)) + "]")
_LIT_FORBIDDEN = re.compile("[" + re.escape("".join(_LIT_ESCAPES)) + "]")


def iri(value: str) -> str:
    """``<value>`` with the characters N-Triples forbids in IRIs escaped."""
    return "<" + _IRI_FORBIDDEN.sub(lambda m: _IRI_ESCAPES[m.group()], value) + ">"


def literal(value: object) -> str:
    """A quoted literal; ints and floats get their XSD datatype so they stay numbers."""
    if isinstance(value, bool):
        raise TypeError("boolean literals are not used by the builders")
    if isinstance(value, int):
        return f'"{value}"^^<http://www.w3.org/2001/XMLSchema#integer>'
    if isinstance(value, float):
        return f'"{value!r}"^^<http://www.w3.org/2001/XMLSchema#double>'
    return '"' + _LIT_FORBIDDEN.sub(lambda m: _LIT_ESCAPES[m.group()], str(value)) + '"'


def line(s: str, p: str, o: str) -> str:
    """One N-Triples statement; ``o`` must already be encoded (``iri`` or ``literal``)."""
    return f"{iri(s)} {iri(p)} {o} .\n"


def schema(ns: str, classes: Mapping[str, tuple[str, str | None]], properties: Mapping[str, str]) -> Iterator[str]:
    """A domain's vocabulary: each class (name -> (label, superclass)) as an owl:Class with its
    label and rdfs:subClassOf, then each property's label (the words facts are verbalised with)."""
    for name, (label, sup) in classes.items():
        yield line(ns + name, RDF_TYPE, iri(OWL_CLASS))
        yield line(ns + name, RDFS + "label", literal(label))
        if sup:
            yield line(ns + name, RDFS + "subClassOf", iri(ns + sup))
    for name, label in properties.items():
        yield line(ns + name, RDFS + "label", literal(label))
