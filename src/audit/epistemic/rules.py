"""Constraints and negations in words: what a card states so that a C label has its grounds
in the context (the ``grounded`` and ``negation`` suites).

A C verdict comes from a SHACL shape (one mouth per river, a mouth is a water body). A card
that only lists facts leaves the shape unsaid, so NO on it measures world knowledge, not
reading. These sentences are generated from the compiled shapes, one per constraint that
bears on the predicate under test, with the wording in ``prompts/card_text.yaml`` (model-facing
text lives in files).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from audit.epistemic.domain import Domain

TEXT_FILE = Path(__file__).resolve().parent / "prompts" / "card_text.yaml"
# The verdict reason's first word for each rule kind (licensing.Licenser writes them).
REASON_PREFIX = {"max_count": "sh:maxCount", "class": "sh:class", "disjoint": "sh:disjoint", "focus_class": "sh:class"}


@dataclass(frozen=True)
class Rule:
    """One constraint on the predicate in words; ``kind`` is max_count, class, disjoint or focus_class."""

    kind: str
    sentence: str


@cache
def card_text() -> dict[str, str]:
    """The sentence templates (read once)."""
    return {str(k): str(v) for k, v in yaml.safe_load(TEXT_FILE.read_text(encoding="utf-8")).items()}


def subject_noun(domain: Domain) -> str:
    """What the predicate's subjects are, in a word: the most specific class (superclasses
    included) that at least 95% of them belong to, so a rule about "a place" is not stated as
    one about "a city" when counties are subjects too."""
    g = domain.graph
    supers = g.superclasses()
    subjects = g.subjects(domain.predicate.iri)
    kinds = Counter(c for s in subjects for c in {sup for t in g.types(s) for sup in supers.get(t, (t,))})
    covering = [(n, c) for c, n in kinds.items() if n >= 0.95 * len(subjects)]
    return domain.label(min(covering)[1]) if covering else "thing"


def rules(domain: Domain) -> list[Rule]:
    """Every constraint of the domain's shapes a claim about its predicate can break, in words,
    in shapes-file order (duplicates dropped): those on the predicate's own path, and a disjointness
    another property's shape declares with it."""
    shapes = domain.shapes
    if shapes is None:
        return []
    text, pred = card_text(), domain.predicate.iri
    label, name = domain.predicate.label, domain.label
    out: list[Rule] = []
    for shape in shapes.node_shapes:
        targeted = pred in shape.target_subjects_of
        noun = name(shape.classes[0]) if shape.classes else subject_noun(domain)
        if targeted:
            out += [Rule("focus_class", text["focus_class"].format(cls=name(c), label=label)) for c in shape.classes]
        for c in shape.properties:
            if c.path == pred:
                if c.max_count == 1:
                    out.append(Rule("max_count", text["max_count_one"].format(noun=noun, label=label)))
                elif c.max_count is not None:
                    out.append(Rule("max_count", text["max_count"].format(noun=noun, label=label, count=c.max_count)))
                out += [Rule("class", text["class"].format(noun=noun, label=label, cls=name(k))) for k in c.classes]
                out += [Rule("disjoint", text["disjoint"].format(noun=noun, label=label, other=name(q)))
                        for q in c.disjoint]
            elif pred in c.disjoint:
                # another property's shape excludes the predicate ("a country does not border the country
                # it lies in"): the licenser reads it for this predicate's claims, so a card must say it too
                out.append(Rule("disjoint", text["disjoint"].format(noun=noun, label=label, other=name(c.path))))
    return list(dict.fromkeys(out))


def negation(domain: Domain, subj: str, obj: str) -> str:
    """The context sentence that rules a claim out: "Beaver Kill is not the mouth of Little River."."""
    return card_text()["negation"].format(obj=domain.label(obj), label=domain.predicate.label, subj=domain.label(subj))
