"""Context cards: balanced E/C/U claims with the facts a system sees, labelled by the licenser.

Candidate claims are drawn from the graph (true edges, other subjects' objects, neighbours
of the true object, ...) and each one's label is whatever ``Licenser.judge`` says (the
negation suite's C, decided by the negative fact it puts in the card, is the one exception),
and card text never carries a label marker: what a suite adds (rules, a negative fact) is on
every card of the suite, whatever its label.

Suites:
- ``standard``: facts about the subject (its values for the predicate included, so a
  contradiction is inferable) and the object's type.
- ``distractor``: the same plus true facts about similar subjects (siblings sharing a
  neighbour, and another subject holding the asked-about object), shuffled in.
- ``near_miss``: the asked-about object is plausible: of the true object's class and close
  to it along the domain's parent relations (a sibling river sharing the mouth, a city of
  the same country); the card's ``near`` records the relation. Short rather than far.
- ``grounded``: ``standard`` plus the predicate's shape constraints in words (every card).
- ``negation``: one explicit negative fact per card; C exactly when it negates the claim
  (this label comes from the card's own fact, not from the licenser).
- ``held_out`` / ``nonexistent``: U cards only, on a true fact withheld from the card and
  from the graph every system sees, or on an invented subject (``U_KINDS``).

No card's object is its subject.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

from audit.epistemic.domain import Domain
from audit.epistemic.graph import RDF_TYPE, RDFS_LABEL, RDFS_SUBCLASS, KnowledgeGraph, Literal, local_name
from audit.epistemic.jsonl import read_jsonl
from audit.epistemic.licensing import Verdict
from audit.epistemic.metrics import LABELS
from audit.epistemic.rules import negation, rules
from audit.errors import UserError, unknown_choice
from audit.record.answers import GOLD_OF_LABEL, Card, CardToAnswer, typed

DEFAULT_SUITES = ("standard", "distractor", "near_miss")
# grounded: standard + the predicate's constraints in words; negation: an explicit negative fact;
# held_out and nonexistent: U cards only, of the two other kinds of unknown (U_KINDS).
SUITES = (*DEFAULT_SUITES, "grounded", "negation", "held_out", "nonexistent")
# What a U card's UNKNOWN rests on: open_world (absent from the graph, usually false in the
# world), held_out (true: in the full graph, withheld from the context and from every system's
# view), nonexistent (an invented entity no graph holds).
U_KINDS = ("open_world", "held_out", "nonexistent")
U_ONLY_SUITES = ("held_out", "nonexistent")
INVENTED = "urn:audit:invented#"
GOLD = GOLD_OF_LABEL
MAX_SUBJECT_FACTS = 6

Claim = tuple[str, str]  # (subject, object); the predicate is the domain's
# A claim and, for a near miss, what makes its object near: {"relation": parent|sibling|child|
# grandchild|same class|neighbour, "to": "true object"|"subject", "of": <its label>, "ref": <its IRI>,
# "via": <the parent relation>, "text": the relation in words}
Candidate = tuple[Claim, "dict[str, str] | None"]
Picked = tuple[Claim, Verdict, "dict[str, str] | None"]


@dataclass
class _Pools:
    """Where candidate claims come from, computed once per domain (shared across suites)."""

    domain: Domain
    edges: list[Claim]
    subjects: list[str]
    objects: list[str]
    open_subjects: list[str]      # instances lacking the predicate, similar ones first
    similar_open: int             # how many of open_subjects share a type with the subjects
    foreign: list[str]            # instances sharing no type with the predicate's objects
    object_kinds: set[str] = field(default_factory=set)  # the classes of the predicate's objects
    _near: dict[str, list[str]] = field(default_factory=dict)
    _kin: dict[str, list[str]] = field(default_factory=dict)
    _kids: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, domain: Domain) -> _Pools:
        g, p = domain.graph, domain.predicate.iri
        subjects = g.subjects(p)
        edges = [(s, o) for s in subjects for o in g.nodes(s, p) if o != s]  # a self-loop is never a card
        objects = list(dict.fromkeys(o for _, o in edges))
        subject_types = {t for s in subjects[:2000] for t in g.types(s)}
        instances = [n for n in g.subjects(RDF_TYPE) if not _is_schema(g, n)]
        open_nodes = [n for n in instances if not g.nodes(n, p)]
        similar = [n for n in open_nodes if not subject_types.isdisjoint(g.types(n))]
        rest = [n for n in open_nodes if subject_types.isdisjoint(g.types(n))]
        object_types = {t for o in objects for t in g.types(o)}
        foreign = [n for n in instances if object_types.isdisjoint(g.types(n))]
        return cls(domain, edges, subjects, objects, similar + rest, len(similar), foreign, object_types)

    def open_subject(self, rng: random.Random) -> str | None:
        """A node without the predicate, mostly one of the same kind as its subjects."""
        if not self.open_subjects:
            return None
        if self.similar_open and rng.random() < 0.8:
            return self.open_subjects[rng.randrange(self.similar_open)]
        return rng.choice(self.open_subjects)

    def neighbours(self, node: str) -> list[str]:
        """Nodes one relation edge away (types and labels excluded), memoised."""
        found = self._near.get(node)
        if found is None:
            g = self.domain.graph
            out = [o for p, o in g.outgoing(node) if p not in (RDF_TYPE, RDFS_LABEL) and not isinstance(o, Literal)]
            found = list(dict.fromkeys(out + [s for s, _ in g.incoming(node)]))
            self._near[node] = found
        return found

    def same_kind_neighbours(self, node: str) -> list[str]:
        """Neighbours sharing a type with ``node`` (a sibling river, a bordering country), memoised."""
        found = self._kin.get(node)
        if found is None:
            g = self.domain.graph
            kinds = set(g.types(node))
            found = [n for n in self.neighbours(node) if n != node and kinds.intersection(g.types(n))]
            self._kin[node] = found
        return found

    def children(self, node: str, q: str) -> list[str]:
        """Nodes whose ``q`` is ``node`` (the cities of a country, a mouth's tributaries), memoised:
        a country has ~30k incoming edges, scanned once."""
        found = self._kids.get((node, q))
        if found is None:
            found = [x for x, p in self.domain.graph.incoming(node) if p == q]
            self._kids[(node, q)] = found
        return found

    def near(self, ref: str, kinds: set[str], rng: random.Random) -> list[tuple[str, dict[str, str]]]:
        """Things of one of ``kinds`` close to ``ref``, each with the relation that makes it close.

        Close means along the domain's parent relations (``Domain.parents``): ``ref``'s parent,
        a sibling sharing a parent, a child or grandchild of ``ref``; a ``ref`` with no parent and
        nothing of its kind around it (a continent) has only its class, so any object of that class is as near as it
        gets. A domain without parent relations falls back to same-kind graph neighbours.
        Sampled (``_few``) on big nodes.
        """
        d, g = self.domain, self.domain.graph
        label = d.label

        def fits(x: str) -> bool:
            return x != ref and not kinds.isdisjoint(g.types(x))

        def why(relation: str, via: str, text: str) -> dict[str, str]:
            return {"relation": relation, "of": label(ref), "ref": ref, "via": via, "text": text}

        out: list[tuple[str, dict[str, str]]] = []
        for q in d.parents:
            name = local_name(q)
            for parent in g.nodes(ref, q):
                if isinstance(parent, Literal):
                    continue
                if fits(parent):
                    out.append((parent, why("parent", name, f"{label(ref)} {name} {label(parent)}")))
                out += [(x, why("sibling", name, f"both {name} {label(parent)}"))
                        for x in _few(self.children(parent, q), rng) if fits(x)]
            for child in _few(self.children(ref, q), rng):
                if fits(child):
                    out.append((child, why("child", name, f"{label(child)} {name} {label(ref)}")))
                out += [(x, why("grandchild", name, f"{label(x)} {name} {label(child)}, which {name} {label(ref)}"))
                        for x in _few(self.children(child, q), rng) if fits(x)]
        if not d.parents:
            out = [(x, why("neighbour", "", f"{label(x)} is linked to {label(ref)}"))
                   for x in self.same_kind_neighbours(ref) if fits(x)]
        elif not out and not any(g.nodes(ref, q) for q in d.parents):
            # nothing places ref anywhere (a continent): the same class is as near as it gets
            out = [(x, why("same class", "", f"{label(x)} is of the same class as {label(ref)}"))
                   for x in _few(self.objects, rng) if fits(x)]
        return out

    def near_miss(self, subj: str, rng: random.Random) -> Candidate | None:
        """A plausible wrong object for ``subj`` and why it is near: of the same class as a true
        object and close to it; for a subject without a value, of the predicate's object class
        and close to the subject itself. Never the subject."""
        d = self.domain
        true = d.graph.objects(subj, d.predicate.iri)
        if true:
            ref = rng.choice(true)
            kinds = set(d.graph.types(ref))
        else:
            ref, kinds = subj, self.object_kinds
        found = [(x, why) for x, why in self.near(ref, kinds, rng) if x != subj and x not in true]
        if not found:
            return None
        obj, why = rng.choice(found)
        return (subj, obj), {**why, "to": "true object" if true else "subject"}


def _few(items: list, rng: random.Random, k: int = 20) -> list:
    """At most ``k`` of ``items`` (a sample when longer): a country has 30k incoming edges,
    and scanning them all per card would make 10k cards take minutes."""
    return items if len(items) <= k else rng.sample(items, k)


_SCHEMA_TYPES = ("#Class", "#ObjectProperty", "#DatatypeProperty", "#Property")


def _is_schema(g: KnowledgeGraph, node: str) -> bool:
    """Classes and properties are vocabulary, not things a claim is about."""
    return bool(g.nodes(node, RDFS_SUBCLASS)) or any(t.endswith(_SCHEMA_TYPES) for t in g.types(node))


def generate_cards(domain: Domain, *, num_per_type: int, seed: int,
                   suites: Sequence[str] = DEFAULT_SUITES, dropped: dict[str, int] | None = None) -> list[dict]:
    """``num_per_type`` cards of each label per suite, seeded, no claim twice within a suite;
    ``dropped`` (when given) receives the held-out candidates left out, per :data:`HELD_OUT_DROPS` reason.

    Raises UserError when the graph cannot supply that many distinct claims of a label.
    """
    for suite in suites:
        if suite not in SUITES:
            raise unknown_choice("suite", suite, SUITES)
    if num_per_type < 1:
        raise UserError(f"num_per_type must be at least 1 (got {num_per_type})")
    rng = random.Random(seed)
    pools = _Pools.build(domain)
    cards: list[dict] = []
    stated = [r.sentence for r in rules(domain)]
    # held_out last: it withholds triples from the graph, which must not change other suites' cards
    for suite in sorted(suites, key=lambda name: name == "held_out"):
        if suite in U_ONLY_SUITES:
            made = _held_out(pools, cards, num_per_type, rng, dropped) if suite == "held_out" \
                else _nonexistent(pools, cards, num_per_type, rng)
            for claim, verdict, facts, withheld in made:
                cards.append(_unknown_card(pools, suite, claim, verdict, facts, withheld, len(cards)))
            continue
        buckets = _sample(pools, suite, num_per_type, rng)
        if suite == "negation":
            buckets = _negated(pools, buckets, num_per_type, rng)
        for label in LABELS:
            for (s, o), verdict, near in buckets[label]:
                card = _card(pools, suite, s, o, verdict, rng, len(cards))
                if near is not None and "negation" in near:
                    card["facts"].append(near["negation"])
                    rng.shuffle(card["facts"])
                elif near is not None:
                    card["near"] = near
                if suite == "grounded":
                    card["facts"] += stated
                cards.append(card)
    return cards


Unknown = tuple[Claim, Verdict, list[tuple[str, str, str]], list[list[str]]]  # + facts, withheld triples


def _unknown_card(pools: _Pools, suite: str, claim: Claim, verdict: Verdict, facts: list[tuple[str, str, str]],
                  withheld: list[list[str]], index: int) -> dict:
    d = pools.domain
    s, o = claim
    card = {
        "id": f"CARD_U_{index:06d}",
        "facts": [d.verbalise(*f) for f in facts],
        "question": d.predicate.question.format(subj=d.label(s), obj=d.label(o)),
        "gold": GOLD["U"], "label": "U",
        "claim": {"subj": s, "pred": d.predicate.iri, "obj": o},
        "reason": verdict.reason, "suite": suite, "u_kind": suite,
    }
    if withheld:
        card["withheld"] = withheld
    return card


def _inverse(g: KnowledgeGraph, s: str, o: str) -> list[str]:
    """Predicates of (o, q, s) edges: a held-out fact is withheld in both directions (a river's
    mouth and the mouth's tributary), or a system could read it back."""
    return [q for x, q in g.incoming(s) if x == o]


def withhold(domain: Domain, cards: Sequence[Mapping[str, Any]]) -> int:
    """Remove the held-out triples ``cards`` name from the domain's graph (the view every system
    answers from); idempotent, so reused cards withhold the same facts. Returns how many went."""
    gone = 0
    for card in cards:
        for s, p, o in card.get("withheld") or ():
            gone += domain.graph.discard(s, p, o)
    return gone


HELD_OUT_DROPS = {"name": "the answer is readable from the subject's or object's name",
                  "context": "the fact is stated in another card's context"}
"""Why a held-out candidate is dropped (counted per reason in ``generate_cards(dropped=...)``): on
such a card YES measures reading, not prior knowledge ("Is Columbia County, Oregon in the US state
of Oregon?")."""


def _name_words(text: str) -> str:
    return " ".join("".join(ch if ch.isalnum() else " " for ch in text.casefold()).split())


MIN_NAME = 4
"""Names shorter than this are not looked for inside the other name (an initial, "Ai")."""


def name_gives_away(d: Domain, s: str, o: str) -> bool:
    """True when one name holds the other from a word start: the object's in the subject's ("Mill
    Creek (Uwharrie River tributary)" and "Uwharrie River"; "Columbia County, Oregon" and
    "Oregon"), or the subject's in the object's, also as the stem of a longer word ("Tunis",
    "Tunisia"); or when either name's first word is in the other from a word start ("Jersey City"
    and "New Jersey"), or the two share two words in a row, which catches a name whose disambiguator
    the other lacks ("Camp Branch (Rocky River tributary)" and "Rocky River North Carolina"). Only
    true pairs are held out, so such an overlap is the answer, not a coincidence; a generic word
    shared by chance ("Lake") only drops a card, never keeps a leaking one."""
    a, b = _name_words(d.label(s)), _name_words(d.label(o))
    firsts = [(x.split()[0], y) for x, y in ((b, a), (a, b)) if x]
    if any(len(x) >= MIN_NAME and f" {x}" in f" {y}" for x, y in ((b, a), (a, b), *firsts)):
        return True
    pairs = [set(zip(w, w[1:])) for w in (a.split(), b.split())]
    return bool(pairs[0] & pairs[1])


def _held_out(pools: _Pools, cards: list[dict], n: int, rng: random.Random,
              dropped: dict[str, int] | None = None) -> list[Unknown]:
    """Up to n true triples withheld from the graph and from the card: labelled U by the licenser
    on what is left. An edge qualifies when no card states it (either direction; the held-out cards
    made so far included), neither name gives the answer away (:func:`name_gives_away`), and
    withholding it changes no other card's label (re-judged; else it is put back); one per subject.
    ``dropped`` counts the edges left out for a :data:`HELD_OUT_DROPS` reason."""
    d, g, p = pools.domain, pools.domain.graph, pools.domain.predicate.iri
    judge = d.licenser.judge
    held: set[str] = set()  # one held-out fact per subject
    made = [Card.model_validate(c) for c in cards]
    stated = {f for c in made for f in c.facts}
    by_subject: dict[str, list[Card]] = {}
    for c in made:
        by_subject.setdefault(c.claim_triple()[0], []).append(c)
    out: list[Unknown] = []
    drops = dropped if dropped is not None else {}
    for s, o in rng.sample(pools.edges, len(pools.edges)):
        if len(out) == n:
            break
        if s in held:
            continue
        inverse = _inverse(g, s, o)
        if d.verbalise(s, p, o) in stated or any(d.verbalise(o, q, s) in stated for q in inverse):
            drops["context"] = drops.get("context", 0) + 1
            continue
        if name_gives_away(d, s, o):
            drops["name"] = drops.get("name", 0) + 1
            continue
        g.discard(s, p, o)
        for q in inverse:
            g.discard(o, q, s)
        verdict = judge(s, p, o)
        others = by_subject.get(s, []) + by_subject.get(o, [])
        if verdict.label != "U" or any(judge(*c.claim_triple()).label != c.label
                                       for c in others if c.suite != "negation"):
            g.add(s, p, o)
            for q in inverse:
                g.add(o, q, s)
            continue
        held.add(s)
        reason = f"held out: true in the full graph, withheld from the context and every system's view ({verdict.reason})"
        facts = _subject_facts(d, s) + [(o, RDF_TYPE, t) for t in g.types(o)[:1]]
        stated.update(d.verbalise(*f) for f in facts)  # a later held-out fact must not be stated here
        out.append(((s, o), Verdict("U", reason), facts, [[s, p, o], *([o, q, s] for q in inverse)]))
    return out  # possibly fewer than n: shortfall() says so (every edge other cards state stays)


def _nonexistent(pools: _Pools, cards: list[dict], n: int, rng: random.Random) -> list[Unknown]:
    """n claims about invented subjects (names no node of the graph carries) with a real object."""
    d, g = pools.domain, pools.domain.graph
    taken = {d.label(x).casefold() for x in pools.subjects} | {d.label(x).casefold() for x in pools.objects}
    tails = [w for w in (d.label(x).split()[-1] for x in pools.subjects[:2000]) if w.isalpha() and w[0].isupper()]
    out: list[Unknown] = []
    seen: set[str] = set()
    while len(out) < n:
        stem = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
        name = f"{stem} {rng.choice(tails)}" if tails and rng.random() < 0.7 else stem
        if name.casefold() in taken or name in seen:
            continue
        seen.add(name)
        subj = INVENTED + name.replace(" ", "_")
        assert not g.types(subj) and not any(True for _ in g.outgoing(subj)) and not g.incoming(subj)
        obj = rng.choice(pools.objects)
        verdict = d.licenser.judge(subj, d.predicate.iri, obj)
        reason = f"nonexistent: {name} is an invented name, in no graph ({verdict.reason})"
        out.append(((subj, obj), Verdict("U", reason), [(obj, RDF_TYPE, t) for t in g.types(obj)[:1]], []))
    return out


_SYLLABLES = ("ka", "lo", "ven", "dri", "mar", "tes", "ul", "no", "bra", "sel", "quo", "fi", "ran", "dov", "el", "tor")


def _negated(pools: _Pools, buckets: dict[str, list[Picked]], n: int, rng: random.Random) -> dict[str, list[Picked]]:
    """The negation suite from 2n open-world claims and n true ones: the first n open claims are
    negated in the context (C by that fact, the fact as reason); every other card carries one
    negative fact about another object, so a "not" in the facts is no label marker."""
    d = pools.domain
    negated, others = buckets["U"][:n], buckets["U"][n:]
    out: dict[str, list[Picked]] = {"E": [], "C": [], "U": []}
    for (s, o), _, _ in negated:
        fact = negation(d, s, o)
        out["C"].append(((s, o), Verdict("C", f"negated in context: {fact}"), {"negation": fact}))
    for label, picked in (("E", buckets["E"]), ("U", others)):
        for (s, o), verdict, _ in picked:
            true = set(d.graph.objects(s, d.predicate.iri))
            other = next((x for x in (rng.choice(pools.objects) for _ in range(20)) if x not in true | {s, o}), None)
            out[label].append(((s, o), verdict, None if other is None else {"negation": negation(d, s, other)}))
    return out




def _sample(pools: _Pools, suite: str, n: int, rng: random.Random) -> dict[str, list[Picked]]:
    """Fill the three label buckets from the suite's candidate generators, judging every claim.

    A claim whose object is its subject ("Is X the mouth of X?") is never a card.
    """
    judge = pools.domain.licenser.judge
    pred = pools.domain.predicate.iri
    if len(pools.edges) < n:
        raise UserError(f"domain {pools.domain.name!r} has only {len(pools.edges)} {pools.domain.predicate.name} "
                        f"edges, fewer than num_per_type={n}; lower num_per_type")
    buckets: dict[str, list[Picked]] = {label: [] for label in LABELS}
    seen: set[Claim] = set()
    for claim in rng.sample(pools.edges, n):
        seen.add(claim)
        buckets["E"].append((claim, judge(claim[0], pred, claim[1]), None))
    generators: dict[str, Callable[[], Candidate | None]] = {
        "C": lambda: _contradiction_candidate(pools, suite, rng),
        "U": lambda: _open_candidate(pools, suite, rng),
    }
    # negation: 2n open-world claims (n to negate in context, n left open) and no shape-made C
    targets = {"C": 0, "U": 2 * n} if suite == "negation" else {"C": n, "U": n}
    for wanted, generate in generators.items():
        attempts = 0
        while len(buckets[wanted]) < targets[wanted]:
            attempts += 1
            if attempts > (200 if suite == "near_miss" else 50) * targets[wanted] + 2000:  # near misses are rarer
                if suite == "near_miss":
                    break  # a graph has only so many near misses (see shortfall); never a far one instead
                raise UserError(f"domain {pools.domain.name!r} ({pools.domain.predicate.name}, suite {suite}) "
                                f"yielded only {len(buckets[wanted])} distinct {wanted} claims of "
                                f"num_per_type={n}; lower num_per_type")
            candidate = generate()
            if candidate is None:
                continue
            claim, near = candidate
            if claim in seen or claim[0] == claim[1]:
                continue
            verdict = judge(claim[0], pred, claim[1])
            if verdict.label == "E":
                continue  # E cards come only from the sampled edges, so E stays exactly n
            if len(buckets[verdict.label]) < targets[verdict.label]:
                seen.add(claim)
                buckets[verdict.label].append((claim, verdict, near))
    return buckets


def _contradiction_candidate(pools: _Pools, suite: str, rng: random.Random) -> Candidate | None:
    """Claims likely to be C, of every kind the shapes can refute; the licenser has the last word.

    ``near_miss``: a subject with a value and a near miss (same class as the true object, close
    to it). Otherwise half give a subject with a value another subject's object (a second value),
    a quarter give a subject without a value an object of a foreign class, a quarter one of the
    subject's own neighbours (a tributary as mouth: disjointness).
    """
    if suite == "near_miss":
        return pools.near_miss(rng.choice(pools.subjects), rng)
    roll = rng.random()
    if roll < 0.5 or not pools.open_subjects:
        return (rng.choice(pools.subjects), rng.choice(pools.objects)), None
    subj = pools.open_subject(rng)
    if roll < 0.75:
        return ((subj, rng.choice(pools.foreign)), None) if pools.foreign else None
    near = pools.neighbours(subj)
    return ((subj, rng.choice(near)), None) if near else None


def _open_candidate(pools: _Pools, suite: str, rng: random.Random) -> Candidate | None:
    subj = pools.open_subject(rng)
    if subj is None:
        return None
    if suite == "near_miss":
        return pools.near_miss(subj, rng)
    return (subj, rng.choice(pools.objects)), None


def _card(pools: _Pools, suite: str, s: str, o: str, verdict: Verdict, rng: random.Random, index: int) -> dict:
    d = pools.domain
    p = d.predicate.iri
    facts = _subject_facts(d, s) + [(o, RDF_TYPE, t) for t in d.graph.types(o)[:1]]
    if suite == "distractor":
        facts += _distractor_facts(pools, s, o, rng)
    elif suite == "near_miss":
        facts += [(x, p, o) for x, q in _few(d.graph.incoming(o), rng) if q == p and x != s][:1]
        facts += [(o, q, v) for q, v in d.graph.outgoing(o) if q == p][:1]
    facts = list(dict.fromkeys(facts))
    if suite != "standard":
        rng.shuffle(facts)
    return {
        "id": f"CARD_{verdict.label}_{index:06d}",
        "facts": [d.verbalise(*f) for f in facts],
        "question": d.predicate.question.format(subj=d.label(s), obj=d.label(o)),
        "gold": GOLD[verdict.label],
        "label": verdict.label,
        "claim": {"subj": s, "pred": p, "obj": o},
        "reason": verdict.reason,
        "suite": suite,
    }


def _subject_facts(d: Domain, s: str) -> list[tuple[str, str, str]]:
    """The subject's own values for the predicate first (so C is inferable), then other facts."""
    p = d.predicate.iri
    own = [(s, p, o) for o in d.graph.objects(s, p)]
    rest = [(s, q, o) for q, o in d.graph.outgoing(s) if q not in (p, RDFS_LABEL)]
    return own + rest[: max(0, MAX_SUBJECT_FACTS - len(own))]


def _distractor_facts(pools: _Pools, s: str, o: str, rng: random.Random) -> list[tuple[str, str, str]]:
    """True predicate facts about similar subjects: one holding ``o``, and siblings of ``s``."""
    g, p = pools.domain.graph, pools.domain.predicate.iri
    holders = [x for x, q in _few(g.incoming(o), rng) if q == p and x != s]
    siblings = [x for true in g.nodes(s, p) for x, q in _few(g.incoming(true), rng) if q == p and x != s]
    if not siblings:
        siblings = [rng.choice(pools.subjects) for _ in range(2)]
    picked = holders[:1] + rng.sample(siblings, min(2, len(siblings)))
    return [(x, p, v) for x in dict.fromkeys(picked) if x != s for v in g.objects(x, p)[:1]]


def shortfall(cards: Sequence[Mapping[str, Any]], num_per_type: int, suites: Sequence[str] = ()) -> list[str]:
    """Suites with fewer than ``num_per_type`` cards of a label, in words. Only near_miss and
    held_out can be short: a graph holds only so many same-class near misses (no same-class
    object contradicts a multi-valued predicate such as has_neighbour), and only so many true
    facts no other card states; neither is ever replaced by a far or a stated one."""
    made = [Card.model_validate(c) for c in cards]
    counts = Counter((card.suite, card.label) for card in made)
    suites = dict.fromkeys([*suites, *(str(card.suite) for card in made)])  # a suite with no card at all too
    return [f"{suite}: {counts.get((suite, label), 0)} {label} cards of {num_per_type} (the graph has no more)"
            for suite in suites for label in (("U",) if suite in U_ONLY_SUITES else LABELS)
            if counts.get((suite, label), 0) < num_per_type]


def held_out_drops(dropped: Mapping[str, int], predicate: str) -> list[str]:
    """The held-out candidates ``generate_cards`` left out, per reason, in words ([] when none)."""
    return [f"held_out ({predicate}): dropped {count} candidate(s): {HELD_OUT_DROPS[reason]}"
            for reason, count in sorted(dropped.items()) if count]


def read_cards(path: str | Path) -> list[dict]:
    """Load and check ``cards.jsonl`` (each line a :class:`~audit.record.answers.CardToAnswer` of a
    known suite, no id twice); a bad line is a one-line UserError naming the file, the line, the
    field and the fix."""
    path = Path(path)
    fix = "regenerate with python -m audit.epistemic"
    cards, ids = [], set()
    for n, card in read_jsonl(path, "cards", fix):
        where = f"{path.name} line {n}"
        try:
            checked = typed(CardToAnswer, card, where, context={"suites": SUITES})
        except ValueError as exc:
            raise UserError(f"{exc}; {fix}") from None
        if checked.id in ids:
            raise UserError(f"{where}: duplicate id {checked.id!r}; {fix}")
        ids.add(checked.id)
        cards.append(card)
    if not cards:
        raise UserError(f"{path}: no cards; {fix}")
    return cards
