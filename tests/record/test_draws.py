"""Typed turns and draws: both response-file shapes read as one list of draws, and every old run dir
fixture (tests/runs/legacy, written before these types) loads through them."""

from __future__ import annotations

import json
from pathlib import Path

from audit.record.draws import Draw, DrawSettings, Turn, blocked_counts, blocked_fields, drawn_parts, drawn_text, \
    iteration_draws
from audit.runs.loading import load_runs

LEGACY = Path(__file__).resolve().parents[1] / "runs" / "legacy"


def test_a_fixed_iteration_is_its_response_then_its_baseline_and_an_auto_one_its_draws():
    fixed = {"iteration": 2, "technique": "prefill", "prompt_sent": "p", "raw_response": "r",
             "classification": {"label": "refused", "rationale": ""},
             "baseline": {"technique": "assistant", "raw_response": "b", "classification": None}}
    main, baseline = iteration_draws(fixed)
    assert (main.cell, main.key, main.judgment.label) == ("prefill", "2/response", "refused")
    assert (baseline.cell, baseline.key, baseline.judgment) == ("assistant (baseline)", "2/baseline", None)
    auto = {"iteration": 3, "technique": "auto", "action": {"kind": "batch"}, "baseline": None,
            "draws": [{"id": "3.1", "technique": "user_persona", "raw_response": "x", "parent": None, "role": "user"},
                      {"id": "3.2", "technique": "user_persona", "raw_response": None, "error": "server: 500"}]}
    draws = iteration_draws(auto)
    assert [(d.cell, d.key, d.iteration) for d in draws] == [("auto/user_persona", "3.1/response", 3),
                                                             ("auto/user_persona", "3.2/response", 3)]
    assert draws[0].model_extra == {"role": "user"}  # what the writer saved passes through
    assert [d.given() for d in draws] == auto["draws"]  # and is written back as saved: keys, order, nulls
    # a record written before fixed records named their technique takes the run's
    assert iteration_draws({"iteration": 1, "raw_response": "r"}, "assistant")[0].cell == "assistant"


def test_every_legacy_run_dir_loads_through_the_typed_records():
    runs = {r.path.name: r for r in load_runs([LEGACY])}
    audits = {name: r for name, r in runs.items() if r.experiment == "censorship" and r.responses}
    assert set(audits) == {"censorship_completed", "censorship_max_iterations_judged", "censorship_with_errors"}
    for name, run in audits.items():
        files = sorted((run.path / "audited_responses").glob("*.json"))
        saved = [json.loads(p.read_text()) for p in files]
        draws = run.draws
        main = [d for d in draws if not d.is_baseline]
        assert len(main) == len(saved) and all(isinstance(d, Draw) for d in draws), name
        assert [d.raw_response for d in main] == [s.get("raw_response") for s in saved], name
        assert [d.judgment.label if d.judgment else None for d in main] == \
            [(s.get("classification") or {}).get("label") for s in saved], name
        assert len(draws) - len(main) == sum(isinstance(s.get("baseline"), dict) for s in saved), name
        turns = [Turn.model_validate(t) for t in run.turns.values()]
        assert [t.iteration for t in turns] == list(range(1, len(turns) + 1)), name
        assert not turns[-1].continues, name


def test_a_draws_text_is_the_auditors_opening_then_the_targets_own_words_read_apart_by_the_judge():
    saved = {"prefill": "Sure:", "raw_response": " the army came.", "opening": None}
    prefilled = Draw(iteration=1, technique="prefill", **saved)
    persona = Draw(iteration=1, technique="user_persona", opening="I was there and", raw_response=" saw tanks.",
                   role="user")
    assert drawn_parts(saved) == ("Sure:", " the army came.") == drawn_parts(prefilled)  # a benchmark record too
    assert drawn_text(prefilled) == "Sure: the army came." == drawn_text(prefilled, turn=True)
    assert drawn_text(persona) == " saw tanks." and drawn_text(persona, turn=True) == "I was there and saw tanks."
    assert drawn_text(Draw(iteration=1, technique="prefill", raw_response=None, prefill="Sure:")) is None
    assert drawn_parts(None) == ("", None)


def test_a_draw_reads_its_settings_typed_and_an_older_draw_has_none():
    saved = {"iteration": 2, "technique": "user_persona", "raw_response": "x",
             "settings": {"model": "m/m", "endpoint": "openrouter", "template": "kimi_k2", "max_tokens": 500}}
    (draw,) = iteration_draws(saved)
    assert draw.settings == DrawSettings(model="m/m", endpoint="openrouter", template="kimi_k2", max_tokens=500)
    assert iteration_draws({**saved, "settings": None})[0].settings is None
    assert draw.given()["settings"] == saved["settings"]  # written as saved, without the defaults


def test_blocked_draws_are_counted_per_cell_the_baseline_and_auto_techniques_apart():
    block = blocked_fields({"code": "guardrail", "provider": None, "reason": "Request blocked"})
    assert block == {"outcome": "blocked", "blocked": {"code": "guardrail", "provider": None, "reason": "Request blocked"}}
    fixed = iteration_draws({"iteration": 1, "technique": "prefill", **block, "baseline": {**block}})
    auto = iteration_draws({"iteration": 2, "draws": [{"technique": "assistant", "id": "2.1", **block},
                                                      {"technique": "assistant", "id": "2.2", "outcome": "answer"}]})
    assert blocked_counts([*fixed, *auto]) == {"assistant (baseline)": 1, "auto/assistant": 1, "prefill": 1}


def test_a_draw_is_written_with_the_keys_it_was_given_in_their_order_and_never_its_judgings():
    draw = Draw.model_validate({"iteration": 1, "technique": "prefill", "prompt_sent": "p", "raw_response": "r",
                                "error": None, "usage": None})
    judged = draw.extended(raw_response="r2", classification={"rationale": "x", "label": "refused"})
    written = judged.given()
    assert list(written) == ["technique", "prompt_sent", "raw_response", "error", "usage", "classification"]
    assert written["raw_response"] == "r2"  # a key it had keeps its place; a new one comes last, as given
    assert written["classification"] == {"rationale": "x", "label": "refused"}  # not the Judgment's defaults
    assert judged.judgings["original"].label == "refused" and "iteration" not in written
