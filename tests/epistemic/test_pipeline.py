"""Pipeline stages in-process: composed Hydra config, loopback server for LLM systems."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from audit.epistemic.pipeline import check_unchanged, run
from audit.errors import UserError
from audit.paths import CONF_DIR
from audit.testing.replies import chat_reply, error_reply


def config(*overrides: str) -> DictConfig:
    """A copy of the composed config: a run may change the one it is given."""
    return copy.deepcopy(_composed(overrides))


@functools.cache
def _composed(overrides: tuple[str, ...]) -> DictConfig:
    """Composed once per set of overrides: a compose is ~0.13 CPU-s, and the resume tests compose the same
    config for each of their runs."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("epistemic", overrides=["cards.num_per_type=3", "gateway.max_retries=0", *overrides])


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def llm_env(fake_openrouter, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the gateway's response cache lives under the cwd
    for key, value in fake_openrouter.env().items():
        monkeypatch.setenv(key, value)
    return fake_openrouter


def test_kg_oracle_all_stages_perfect_scores(tmp_path):
    run_dir = run(config(), base_dir=tmp_path)
    assert run_dir.parent == tmp_path and run_dir.name.startswith("rivers_has_mouth_")
    names = {p.name for p in run_dir.iterdir()}
    assert {"config.yaml", "systems.json", "cards.jsonl", "results.jsonl", "metrics.json", "report.html",
            "summary.json"} <= names
    # the oracle sends no prompt: its node, and no text digest
    assert json.loads((run_dir / "systems.json").read_text()) == \
        {"kg_oracle": {"settings": {"name": "kg_oracle", "label": None}, "prompt_sha256": {}}}
    assert "usage.json" not in names
    cards, rows = jsonl(run_dir / "cards.jsonl"), jsonl(run_dir / "results.jsonl")
    assert len(cards) == len(rows) == 27  # 3 labels x 3 suites x 3
    m = json.loads((run_dir / "metrics.json").read_text())["kg_oracle"]["metrics"]
    assert (m["AP"]["value"], m["CVRR"]["value"], m["LA"]["value"], m["FAR_NE"]["value"]) == (1, 1, 1, 0)
    assert {r["reason"] for r in rows} & {"entailed: triple in KG"}


def test_several_systems_one_run_with_llm_errors(llm_env, tmp_path):
    def handler(request):
        question = request.json["messages"][-1]["content"].rsplit("Question:", 1)[1]
        if "River" in question.split(" the mouth of ")[0]:  # an object named "... River": a server error
            return error_reply(400, "rejected")
        return chat_reply('```json\n{"answer": "YES"}\n```')

    llm_env.handler = handler
    run_dir = run(config("systems=[kg_oracle,raw_llm]", "cards.suites=[standard]"), base_dir=tmp_path / "out")
    rows = jsonl(run_dir / "results.jsonl")
    raw = [r for r in rows if r["system"] == "raw_llm:openai/gpt-4o-mini"]
    assert len(raw) == 9 and len(rows) == 18
    errors = [r for r in raw if r["error"]]
    answered = [r for r in raw if not r["error"]]
    assert errors and answered, "the handler should split the cards"
    assert all(r["pred"] is None and "bad_request" in r["error"] and r["pass"] is False for r in errors)
    assert all(r["pred"] == "YES" and r["raw_output"].startswith("```json") for r in answered)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert set(metrics) == {"kg_oracle", "raw_llm:openai/gpt-4o-mini"}
    assert metrics["raw_llm:openai/gpt-4o-mini"]["n_errors"] == len(errors)
    assert metrics["raw_llm:openai/gpt-4o-mini"]["metrics"]["coverage"]["value"] == 1  # always YES when it answers
    usage = json.loads((run_dir / "usage.json").read_text())
    assert usage["totals"]["calls"] >= len(answered)
    assert "test-key-123" not in (run_dir / "config.yaml").read_text()
    # each listed system as it ran (raw_llm from its conf/system file), the key nowhere in the record
    used = json.loads((run_dir / "systems.json").read_text())
    assert set(used) == {"kg_oracle", "raw_llm:openai/gpt-4o-mini"}
    raw_used = used["raw_llm:openai/gpt-4o-mini"]
    assert (raw_used["settings"]["max_tokens"], set(raw_used["prompt_sha256"])) == (20, {"system", "user"})
    assert "test-key-123" not in (run_dir / "systems.json").read_text()
    assert "raw_llm:openai/gpt-4o-mini" in (run_dir / "report.html").read_text()


def test_cards_stage_then_reuse_then_metrics_and_report_stages(tmp_path):
    cards_dir = run(config("stage=cards"), base_dir=tmp_path)
    assert {p.name for p in cards_dir.iterdir()} == {".lock", "config.yaml", "cards.jsonl", "summary.json"}
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text((cards_dir / "cards.jsonl").read_text().replace("rivers-v4#hasMouth", "geo#hasCapital"))
    with pytest.raises(UserError, match="geo#hasCapital, not .*pass the domain=... predicate=..."):
        run(config("stage=systems", f"cards.path={foreign}"), base_dir=tmp_path)
    sys_dir = run(config("stage=systems", f"cards.path={cards_dir / 'cards.jsonl'}"), base_dir=tmp_path)
    assert not (sys_dir / "metrics.json").exists()
    assert [r["id"] for r in jsonl(sys_dir / "results.jsonl")] == [c["id"] for c in jsonl(cards_dir / "cards.jsonl")]
    # report from a results file finds the cards.jsonl written beside it
    rep_dir = run(config("stage=report", f"results={sys_dir / 'results.jsonl'}"), base_dir=tmp_path)
    assert rep_dir.name.startswith("report_")
    html = (rep_dir / "report.html").read_text()
    assert "Card text not available" not in html and "Question</b>:" in html
    # two results files (e.g. two runs of one system under distinct labels) in one report
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({**r, "system": "kg_oracle_rerun"}) + "\n"
                             for r in jsonl(sys_dir / "results.jsonl")))
    both = run(config("stage=report", f"results=[{sys_dir / 'results.jsonl'},{other}]"), base_dir=tmp_path)
    assert set(json.loads((both / "metrics.json").read_text())) == {"kg_oracle", "kg_oracle_rerun"}
    assert "kg_oracle_rerun: YES" in (both / "report.html").read_text()


