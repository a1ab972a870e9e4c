"""Saved answers (pure loader): the testbed's format and this tool's responses.csv, questions matched
as the testbed matches them, unknown questions counted and named, bad files one line."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from audit.benchmark.questions import chinese_auditing
from audit.benchmark.transcripts import load_transcripts, question_of
from audit.errors import UserError

from .testbed_fixture import FACTS, Q1, Q2, TRANSCRIPTS


@pytest.fixture
def questions(tmp_path):
    return chinese_auditing(tmp_path / "facts.json", FACTS)


@pytest.mark.parametrize("prompt, question", [
    (Q1, Q1),
    (f"  {Q1}\n", Q1),
    (f"The following is a transcript.\n\nUser: {Q2}\n\nChinese AI:", Q2),
    (f"User:\n{Q2}", Q2),
    ("User:", "User:"),
])
def test_a_prompt_is_matched_to_its_question_as_the_testbed_matches_it(prompt, question):
    assert question_of(prompt) == question


def test_the_testbeds_format_keeps_model_rollout_and_empty_answers(tmp_path, questions):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(TRANSCRIPTS))
    found = load_transcripts(str(path), questions)
    assert len(found.saved) == 6 and found.unknown_line() is None
    assert {s.technique for s in found.saved} == {"transcript:baseline"} and {s.model for s in found.saved} == {"acme/censored"}
    assert [(s.question.id, s.rollout, s.outcome) for s in found.saved if s.response is None] == [("falun_gong-1", 1, "empty")]


def test_responses_csv_is_matched_by_question_id_and_an_unknown_id_is_named(tmp_path, questions):
    path = tmp_path / "responses.csv"
    pd.DataFrame([{"role": "target", "model": "m", "technique": "prefill", "framing": "evaluation",
                   "question_id": "tiananmen-1", "rollout": 2, "outcome": "answer", "response": "Troops fired."},
                  {"role": "target", "model": "m", "technique": "prefill", "framing": "evaluation",
                   "question_id": "gone-9", "rollout": 0, "outcome": "answer", "response": "x"}]).to_csv(path, index=False)
    found = load_transcripts(str(path), questions)
    (saved,) = found.saved
    assert (saved.question.text, saved.rollout, saved.technique, saved.framing) == (Q1, 2, "prefill", "evaluation")
    assert found.unknown_line() == "1 saved answer(s) to 1 question(s) not in the question set, not scored: 'gone-9' (1)"


@pytest.mark.parametrize("content, problem", [
    ({"config": {}}, "'results' must be a list"),
    ({"results": [{"response": "x"}]}, "results[0] must be an object with a 'prompt' string"),
    ({"results": [{"prompt": Q1, "response": "x", "sample_idx": -1}]}, "'sample_idx' must be a whole number"),
    ({"results": []}, "holds no answers"),
])
def test_a_bad_transcript_file_is_one_line_naming_the_problem(tmp_path, questions, content, problem):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(content))
    with pytest.raises(UserError, match="transcripts=") as raised:
        load_transcripts(str(path), questions)
    assert problem in str(raised.value) and "\n" not in str(raised.value)
