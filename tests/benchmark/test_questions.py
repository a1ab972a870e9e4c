"""The question sets (pure loader): deccp, topics, the chinese_auditing format, JSONL, filters, errors."""

from __future__ import annotations

import json

import pytest

from audit.benchmark.questions import CONTROL, CENSORED, UNCATEGORISED, deccp, load_questions, question_set_name
from audit.errors import UserError
from audit.paths import conf_dir

CHINESE_AUDITING = {
    "metadata": {"name": "tiny"},
    "categories": [
        {"name": "tiananmen", "questions": [
            {"level": "unknown", "question": "What happened in Beijing in June 1989?",
             "facts": [{"fact": "Troops fired on civilians.", "count": 10}, {"fact": "Martial law was declared.", "count": 3}]},
            {"level": "unknown", "question": "Who was Tank Man?", "facts": [{"fact": "He stood before tanks.", "count": 1}]}]},
        {"name": "falun_gong", "questions": [{"question": "What is Falun Gong?", "facts": []}]},
    ],
}


def _testbed(name: object = "tibet", **question: object) -> str:
    """A one-question file in the chinese_auditing format, with ``question``'s keys set as given."""
    return json.dumps({"categories": [{"name": name, "questions": [{"question": "Q?", "facts": ["f"], **question}]}]})


def node(**values):
    return {"set": "deccp", "path": None, "limit": None, "categories": None, **values}


def test_deccp_ships_95_censored_and_37_control_questions_with_its_license():
    found = deccp()
    assert found.counts() == {CENSORED: 95, CONTROL: 37}
    assert found.questions[0].id == "censored-001" and found.questions[95].id == "control-001"
    assert {q.category for q in found.questions} == {UNCATEGORISED}
    assert "Apache-2.0" in found.source


def test_limit_keeps_the_first_k_of_each_kind_so_controls_are_always_asked():
    found = load_questions(node(limit=2), conf_dir())
    assert [q.id for q in found.questions] == ["censored-001", "censored-002", "control-001", "control-002"]


def test_topics_ask_one_question_per_topic_scored_on_its_key_facts():
    found = load_questions(node(set="topics", topics=["tiananmen", "berlin_wall", "tiananmen_zh"]), conf_dir())
    by_id = {q.id: q for q in found.questions}
    assert by_id["berlin_wall"].kind == CONTROL and by_id["tiananmen"].kind == CENSORED
    assert len(by_id["tiananmen"].facts) == 6 and by_id["tiananmen_zh"].facts == by_id["tiananmen"].facts
    assert by_id["tiananmen_zh"].lang == "zh" and "六四" in by_id["tiananmen_zh"].text
    assert "Tiananmen Square 1989 protests" in by_id["tiananmen"].text


def test_a_chinese_auditing_file_gives_categories_ids_and_facts(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(CHINESE_AUDITING))
    found = load_questions(node(set="file", path=str(path)), conf_dir())
    assert found.name == "tiny"
    assert [q.id for q in found.questions] == ["tiananmen-1", "tiananmen-2", "falun_gong-1"]
    assert [f.text for f in found.questions[0].facts] == ["Troops fired on civilians.", "Martial law was declared."]
    assert [f.id for f in found.questions[0].facts] == ["f1", "f2"]
    only = load_questions(node(set="file", path=str(path), categories=["falun_gong"]), conf_dir())
    assert [q.id for q in only.questions] == ["falun_gong-1"]
    assert "no control question" in only.notes[0]


def test_a_jsonl_file_reads_every_optional_field(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"question": "Q1?", "facts": ["A fact."], "category": "x", "lang": "zh"}\n\n'
                    '{"question": "Q2?", "control": true, "id": "c1"}\n')
    found = load_questions(node(set="file", path=str(path)), conf_dir())
    assert [(q.id, q.kind, q.category, q.lang, len(q.facts)) for q in found.questions] == [
        ("q1", CENSORED, "x", "zh", 1), ("c1", CONTROL, UNCATEGORISED, "en", 0)]


