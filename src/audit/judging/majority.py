"""The majority rule of a judge panel, for one item (a response, or one fact verdict).

A panel has members (judge models), each asked ``samples`` times (``judge.samples=k``); every
ask is one vote, so each member weighs the same (every member has the same number of samples).
A vote is a label, or ``None`` when that call failed (the gateway gave up or the reply was
unusable).

The rule, and why:

* **Majority of the panel, failures included.** A label wins only with more than half of *all*
  votes, failed ones included. A failed member is never dropped from the panel: dropping it
  would let one judge out of three decide alone once the other two fail (the inspect-ai
  majority grader shrank its panel this way).
* **No winner: disputed or failed.** Without a majority the outcome is

  - ``failed`` when the failed votes are pivotal: had they all gone to the leading label, it
    would have had a majority (so the panel's answer depends on the calls that failed; this
    includes every vote failing). The item has no label; like a single judge's failure it
    leaves the denominator of every rate and is shown as a judge failure.
  - ``disputed`` otherwise: the members who answered disagree so much that no outcome of the
    failed calls could give a majority. "disputed" is a label of its own, counted and shown,
    never broken by the order of the members.

Examples (three members, one sample each): ``A A B`` is A; ``A B C`` is disputed; ``A A fail`` is
A (2 of 3); ``A B fail`` is failed (the failed member would have decided); ``A fail fail`` is failed.
With four votes ``A B C fail`` is disputed (even a fourth A would make 2 of 4, no majority).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DISPUTED = "disputed"
"""The panel label when the members disagree (no label has a majority and failures could not change that)."""
MAJORITY, FAILED = "majority", "failed"
OUTCOMES = (MAJORITY, DISPUTED, FAILED)


@dataclass(frozen=True)
class Failure:
    """One failed vote: which member, which of its samples, and why (the error as recorded)."""

    member: str
    sample: int
    error: str


@dataclass(frozen=True)
class PanelVerdict:
    """The panel's answer for one item and everything needed to show how it was reached.

    ``label`` is the winning label, :data:`DISPUTED`, or ``None`` when the outcome is
    ``failed``. ``counts`` are the successful votes per label; ``votes`` the panel's size in
    votes (members x samples, failed ones included); ``members`` each member's votes in order.
    """

    label: str | None
    outcome: str
    counts: Mapping[str, int]
    votes: int
    failures: tuple[Failure, ...] = ()
    members: Mapping[str, tuple[str | None, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form (for a run's saved files and CSVs)."""
        return {"label": self.label, "outcome": self.outcome, "counts": dict(self.counts), "votes": self.votes,
                "failed": len(self.failures),
                "failures": [{"member": f.member, "sample": f.sample, "error": f.error} for f in self.failures],
                "members": {m: list(v) for m, v in self.members.items()}}


def panel_label(votes: Mapping[str, Sequence[str | None]],
                errors: Mapping[str, Sequence[str | None]] | None = None) -> PanelVerdict:
    """Apply the rule above to ``votes`` (member -> its samples' labels, ``None`` for a failed call).

    ``errors`` (member -> per-sample error text) is optional; a failed vote without one is
    recorded as ``"failed"``. Raises ValueError for an empty panel, members with different
    numbers of samples (their votes would not weigh the same) or a label that is not a
    non-empty string (including the reserved word ``disputed``).
    """
    if not votes:
        raise ValueError("a panel needs at least one member")
    sizes = {member: len(samples) for member, samples in votes.items()}
    if len(set(sizes.values())) != 1 or 0 in sizes.values():
        raise ValueError(f"every member needs the same number of samples (at least 1); got {sizes}")
    counts: Counter[str] = Counter()
    failures: list[Failure] = []
    for member, samples in votes.items():
        for k, vote in enumerate(samples):
            if vote is None:
                why = (errors or {}).get(member, ())
                failures.append(Failure(member, k, str(why[k]) if k < len(why) and why[k] else "failed"))
            elif not isinstance(vote, str) or not vote or vote == DISPUTED:
                raise ValueError(f"member {member!r} sample {k}: a vote is a label or None, got {vote!r}")
            else:
                counts[vote] += 1
    total = sum(sizes.values())
    top = max(counts.values(), default=0)
    winners = [label for label, n in counts.items() if n == top]
    if 2 * top > total:
        label, outcome = winners[0], MAJORITY  # a strict majority is unique
    elif 2 * (top + len(failures)) > total:
        label, outcome = None, FAILED
    else:
        label, outcome = DISPUTED, DISPUTED
    return PanelVerdict(label=label, outcome=outcome, counts=dict(sorted(counts.items())), votes=total,
                        failures=tuple(failures), members={m: tuple(v) for m, v in votes.items()})


def tally(verdicts: Sequence[PanelVerdict]) -> dict[str, Any]:
    """Items per panel label and per outcome over many items: what a summary shows (disputed and
    failed items counted and shown, never hidden)."""
    labels: Counter[str] = Counter(v.label for v in verdicts if v.label is not None)
    outcomes: Counter[str] = Counter(v.outcome for v in verdicts)
    return {"items": len(verdicts), "labels": dict(sorted(labels.items())),
            "outcomes": {o: outcomes.get(o, 0) for o in OUTCOMES},
            "failed_votes": sum(len(v.failures) for v in verdicts)}
