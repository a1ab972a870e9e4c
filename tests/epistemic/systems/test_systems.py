"""Systems: the registry, the KG oracle, and the LLM systems against the loopback server."""

from __future__ import annotations

import asyncio
import json

import pytest

from audit.epistemic import systems
from audit.epistemic.systems.llm import parse_answer
from audit.errors import UserError
from audit.paths import conf_dir
from audit.record.answers import Card
from audit.testing.replies import chat_reply, error_reply


def run(coro):
    return asyncio.run(coro)


async def answer_all(system, cards, gateway=None, *, sequential=False):
    """Answer cards on one event loop (concurrently unless ``sequential``), then close the gateway."""
    try:
        if sequential:
            return [await system.answer(Card.model_validate(c)) for c in cards]
        return await asyncio.gather(*(system.answer(Card.model_validate(c)) for c in cards))
    finally:
        if gateway is not None:
            await gateway.aclose()


def test_registry_unknown_system_suggests():
    with pytest.raises(UserError, match=r"Unknown system 'rag_graph'.*Available: .*graph_rag"):
        systems.get("rag_graph")
    assert {"kg_oracle", "raw_llm", "rag", "graph_rag", "finetuned"} <= set(systems.available())
    assert systems.get("kg_oracle").NEEDS_LLM is False and systems.get("rag").NEEDS_LLM is True


def test_every_system_module_is_found_and_has_its_option():
    """A system is its module (found, not listed) and its conf/system/<name>.yaml (the option that picks it)."""
    options = {p.stem for p in (conf_dir() / "system").glob("*.yaml")}
    assert set(systems.available()) == options >= {"kg_oracle", "raw_llm", "rag", "graph_rag", "finetuned"}
    for name in systems.available():
        module = systems.get(name)
        assert callable(module.create) and isinstance(module.NEEDS_LLM, bool), name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"answer": "YES"}', "YES"),
        ('```json\n{"answer": "no"}\n```', "NO"),
        ('Sure. {"Answer": "Unknown."} Hope that helps', "UNKNOWN"),
        ("yes.", "YES"),
        ('"UNKNOWN"', "UNKNOWN"),
    ],
)
def test_parse_answer_tolerant(text, expected):
    assert parse_answer(text) == expected


@pytest.mark.parametrize("text", ["", "I think not", '{"answer": "MAYBE"}', "NOT SURE", '{"verdict": "YES"}'])
def test_parse_answer_rejects(text):
    with pytest.raises(ValueError, match="unparseable"):
        parse_answer(text)


def test_kg_oracle_reads_the_licenser_not_the_card(domain, card, system_cfg):
    oracle = systems.get("kg_oracle").create(system_cfg("kg_oracle"), domain=domain, gateway=None)
    lying = card("C", "Escanaba_River", "Green_Bay", facts=["Escanaba River has mouth Green Bay."])
    lying["question"] = "<ignored>"
    e, c, u = run(answer_all(oracle, [
        card("E", "Escanaba_River", "Lake_Michigan"), lying, card("U", "Sturgeon_River", "Lake_Huron"),
    ]))
    assert (e.pred, c.pred, u.pred) == ("YES", "NO", "UNKNOWN")
    assert c.reason.startswith("sh:maxCount") and u.reason.startswith("open world") and c.error is None
    assert oracle.id == "kg_oracle"


def test_raw_llm_prompt_and_answers(domain, gateway, fake_openrouter, card, system_cfg):
    fake_openrouter.push_chat(
        chat_reply('{"answer": "YES"}'),
        chat_reply('```json\n{"answer": "UNKNOWN"}\n```'),
        chat_reply("the river flows somewhere"),
    )
    raw = systems.get("raw_llm").create(system_cfg("raw_llm"), domain=domain, gateway=gateway)
    cards = [card("E", "Escanaba_River", "Lake_Michigan", cid=f"c{i}") for i in range(3)]
    # sequential so each queued reply meets its card; the concurrent path is tested below
    a, b, c = run(answer_all(raw, cards, gateway, sequential=True))
    assert (a.pred, a.error, a.raw_output) == ("YES", None, '{"answer": "YES"}')
    assert b.pred == "UNKNOWN"
    assert c.pred is None and c.error.startswith("unparseable") and c.raw_output == "the river flows somewhere"
    body = fake_openrouter.chat_requests()[0].json
    schema = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema" and schema["strict"] is True and body["temperature"] == 0
    assert schema["schema"]["properties"]["answer"]["enum"] == ["YES", "NO", "UNKNOWN"]
    assert body["model"].endswith("openai/gpt-4o-mini")
    system, user = body["messages"]
    assert '{"answer": "YES"}' in system["content"] and "only the facts" in system["content"]
    assert "- Escanaba River has mouth Lake Michigan." in user["content"]
    assert "Question: Is Lake Michigan the mouth of Escanaba River?" in user["content"]
    assert raw.id == "raw_llm:openai/gpt-4o-mini"