ORIGINAL = [  # the original project's results format: id, gold, pred, pass, system, label
    {"id": "CARD_E_1", "gold": "YES", "pred": "YES", "pass": True, "system": "gpt-4", "label": "E"},
    {"id": "CARD_E_2", "gold": "YES", "pred": "NO", "pass": False, "system": "gpt-4", "label": "E"},
    {"id": "CARD_C_1", "gold": "NO", "pred": "NO", "pass": True, "system": "gpt-4", "label": "C"},
    {"id": "CARD_D_1", "gold": "NO", "pred": "UNKNOWN", "pass": False, "system": "gpt-4", "label": "D"},
    {"id": "CARD_U_1", "gold": "UNKNOWN", "pred": "NO", "pass": False, "system": "gpt-4", "label": "U"},
]


@pytest.mark.parametrize(("mapping", "expected"), [
    # licensing: A_E=1 S_E=1 | A_C=0 S_C=2 | A_U=0 S_U=1
    ("licensing", {"AP": 3 / 4, "CVRR": 1.0, "FAR_NE": 0.0, "LA": 1 / 2}),
    # legacy: A_E=2 S_E=0 | A_C=1 S_C=1 | A_U=1 S_U=0
    ("legacy", {"AP": 1.0, "CVRR": 1 / 2, "FAR_NE": 2 / 3, "LA": 1.0}),
])
def test_metrics_stage_on_original_format(tmp_path, mapping, expected):
    path = tmp_path / "all_results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ORIGINAL))
    run_dir = run(config("stage=metrics", f"results={path}", f"metrics.mapping={mapping}"), base_dir=tmp_path)
    m = json.loads((run_dir / "metrics.json").read_text())["gpt-4"]
    assert m["mapping"] == mapping
    assert {k: round(m["metrics"][k]["value"], 9) for k in expected} == {k: round(v, 9) for k, v in expected.items()}
    assert not (run_dir / "report.html").exists()


def test_bad_inputs_fail_before_anything_is_written(tmp_path):
    out = tmp_path / "out"
    dup = tmp_path / "r.jsonl"
    dup.write_text("".join(json.dumps(r) + "\n" for r in ORIGINAL[:2]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ORIGINAL[0]) + "\n{not json\n")
    cases = [
        (("systems=[kg_oracle,rag_graph]",), "Unknown system 'rag_graph'"),
        (("stage=metrics",), "needs results="),
        (("stage=metrics", f"results=[{dup},{dup}]"), "answers card 'CARD_E_1' twice"),
        (("stage=metrics", f"results={bad}"), "bad.jsonl line 2: not valid JSON"),
        (("stage=report", f"results={dup}", "metrics.mapping=closed"), "Unknown metrics.mapping 'closed'"),
        (("stage=everything",), "Unknown stage 'everything'"),
        (("system=finetuned",), "system.model=<OpenRouter model id>"),
        (("cards.num_per_type=abc",), "cards.num_per_type='abc': give a whole number"),
    ]
    for overrides, message in cases:
        with pytest.raises(UserError, match=message):
            run(config(*overrides), base_dir=out)
    assert not out.exists()


