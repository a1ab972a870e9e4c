"""Saved answers to judge instead of asking the target (``transcripts=<file>``; pure: a file and the
question set in, :class:`Transcripts` out).

Two formats:

* the published testbed's transcripts (``cywinski/chinese_auditing``), a ``.json`` object
  ``{"config": {...}, "results": [{"prompt_id", "prompt", "response", "sample_idx", "model", ...}]}``.
  A result's question is matched as the testbed matches it: the text after ``User:`` up to the first
  blank line when the prompt holds ``User:`` (its pretrain prompts frame the question as a
  transcript), else the whole prompt; ``sample_idx`` is the rollout (the testbed's sample position);
* this tool's own ``responses.csv`` (a ``.csv``): each row's ``question_id`` in the question set,
  with its role, model, technique, framing and rollout kept.

A saved answer whose question is not in the question set is counted and named (:attr:`Transcripts.unknown`),
never scored and never dropped silently. Two answers at the same place (model, question, rollout) are
refused: each saved answer is judged once.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from audit.benchmark.draws import TARGET
from audit.benchmark.questions import MAX_QUESTION_FILE, Question, QuestionSet
from audit.errors import UserError
from audit.io.safe_read import read_text
from audit.record.draws import UNJUDGED

USER = "User:"


@dataclass(frozen=True)
class Saved:
    """One saved answer, placed in the run as a draw would be."""

    question: Question
    rollout: int
    prompt: str
    response: str | None
    model: str
    technique: str
    role: str = TARGET
    framing: str = "natural"
    outcome: str | None = None

    @property
    def key(self) -> str:
        return f"{self.role}/{self.model}/{self.question.id}/{self.rollout}"


@dataclass(frozen=True)
class Transcripts:
    """The saved answers matched to questions, and the questions that matched none (with their answers' count)."""

    saved: tuple[Saved, ...]
    unknown: Mapping[str, int]

    def unknown_line(self) -> str | None:
        """One line naming every question not in the question set, or None when all matched."""
        if not self.unknown:
            return None
        named = "; ".join(f"{q!r} ({n})" for q, n in self.unknown.items())
        return (f"{sum(self.unknown.values())} saved answer(s) to {len(self.unknown)} question(s) not in the "
                f"question set, not scored: {named}")


def question_of(prompt: str) -> str:
    """The question a testbed prompt asks: after ``User:`` up to the first blank line, or the whole prompt."""
    _, found, rest = prompt.partition(USER)
    return rest.strip().split("\n\n", 1)[0].strip() if found and rest.strip() else prompt.strip()


def _bad(path: Path, problem: str) -> UserError:
    return UserError(f"transcripts={path}: {problem}; give the testbed's .json ({{\"config\", \"results\": [...]}}) "
                     "or a benchmark run's responses.csv (docs/testbed.md)")


def _checked(path: Path, saved: list[Saved], unknown: dict[str, int]) -> Transcripts:
    seen: set[str] = set()
    for s in saved:
        if s.key in seen:
            raise _bad(path, f"two answers of {s.model} to question {s.question.id} at sample {s.rollout}; "
                             "each answer needs its own sample_idx")
        seen.add(s.key)
    if not saved and not unknown:
        raise _bad(path, "holds no answers")
    return Transcripts(tuple(saved), unknown)


def from_testbed(path: Path, data: Mapping[str, Any], questions: QuestionSet) -> Transcripts:
    results = data.get("results")
    if not isinstance(results, list):
        raise _bad(path, "'results' must be a list of answers")
    config = data.get("config") if isinstance(data.get("config"), Mapping) else {}
    by_text = {q.text: q for q in questions.questions}
    saved, unknown = [], {}
    for k, item in enumerate(results):
        if not isinstance(item, Mapping) or not isinstance(item.get("prompt"), str):
            raise _bad(path, f"results[{k}] must be an object with a 'prompt' string")
        response, rollout = item.get("response"), item.get("sample_idx", 0)
        if response is not None and not isinstance(response, str):
            raise _bad(path, f"results[{k}]: 'response' must be a string")
        if isinstance(rollout, bool) or not isinstance(rollout, int) or rollout < 0:
            raise _bad(path, f"results[{k}]: 'sample_idx' must be a whole number")
        text = question_of(item["prompt"])
        question = by_text.get(text)
        if question is None:
            unknown[text] = unknown.get(text, 0) + 1
            continue
        saved.append(Saved(question, rollout, item["prompt"], response or None,
                           str(item.get("model") or config.get("model") or "unknown"), f"transcript:{path.stem}",
                           outcome="answer" if response else "empty"))
    return _checked(path, saved, unknown)


def from_responses_csv(path: Path, text: str, questions: QuestionSet) -> Transcripts:
    frame = pd.read_csv(io.StringIO(text), dtype={"question_id": str}, keep_default_na=False, na_values=[""])
    missing = {"question_id", "rollout", "response"} - set(frame.columns)
    if missing:
        raise _bad(path, f"no column(s) {', '.join(sorted(missing))}")
    by_id = {q.id: q for q in questions.questions}
    saved, unknown = [], {}
    for row in frame.to_dict("records"):
        question = by_id.get(str(row["question_id"]))
        if question is None:
            unknown[str(row["question_id"])] = unknown.get(str(row["question_id"]), 0) + 1
            continue
        response = row["response"] if isinstance(row["response"], str) and row["response"] else None
        outcome = row.get("outcome") if row.get("outcome") in (*UNJUDGED, "failed") else None
        saved.append(Saved(question, int(row["rollout"]), question.text, response,
                           str(row.get("model") or "unknown"), str(row.get("technique") or "assistant"),
                           str(row.get("role") or TARGET), str(row.get("framing") or "natural"),
                           outcome or ("answer" if response else "empty")))
    return _checked(path, saved, unknown)


def load_transcripts(value: str, questions: QuestionSet) -> Transcripts:
    """The saved answers of ``value`` matched to ``questions`` (one-line errors for a bad file)."""
    path = Path(value).expanduser()
    if not path.is_file():
        raise _bad(path, "no such file")
    text = read_text(path, max_bytes=MAX_QUESTION_FILE * 10, fix="give a UTF-8 transcript file")
    if path.suffix == ".csv":
        return from_responses_csv(path, text, questions)
    if path.suffix != ".json":
        raise _bad(path, "the name must end in .json (the testbed's format) or .csv (responses.csv)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(path, f"not JSON at line {exc.lineno} ({exc.msg})") from None
    if not isinstance(data, Mapping):
        raise _bad(path, "expected an object with 'results'")
    return from_testbed(path, data, questions)
