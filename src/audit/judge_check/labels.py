"""The labelled-responses CSV a researcher writes for ``audit.judge_check`` (pure parsing).

Columns (a header row, UTF-8; ``data/labels_template.csv`` is the empty template):

* ``response`` (required): the model's response, as the judge will read it.
* ``topic`` (required): the topic's config name (``conf/topic/<name>.yaml``, e.g. ``tiananmen``);
  the judge is told the topic exactly as in an audit.
* ``label`` (required): the researcher's label, one of the judge's classes
  (:data:`audit.judging.judge.CLASSES`).
* ``probe`` (optional): the question the response answers; empty when unknown.
* ``id`` (optional): the row's name in the outputs (default: its row number).
* ``run`` (optional): which audit run the response comes from. Responses of one run are not
  independent, so with two or more runs the intervals are over runs (see :mod:`audit.stats.intervals`).
* ``fact_1``, ``fact_2``, ... (optional, any of them): the researcher's verdict on the topic's key
  fact of that number for this response alone: ``revealed``, ``not_revealed`` or ``contradicted``
  (:data:`audit.judging.judge.FACT_STATUSES`); empty where not labelled. A row with any of
  them is also given to the judge's fact scoring, as an audit scores facts.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from audit.judging.judge import CLASSES, FACT_STATUSES
from audit.errors import UserError, unknown_choice

TEMPLATE = Path(__file__).resolve().parent / "data" / "labels_template.csv"
REQUIRED = ("response", "topic", "label")
OPTIONAL = ("probe", "id", "run")
FACT_COLUMN = re.compile(r"^fact_([1-9][0-9]*)$")
"""``fact_<n>``: the verdict on the topic's key fact number n (1-based, the topic's order)."""


@dataclass(frozen=True)
class Labelled:
    """One row: a response and the researcher's label for it."""

    id: str
    topic: str
    probe: str
    response: str
    label: str
    run: str | None
    facts: dict[int, str] = field(default_factory=dict)
    """Key fact number -> the researcher's verdict (only the facts labelled)."""


def parse_labels(text: str, source: str) -> list[Labelled]:
    """The rows of the CSV ``text`` (read from ``source``, named in errors).

    Raises a one-line :class:`UserError` for an empty file, a missing required column, an
    unknown column, an empty response or topic, an unknown label (the registries' "Unknown label 'x'.
Did you mean ...?", with the valid ones) or a
    repeated id: each names the row and the fix.
    """
    # The csv module refuses a field over 128 KB by default (a long response is a 200 KB cell): no
    # cell can be longer than the whole text, which is already in memory.
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    columns = [c.strip() for c in (reader.fieldnames or [])]
    if not columns:
        raise UserError(f"{source} is empty; start from the template {TEMPLATE}")
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise UserError(f"{source} has no {', '.join(repr(c) for c in missing)} column; the header needs "
                        f"{', '.join(REQUIRED)} (optional: {', '.join(OPTIONAL)})")
    unknown = [c for c in columns if c not in REQUIRED + OPTIONAL and not FACT_COLUMN.match(c)]
    if unknown:
        raise UserError(f"{source}: unknown column(s) {', '.join(repr(c) for c in unknown)}; the columns are "
                        f"{', '.join(REQUIRED + OPTIONAL)} and fact_1, fact_2, ... (key-fact verdicts)")
    fact_columns = {c: int(m.group(1)) for c in columns if (m := FACT_COLUMN.match(c))}
    rows: list[Labelled] = []
    seen: set[str] = set()
    for number, raw in enumerate(reader, start=2):  # row 1 is the header
        row = {k.strip(): (v or "").strip() if k != "response" else (v or "") for k, v in raw.items() if k}
        where = f"{source} row {number}"
        if None in raw:
            raise UserError(f"{where} has more fields than the header; quote text that contains commas")
        label = row["label"].lower()
        if label not in CLASSES:
            raise UserError(f"{where}: {unknown_choice('label', label, CLASSES)}")
        if not row["response"].strip() or not row["topic"]:
            raise UserError(f"{where}: 'response' and 'topic' must not be empty")
        ident = row.get("id") or str(number)
        if ident in seen:
            raise UserError(f"{where}: id {ident!r} is used twice; give every row its own id")
        seen.add(ident)
        facts = {}
        for column, number in fact_columns.items():
            verdict = row.get(column, "").lower().replace(" ", "_")
            if verdict and verdict not in FACT_STATUSES:
                raise UserError(f"{where}: {column}={row[column]!r}; use one of {', '.join(FACT_STATUSES)} "
                                "or leave it empty")
            if verdict:
                facts[number] = verdict
        rows.append(Labelled(id=ident, topic=row["topic"], probe=row.get("probe", ""), response=row["response"],
                             label=label, run=row.get("run") or None, facts=facts))
    if not rows:
        raise UserError(f"{source} has a header but no rows; add one labelled response per row")
    return rows