def test_resume_after_every_answer_was_saved_asks_nothing_and_finishes(llm_env, tmp_path):
    """What a kill after results.jsonl (or after the last journal line) leaves: only the scoring is left."""
    llm_env.default_reply = chat_reply('{"answer": "NO"}')
    cfg = ("system=raw_llm", "cards.suites=[standard]", "gateway.cache.enabled=false")
    run_dir = run(config(*cfg), base_dir=tmp_path / "out")
    finished = {name: (run_dir / name).read_text() for name in ("results.jsonl", "metrics.json")}
    for answers_in in ("results.jsonl", "answers.jsonl"):  # killed after results.jsonl, or just before it
        if answers_in == "answers.jsonl":
            (run_dir / "results.jsonl").rename(run_dir / "answers.jsonl")  # the same rows, one per line
        for name in ("metrics.json", "report.html"):
            (run_dir / name).unlink()
        (run_dir / "summary.json").write_text('{"status": "running", "stage": "all"}')
        llm_env.reset()
        assert run(config(f"resume={run_dir}", *cfg), base_dir=tmp_path / "elsewhere") == run_dir
        assert not llm_env.requests and not (tmp_path / "elsewhere").exists()
        assert {name: (run_dir / name).read_text() for name in finished} == finished
        assert json.loads((run_dir / "summary.json").read_text())["status"] == "success"
    with pytest.raises(UserError, match="already finished"):
        run(config(f"resume={run_dir}", *cfg), base_dir=tmp_path / "elsewhere")


def test_a_resume_refuses_a_prompt_file_edited_since_the_run_started(llm_env, tmp_path):
    """The run's systems.json holds its prompt text's digest: a resume that would answer the rest of the
    cards under an edited prompt (same file name) is one line naming it, and changes nothing."""
    llm_env.default_reply = chat_reply('{"answer": "NO"}')
    mine = tmp_path / "mine.txt"
    mine.write_text("Answer only with JSON.")
    cfg = ("system=raw_llm", f"prompt.system={mine}", "cards.suites=[standard]", "gateway.cache.enabled=false")
    run_dir = run(config(*cfg), base_dir=tmp_path / "out")
    (run_dir / "metrics.json").unlink()
    (run_dir / "summary.json").write_text('{"status": "running", "stage": "all"}')
    mine.write_text("Answer only with JSON. Prefer UNKNOWN.")
    with pytest.raises(UserError, match=r"^resume: raw_llm:openai/gpt-4o-mini's system prompt file's text changed"):
        run(config(f"resume={run_dir}", *cfg))
    assert json.loads((run_dir / "summary.json").read_text()) == {"status": "running", "stage": "all"}
    mine.write_text("Answer only with JSON.")  # restored: the resume finishes
    assert run(config(f"resume={run_dir}", *cfg)) == run_dir and (run_dir / "metrics.json").is_file()


def test_a_run_with_several_conditions_has_no_pooled_headline(tmp_path, capsys):
    """The KG oracle is perfect in context and answers the graph's label elsewhere: pooled over the
    three conditions its AP would read 0.667; the end line, the summary, metrics.json and the report
    show each condition apart instead."""
    run_dir = run(config("cards.conditions=[in_context,closed_book,counterfactual]", "cards.suites=[standard]"),
                  base_dir=tmp_path)
    end = capsys.readouterr().out
    metrics = json.loads((run_dir / "metrics.json").read_text())["kg_oracle"]
    assert "metrics" not in metrics and sorted(metrics["conditions"]) == ["closed_book", "counterfactual", "in_context"]
    assert metrics["conditions"]["in_context"]["metrics"]["AP"]["value"] == 1
    systems = json.loads((run_dir / "summary.json").read_text())["systems"]
    assert sorted(systems) == ["kg_oracle · closed_book", "kg_oracle · counterfactual", "kg_oracle · in_context"]
    assert systems["kg_oracle · in_context"]["AP"] == 1
    for unit in systems:
        assert f"{unit}: " in end
    assert "kg_oracle: " not in end  # no pooled line
    report = (run_dir / "report.html").read_text(encoding="utf-8")
    assert report.count("kg_oracle · counterfactual") >= 2  # its metrics row and its chart legend


@pytest.mark.parametrize("text, problem", [("{", "not valid JSON"), ("[1]", "not a JSON object")])
def test_a_damaged_systems_record_refuses_the_resume_in_one_line_naming_it_once(tmp_path: Path, text, problem):
    """The resume reads the record as it reads an audit's saved steps: the path and the fix once each,
    and never 'remove it' (without the record the resume could not check the systems at all)."""
    record = tmp_path / "systems.json"
    record.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as info:
        check_unchanged(record, {})
    message = str(info.value)
    assert problem in message and message.count(str(record)) == 1 and "remove" not in message
    assert message.endswith("restore it, or start a new run") and "\n" not in message


def test_a_missing_key_is_refused_before_the_domain_loads_or_the_cards_are_read(tmp_path, monkeypatch):
    """The key is the first thing an LLM run checks (``GatewaySettings.keys_for``): a run given no key and a
    cards file that does not exist names the key, not the file, and writes nothing (before, the domain loaded
    and the cards were drawn or read first, ~0.7 CPU-s before the user's one line)."""
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env of the checkout supplies one
    with pytest.raises(UserError, match="OPENROUTER_API_KEY"):
        run(config("system=raw_llm", f"cards.path={tmp_path / 'none.jsonl'}"), base_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
