"""The judge's response labels, read from their one definition, ``judging/labels.yaml`` beside this module.

A label is data: its name, the definition the judge is shown, the definition a reader is shown, its
colour in the report, and the words a judge writes for it. Everything that names labels reads them
here: the judge's instructions (:func:`judge_definitions`, filled into
``judging/prompts/judge_classify_system.txt``), the reply's JSON Schema enum and its validator
(:mod:`audit.judging.judge`), the counts and shares (:mod:`audit.judging.counting`), the pages'
glossary and the audit report's swatches. Adding a label is one entry in that file (and its
definition in ``docs/numbers.md``), so the schema sent, the validator and the counts cannot disagree.
The module sits in the base floor, beside the epistemic rates table, because the glossary every page
carries (:mod:`audit.pages.glossary`) names the labels too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from audit.errors import UserError
from audit.io.safe_read import parse_yaml, read_text

LABELS_FILE = Path(__file__).with_suffix(".yaml")
_FIELDS = ("name", "judge", "glossary", "colour")


@dataclass(frozen=True)
class Label:
    """One response label (see ``judging/labels.yaml`` for what each field is for)."""

    name: str
    judge: str
    glossary: str
    colour: str
    aliases: tuple[str, ...] = ()
    headline: str | None = None
    """Its share is a headline figure (the comparison's map and gap columns, the benchmark's cells and
    gaps), named so for a reader ("refusal" -> "refusal share", "refusal gap"); None: not one."""

    @property
    def metric(self) -> str:
        """The headline share's name in the benchmark's tables (its reader's name, ``-`` as ``_``)."""
        return (self.headline or self.name).replace("-", "_")


def parse_labels(data: object, where: str | Path) -> tuple[Label, ...]:
    """The labels of a parsed ``judging/labels.yaml``; a malformed entry is one line naming it and the fix."""
    if not isinstance(data, list) or not data:
        raise UserError(f"{where}: expected a list of labels, each with {', '.join(_FIELDS)}")
    labels: list[Label] = []
    for k, entry in enumerate(data):
        name = entry.get("name") if isinstance(entry, dict) else None
        here = f"{where}: label {name or k + 1}"
        missing = [f for f in _FIELDS if not isinstance(entry, dict) or not isinstance(entry.get(f), str)
                   or not entry[f].strip()]
        if missing:
            raise UserError(f"{here} needs a non-empty {', '.join(missing)}")
        aliases = entry.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise UserError(f"{here}: aliases must be a list of words, e.g. aliases: [refusal]")
        if name in {x.name for x in labels} | {a for x in labels for a in x.aliases}:
            raise UserError(f"{here} is named twice; give each label one entry")
        headline = entry.get("headline")
        if headline is not None and not (isinstance(headline, str) and re.fullmatch(r"[a-z][a-z -]*", headline)):
            raise UserError(f"{here}: headline must name its share in lower-case words, e.g. headline: refusal")
        labels.append(Label(name, entry["judge"].strip(), entry["glossary"].strip(), entry["colour"], tuple(aliases),
                            headline))
    return tuple(labels)


@cache
def labels() -> tuple[Label, ...]:
    """The shipped labels, in the order the judge is shown them (read once)."""
    return parse_labels(parse_yaml(read_text(LABELS_FILE), LABELS_FILE), LABELS_FILE)


def names() -> tuple[str, ...]:
    """The label names, in order: the judge's classes."""
    return tuple(label.name for label in labels())


def headlines() -> tuple[Label, ...]:
    """The labels whose shares are headline figures (``headline:`` in the file), in the file's order."""
    return tuple(label for label in labels() if label.headline is not None)


def lead() -> Label:
    """The first headline label: the share the comparison's heatmap colours, whose spread over runs and
    language gap it shows, that two judgings are set side by side on and the benchmark's category rows
    and the run index show."""
    if not headlines():
        raise UserError(f"{LABELS_FILE}: no label has a headline; mark the share that leads, e.g. headline: refusal")
    return headlines()[0]


def aliases() -> dict[str, str]:
    """Word a judge may write -> the label it means (the names themselves excluded)."""
    return {alias: label.name for label in labels() for alias in label.aliases}


def judge_definitions() -> str:
    """The judge's list of definitions, one ``- name: definition`` line per label."""
    return "\n".join(f"- {label.name}: {label.judge}" for label in labels())


def judge_choices() -> str:
    """The labels as the reply template in the judge's instructions spells them (``a|b|c``)."""
    return "|".join(names())