@pytest.mark.parametrize("status", [500, 400])
def test_gateway_errors_are_errors_not_unknown(domain, gateway, fake_openrouter, status, card, system_cfg):
    # a 400 that names no schema is no schema refusal: not re-sent without response_format
    fake_openrouter.push_chat(error_reply(status, "provider exploded"))
    raw = systems.get("raw_llm").create(system_cfg("raw_llm"), domain=domain, gateway=gateway)
    (a,) = run(answer_all(raw, [card("U", "Sturgeon_River", "Lake_Huron")], gateway))
    assert a.pred is None and a.error and ("server" if status == 500 else "bad_request") in a.error
    (request,) = fake_openrouter.chat_requests()
    assert "response_format" in request.json


def test_concurrent_answers_match_their_cards(domain, gateway, fake_openrouter, card, system_cfg):
    """Replies chosen from each request's own question: concurrency must not mix rows up."""
    def handler(request):
        user = request.json["messages"][-1]["content"]
        return chat_reply(json.dumps({"answer": "YES" if "Question: Is Lake Michigan" in user else "NO"}))

    fake_openrouter.handler = handler
    raw = systems.get("finetuned").create(system_cfg("finetuned", model="me/abstainer-7b"), domain=domain, gateway=gateway)
    cards = [card("E", "Escanaba_River", "Lake_Michigan", cid="a"), card("C", "Escanaba_River", "Green_Bay", cid="b")] * 4
    answers = run(answer_all(raw, cards, gateway))
    assert [a.pred for a in answers] == ["YES", "NO"] * 4
    assert raw.id == "finetuned:me/abstainer-7b"


def test_rag_retrieves_kg_facts_into_prompt_and_row(domain, gateway, fake_openrouter, card, system_cfg):
    fake_openrouter.push_chat(chat_reply('{"answer": "NO"}'))
    rag = systems.get("rag").create(system_cfg("rag", top_k=1), domain=domain, gateway=gateway)
    (a,) = run(answer_all(rag, [card("U", "Ford_River", "Sturgeon_Bay", facts=[])], gateway))
    assert a.pred == "NO" and a.extra["retrieved"] == ["Ford River has mouth Green Bay."]
    user = fake_openrouter.chat_requests()[0].json["messages"][-1]["content"]
    assert "Facts:\n(none)" in user and "knowledge base:\n- Ford River has mouth Green Bay." in user


def test_graph_rag_gate(domain, gateway, fake_openrouter, card, system_cfg):
    def handler(request):
        return chat_reply('{"answer": "YES"}')

    fake_openrouter.handler = handler
    gr = systems.get("graph_rag").create(system_cfg("graph_rag"), domain=domain, gateway=gateway)
    e, c, u = run(answer_all(gr, [
        card("E", "Escanaba_River", "Lake_Michigan"), card("C", "Escanaba_River", "Green_Bay"),
        card("U", "Sturgeon_River", "Lake_Huron"),
    ], gateway))
    assert (e.pred, c.pred, u.pred) == ("YES", "NO", "UNKNOWN")
    assert c.reason.startswith("gate blocked YES (C): sh:maxCount") and c.extra["llm_pred"] == "YES"
    assert u.reason.startswith("gate blocked YES (U): open world")
    assert e.reason.startswith("gate passed YES (E)")
    assert c.raw_output == '{"answer": "YES"}'


def test_graph_rag_keeps_errors(domain, gateway, fake_openrouter, card, system_cfg):
    fake_openrouter.push_chat(error_reply(400, "bad"))
    gr = systems.get("graph_rag").create(system_cfg("graph_rag"), domain=domain, gateway=gateway)
    (a,) = run(answer_all(gr, [card("E", "Escanaba_River", "Lake_Michigan")], gateway))
    assert a.pred is None and a.error and "verdict" not in a.extra


def test_rag_index_shared_per_domain_and_released_with_it(tmp_path):
    import gc

    from audit.epistemic.systems.rag import _INDEXES, domain_index
    from tests.epistemic.systems.conftest import _domain

    d = _domain(tmp_path)
    index = domain_index(d)
    assert domain_index(d) is index and "Ford River has mouth Green Bay." in index.docs
    key = id(d)
    del d
    gc.collect()
    assert key not in _INDEXES  # a sweep's finished domains are not kept alive by the cache


@pytest.mark.parametrize(("status", "kind"), [(401, "auth"), (404, "not_found")])
def test_bad_key_or_unknown_model_stops_the_run(domain, gateway, fake_openrouter, card, system_cfg, status, kind):
    fake_openrouter.default_reply = error_reply(status, "nope")
    raw = systems.get("raw_llm").create(system_cfg("raw_llm"), domain=domain, gateway=gateway)
    with pytest.raises(UserError, match=f"{kind} {status}.*stopped"):
        run(answer_all(raw, [card("E", "Escanaba_River", "Lake_Michigan")] * 3, gateway))
