"""Epistemic KG benchmark: load + validate + 10,000 cards on geography large (1M+ triples),
licensing throughput and peak memory, side by side with naive per-claim approaches.

Naive baselines, measured on the same claims:
- rdflib + SPARQL: three ASK queries per claim (triple present? another value present?
  object of the right class?) on an rdflib graph of the predicate's triples and types;
  rdflib's parse rate of the full file is measured on a prefix and extrapolated.
- pyshacl per claim: validate the focused subgraph plus the claim, once per claim (one claim
  timed; that IS the per-claim cost).

Run (first run builds the graph into the cache, ~45 s; later runs reuse it):

    python bench/bench_epistemic_kg.py [--cache-dir <cache root: $AUDIT_CACHE_DIR or ~/.cache/audit>] [--cards 10000] [--claims 200000]
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import resource
import time
from pathlib import Path

import pyshacl
import rdflib
from omegaconf import OmegaConf

from audit.epistemic.build.geography import GEO, ensure_graph
from audit.epistemic.cards import generate_cards
from audit.epistemic.domain import DATA_DIR, load_domain
from audit.epistemic.graph import RDF_TYPE
from audit.paths import CONF_DIR, cache_root

PRED = "located_in_country"


def peak_gb() -> float:
    """Peak resident memory of this process (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def claims_for(domain, n: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """A mix of true edges, other subjects' objects and open subjects: E, C and U claims."""
    g, p = domain.graph, domain.predicate.iri
    subjects = g.subjects(p)
    objects = list(dict.fromkeys(o for s in subjects[:20000] for o in g.objects(s, p)))
    others = [n for n in g.subjects(RDF_TYPE) if not g.objects(n, p)][:5000] or subjects
    out = []
    for i in range(n):
        kind = i % 3
        s = rng.choice(subjects if kind < 2 else others)
        o = g.objects(s, p)[0] if kind == 0 else rng.choice(objects)
        out.append((s, p, o))
    return out


def throughput(domain, claims) -> tuple[float, dict[str, int]]:
    judge = domain.licenser.judge
    counts = {"E": 0, "C": 0, "U": 0}
    start = time.perf_counter()
    for s, p, o in claims:
        counts[judge(s, p, o).label] += 1
    return len(claims) / (time.perf_counter() - start), counts


def rdflib_focused(domain) -> rdflib.Graph:
    """The predicate's triples plus rdf:type of every node they touch, as rdflib terms."""
    g, p = domain.graph, domain.predicate.iri
    data = rdflib.Graph()
    nodes = set()
    for s, _, o in g.triples(p):
        data.add((rdflib.URIRef(s), rdflib.URIRef(p), rdflib.URIRef(o)))
        nodes.update((s, o))
    for n in nodes:
        for t in g.types(n):
            data.add((rdflib.URIRef(n), rdflib.RDF.type, rdflib.URIRef(t)))
    return data


def sparql_per_claim(data: rdflib.Graph, claims, klass: str) -> float:
    """Seconds per claim for the naive three-ASK licensing on rdflib."""
    q_in = "ASK { ?s ?p ?o }"
    q_other = "ASK { ?s ?p ?x FILTER(?x != ?o) }"
    q_class = "ASK { ?o a ?c }"
    start = time.perf_counter()
    for s, p, o in claims:
        b = {"s": rdflib.URIRef(s), "p": rdflib.URIRef(p), "o": rdflib.URIRef(o), "c": rdflib.URIRef(klass)}
        if not data.query(q_in, initBindings=b).askAnswer:
            data.query(q_other, initBindings=b)
            data.query(q_class, initBindings=b)
    return (time.perf_counter() - start) / len(claims)


def rdflib_parse_rate(path: Path, lines: int = 200_000) -> float:
    """Triples per second rdflib parses (N-Triples prefix of ``lines`` lines)."""
    head = "".join(itertools.islice(path.open(encoding="utf-8"), lines))
    start = time.perf_counter()
    g = rdflib.Graph().parse(data=head, format="nt")
    return len(g) / (time.perf_counter() - start)


def pyshacl_per_claim(data: rdflib.Graph, shapes_path: Path, claim) -> float:
    s, p, o = claim
    data.add((rdflib.URIRef(s), rdflib.URIRef(p), rdflib.URIRef(o)))
    start = time.perf_counter()
    pyshacl.validate(data, shacl_graph=rdflib.Graph().parse(shapes_path), inference="none")
    elapsed = time.perf_counter() - start
    data.remove((rdflib.URIRef(s), rdflib.URIRef(p), rdflib.URIRef(o)))
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=str(cache_root()))
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--claims", type=int, default=200_000)
    parser.add_argument("--sparql-claims", type=int, default=300)
    parser.add_argument("--skip-pyshacl", action="store_true", help="skip the ~1 min pyshacl-per-claim baseline")
    args = parser.parse_args()

    domain_cfg = OmegaConf.load(f"{CONF_DIR}/domain/geography.yaml")
    domain_cfg.scale, domain_cfg.cache_dir = "large", args.cache_dir
    predicate_cfg = OmegaConf.load(f"{CONF_DIR}/predicate/{PRED}.yaml")

    t0 = time.perf_counter()
    path = ensure_graph(domain_cfg)
    t_build = time.perf_counter() - t0
    warm = path.with_name(path.name + ".idx").is_file() and any(path.parent.glob(path.name + ".violations-*"))
    t0 = time.perf_counter()
    domain = load_domain(domain_cfg, predicate_cfg)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    per_type = math.ceil(args.cards / 9)
    cards = generate_cards(domain, num_per_type=per_type, seed=0)
    t_cards = time.perf_counter() - t0
    rng = random.Random(0)
    claims = claims_for(domain, args.claims, rng)
    rate, counts = throughput(domain, claims)
    mem = peak_gb()

    focused = rdflib_focused(domain)
    sample = rng.sample(claims, args.sparql_claims)
    sparql_s = sparql_per_claim(focused, sample, GEO + "Country")
    parse_rate = rdflib_parse_rate(path)
    rdflib_load_s = len(domain.graph) / parse_rate
    shacl_s = None if args.skip_pyshacl else pyshacl_per_claim(focused, DATA_DIR / domain_cfg.shapes, sample[1])

    n = len(domain.graph)
    print(f"\ngeography large: {n:,} triples ({path.name}); predicate {PRED}; "
          f"{len(domain.violations)} violations set aside; build/cache step {t_build:.1f} s; "
          f"{'warm: index snapshot and stored pyshacl result reused' if warm else 'cold: parsed and validated with pyshacl'}")
    print(f"claims judged: {len(claims):,} {counts}; cards: {len(cards):,}\n")
    rows = [
        ("load + validate (s)", f"{t_load:.1f}", f"{rdflib_load_s:.1f} (rdflib parse only, extrapolated)",
         f"{rdflib_load_s / t_load:.1f}x", ""),
        (f"{len(cards):,} cards (s)", f"{t_cards:.1f}", f"{len(cards) * sparql_s:.1f} (SPARQL labels only)",
         f"{len(cards) * sparql_s / t_cards:.1f}x", ""),
        ("load + validate + cards (s)", f"{t_load + t_cards:.1f}", "", "", "< 60"),
        ("licensing (claims/s)", f"{rate:,.0f}", f"{1 / sparql_s:,.0f} (3x SPARQL ASK, rdflib)",
         f"{rate * sparql_s:,.0f}x", ">= 100,000"),
    ]
    if shacl_s is not None:
        rows.append(("", "", f"{1 / shacl_s:.4f} (pyshacl per claim)", f"{rate * shacl_s:,.0f}x", ""))
    rows.append(("peak memory (GB, maxrss)", f"{mem:.2f}", "", "", "< 4"))
    widths = [max(len(r[i]) for r in rows + [("metric", "ours", "naive", "ratio", "target")]) for i in range(5)]
    for r in [("metric", "ours", "naive", "ratio", "target"), *rows]:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
