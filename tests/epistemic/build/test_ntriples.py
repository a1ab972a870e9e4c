"""N-Triples terms: the characters the format forbids are escaped, and a parser reads the value back."""

from __future__ import annotations

import rdflib

from audit.epistemic.build.ntriples import iri, line, literal


def test_forbidden_characters_are_escaped_and_read_back_unchanged():
    subject = 'https://x.org/a b"c\\d<e>{f}|g^h`i'
    text = 'say "hi" \\ then\nnext\r'
    statement = line(subject, "https://x.org/p", literal(text))
    assert statement.count("\n") == 1 and " b" not in statement  # one line; nothing left raw
    ((s, _, o),) = rdflib.Graph().parse(data=statement, format="nt")
    assert (str(s), str(o)) == (subject, text)


def test_plain_names_pass_as_they_are():
    assert iri("https://sws.geonames.org/2988507/") == "<https://sws.geonames.org/2988507/>"
    assert literal("Paris") == '"Paris"' and literal(3) == '"3"^^<http://www.w3.org/2001/XMLSchema#integer>'