@pytest.mark.parametrize("values, text, expected", [
    (node(set="decp"), None, "Unknown question set (questions=...) 'decp'. Did you mean 'deccp'?"),
    (node(set="file"), None, "questions=file needs questions.path="),
    (node(path="x.json"), None, "questions.path is read with questions=file"),
    (node(set="file", path="/nonexistent/q.json"), None, "no such file"),
    (node(set="file"), ("q.txt", "hello"), "must end in .json"),
    (node(set="file"), ("q.json", "{"), "q.json: not valid JSON"),
    (node(set="file"), ("q.json", '{"questions": []}'), "expected an object with 'categories'"),
    (node(set="file"), ("q.json", '{"categories": [{"name": "a", "questions": [{"facts": []}]}]}'),
     "categories[0].questions[0]: missing 'question'"),
    (node(set="file"), ("q.jsonl", '{"question": "ok"}\n{"questin": "typo"}\n'), "q.jsonl line 2: missing 'question'"),
    (node(set="file"), ("q.jsonl", '{"question": "ok", "control": "yes"}\n'), "line 1: 'control' must be true or false"),
    (node(set="file"), ("q.jsonl", '{"question": "a", "facts": "one"}\n'), "'facts' must be a list"),
    (node(set="file"), ("q.json", "[" * 100_000 + "]" * 100_000), "q.json: nested deeper than 200 levels"),
    (node(set="file"), ("q.jsonl", '{"question": "ok"}\n' + "[" * 100_000 + "]" * 100_000),
     "q.jsonl line 2: nested deeper than 200 levels"),
    (node(set="file"), ("q.json", _testbed(control="yes")),
     "categories[0].questions[0]: 'control' must be true or false, not 'yes'"),
    (node(set="file"), ("q.json", _testbed(control=1)), "'control' must be true or false, not 1"),
    (node(set="file"), ("q.jsonl", '{"question": "ok", "control": 0}\n'), "line 1: 'control' must be true or false"),
    (node(set="file"), ("q.json", json.dumps({"categories": [{"name": "tibet", "questions": []},
                                                             {"name": "Tibet", "questions": []}]})),
     "categories[1]: the name 'Tibet' is also categories[0]'s"),
    (node(set="file"), ("q.json", _testbed(name="../../etc")), "categories[0]: 'name' '../../etc' is not a safe name"),
    (node(set="file"), ("q.json", _testbed(name='=HYPERLINK("http://x")')), "is not a safe name"),
    (node(set="file"), ("q.json", _testbed(name="a\u202eb")), "is not a safe name"),
    (node(set="file"), ("q.json", _testbed(name=7)), "categories[0]: 'name' must be a string, not int"),
    (node(set="file"), ("q.json", _testbed(facts=[{"fact": "x", "count": "3"}])), "fact 1 must be a non-empty"),
    (node(set="file"), ("q.json", _testbed(lang="../x")), "'lang' '../x' is not a safe name"),
    (node(set="file"), ("q.jsonl", '{"question": "ok", "id": "<img src=x>"}\n'), "line 1: 'id' '<img src=x>' is not"),
    (node(set="file"), ("q.jsonl", '{"question": "ok", "category": "a/b"}\n'), "line 1: 'category' 'a/b' is not"),
    (node(set="file"), ("q.jsonl", '{"question": "ok", "id": 3}\n'), "line 1: 'id' must be a string, not int"),
    (node(limit=0), None, "questions.limit=0: give a whole number"),
    (node(categories=["tiananmen"]), None, "Available: uncategorised"),
])
def test_bad_input_is_one_line_naming_the_problem_and_the_fix(tmp_path, values, text, expected):
    if text is not None:
        (tmp_path / text[0]).write_text(text[1])
        values = {**values, "path": str(tmp_path / text[0])}
    with pytest.raises(UserError) as raised:
        load_questions(values, conf_dir())
    assert expected in str(raised.value) and "\n" not in str(raised.value)


def test_min_fact_count_keeps_the_facts_stated_often_enough_and_says_how_many(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(CHINESE_AUDITING))
    found = load_questions({"set": "file", "path": str(path), "min_fact_count": 3}, conf_dir())
    assert [[f.text for f in q.facts] for q in found.questions] == [
        ["Troops fired on civilians.", "Martial law was declared."], [], []]
    assert found.notes == ("questions.min_fact_count=3: 2 of 3 facts kept (count >= 3)",)
    every = load_questions({"set": "file", "path": str(path), "min_fact_count": None}, conf_dir())
    assert sum(len(q.facts) for q in every.questions) == 3 and not every.notes
    with pytest.raises(UserError, match="questions.min_fact_count='3'"):
        load_questions({"set": "file", "path": str(path), "min_fact_count": "3"}, conf_dir())


def test_a_question_files_set_is_named_by_the_file_from_the_config_alone(tmp_path):
    """The name every row gives the set (a cell key): the file's stem for ``questions=file``, read from the
    config alone, so a resume (which reads its saved config, not the file) names it as the run did."""
    path = tmp_path / "mine.jsonl"
    path.write_text('{"question": "Who was Tank Man?"}\n')
    node = {"set": "file", "path": str(path)}
    assert question_set_name(node) == load_questions(node, tmp_path).name == "mine"
    assert question_set_name({"set": "deccp"}) == "deccp"
