"""Epistemic runs that asked a system differently (another prompt, temperature, ...) are never
pooled in one cell nor taken for cached re-runs of each other; the setting that differs is shown
beside the system, and only when the runs compared vary it (:mod:`audit.compare.answer_settings`); the
same mechanism keys the target of a censorship or benchmark run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from omegaconf import OmegaConf

from audit.compare.answer_settings import answer_settings, label, reference_settings, server, settings_labels, \
    target_settings, varied_settings
from audit.compare.collect import collect
from audit.compare.report import build_context, summary_text
from audit.compare.tables import build_tables
from audit.epistemic import system_nodes
from audit.paths import CONF_DIR
from audit.record.rundir import load_saved_config
from tests.compare.fake_runs import epistemic_run, rate, recorded_systems, saved_epistemic_config

SYSTEM = "raw_llm:openai/gpt-4o-mini"


def _run(parent: Path, name: str, ap: tuple[int, int], *overrides: str, replay: bool = False) -> Path:
    """One raw_llm run over 45 cards whose saved config says ``overrides``; AP is ``k/n``."""
    k, n = ap
    run = epistemic_run(parent, name, {SYSTEM: {"AP": rate(k / n, 0.0, 1.0, k, n)}}, replay=replay)
    return saved_epistemic_config(run, "system=raw_llm", *overrides)


def _ap(tables) -> list[dict]:
    return tables.epistemic_matrix[tables.epistemic_matrix["metric"] == "AP"].to_dict("records")


def test_a_prompt_sweep_is_two_cells_not_repeats_of_one(tmp_path: Path) -> None:
    """``-m prompt=default,abstain_encouraged``: on main both runs landed in one cell (runs=2, AP 40/90,
    each card counted as answered twice); now each prompt is its own cell, labelled by the prompt."""
    _run(tmp_path / "sweep", "0", (30, 45), "prompt=default")
    _run(tmp_path / "sweep", "1", (10, 45), "prompt=abstain_encouraged")
    tables = build_tables(collect([tmp_path / "sweep"]))
    cells = sorted(_ap(tables), key=lambda r: r["settings"])
    assert [(c["runs"], c["k"], c["n"]) for c in cells] == [(1, 10, 45), (1, 30, 45)]
    assert cells[0]["settings"].startswith("prompt=abstain_encouraged")
    assert "prompt.system=system_abstain_encouraged.txt" in cells[0]["settings"]
    assert cells[1]["settings"].startswith("prompt=default")
    # shown: as a column of the printed tables and in the matrix's row labels
    text = summary_text(tables, tmp_path / "out")
    assert "settings" in text and "prompt=abstain_encouraged" in text
    rows = build_context(tables, [tmp_path / "sweep"], tmp_path / "out")["epistemic_matrices"][0]["rows"]
    assert sorted(r["system"] for r in rows) == sorted(f"{SYSTEM} · settings {c['settings']}" for c in cells)


def test_a_cached_rerun_of_a_prompt_sweep_counts_both_prompts(tmp_path: Path) -> None:
    """A re-run served from the cache, compared alone: every run is a replay. On main the two prompts
    were one sample, so one of them was dropped as a replay of the other; each is its own sample now."""
    _run(tmp_path / "sweep", "0", (30, 45), "prompt=default", replay=True)
    _run(tmp_path / "sweep", "1", (10, 45), "prompt=abstain_encouraged", replay=True)
    tables = build_tables(collect([tmp_path / "sweep"]))
    assert list(tables.epistemic["counted"]) == [True, True]
    assert sorted((c["runs"], c["replays"], c["k"]) for c in _ap(tables)) == [(1, 0, 10), (1, 0, 30)]


def test_repeats_of_one_setting_stay_one_cell_with_no_settings_shown(tmp_path: Path) -> None:
    """Two repeats under the same settings are one cell (the same 45 cards answered twice, averaged card
    by card), and nothing varies, so nothing is shown."""
    _run(tmp_path / "sweep", "0", (30, 45), "prompt=default")
    _run(tmp_path / "sweep", "1", (20, 45), "prompt=default", "repeat=1")
    tables = build_tables(collect([tmp_path / "sweep"]))
    (cell,) = _ap(tables)
    assert (cell["runs"], cell["card_repeats"], cell["k"], cell["n"], cell["settings"]) == (2, 2, 25, 45, "")
    assert "settings" not in summary_text(tables, tmp_path / "out")


@pytest.mark.parametrize(("override", "shown"), [
    ("system.temperature=0.7", "temperature=0.7"),
    ("system.max_tokens=64", "max_tokens=64"),
    ("+system.extra_body.reasoning.effort=low", 'extra_body={"reasoning":{"effort":"low"}}'),
    ("+system.reasoning.exclude=true", 'reasoning={"exclude":true}'),
    ("+system.provider.order=[OpenAI]", 'provider={"order":["OpenAI"]}'),
    ("system.structured_output=off", "structured_output=off"),
    ("prompt.system=my_prompt.txt", "prompt.system=my_prompt.txt"),
])
def test_every_answer_changing_setting_keys_the_cell(tmp_path: Path, override: str, shown: str) -> None:
    """Each setting that changes what the system is asked or how it answers splits the cell."""
    _run(tmp_path / "sweep", "0", (30, 45))
    _run(tmp_path / "sweep", "1", (10, 45), override)
    cells = sorted(_ap(build_tables(collect([tmp_path / "sweep"]))), key=lambda r: r["k"])
    assert [c["runs"] for c in cells] == [1, 1]
    assert shown in cells[0]["settings"] and shown not in cells[1]["settings"]


def test_rag_settings_and_listed_systems_are_read_per_system(tmp_path: Path) -> None:
    """A listed system's settings come from its conf/system file with its per_system overrides; the
    RAG's top_k is one of them; a system whose settings did not change has none shown."""
    run = tmp_path / "run"
    run.mkdir()
    saved_epistemic_config(run, "systems=[kg_oracle,rag]", "+per_system.rag.top_k=9")
    config = load_saved_config(run / "config.yaml")
    rag = answer_settings(config, "rag:openai/gpt-4o-mini")
    assert (rag["top_k"], rag["prompt.user"], rag["temperature"], rag["prompt"]) == ("9", "rag_question.txt", "0", "default")
    assert answer_settings(config, "kg_oracle") == {"prompt": "default", "local": "False"}
    assert answer_settings(None, "kg_oracle") == {}
    assert settings_labels(["rag", "rag", "kg_oracle"], [{"top_k": "5"}, {"top_k": "9"}, {}]) == \
        ["top_k=5", "top_k=9", ""]
    # a run that saved no config is apart from one that did (its settings are unknown, never assumed)
    assert settings_labels(["rag", "rag"], [{}, {"top_k": "5"}]) == ["top_k=n/a", "top_k=5"]


def test_rates_scored_under_another_mapping_are_another_cell(tmp_path: Path) -> None:
    """``metrics.mapping=legacy`` is another formula for the same rate: its run is never pooled with a
    licensing run of the same system (on main: one cell of 2 runs, AP 20/45); the mapping is shown."""
    for name, (k, mapping) in {"0": (30, "licensing"), "1": (10, "legacy")}.items():
        epistemic_run(tmp_path / "runs", name, {SYSTEM: {"AP": rate(k / 45, 0.0, 1.0, k, 45)}}, mapping=mapping)
    tables = build_tables(collect([tmp_path / "runs"]))
    cells = sorted(_ap(tables), key=lambda r: r["mapping"])
    assert [(c["mapping"], c["runs"], c["k"], c["n"]) for c in cells] == [("legacy", 1, 10, 45), ("licensing", 1, 30, 45)]
    rows = build_context(tables, [tmp_path / "runs"], tmp_path / "out")["epistemic_matrices"][0]["rows"]
    assert sorted(r["system"] for r in rows) == [f"{SYSTEM} · mapping legacy", f"{SYSTEM} · mapping licensing"]


def test_a_prompt_file_edited_under_the_same_name_is_another_cell(tmp_path: Path) -> None:
    """Two runs with ``prompt.system=<my file>``, the file's text edited between them: the config names
    the same file, the run's ``systems.json`` the text's digest. On main they were one cell (each card
    answered twice); now two, labelled by the digest. A run dir written before the record (no digest) is
    a third cell, ``n/a``: its text is unknown, never assumed the same."""
    mine = tmp_path / "mine.txt"
    digests = []
    for name, k, text in (("0", 30, "Answer only with JSON."), ("1", 10, "Answer only with JSON. Say UNKNOWN often.")):
        mine.write_text(text, encoding="utf-8")
        recorded_systems(_run(tmp_path / "sweep", name, (k, 45), f"prompt.system={mine}"))
        digests.append(json.loads((tmp_path / "sweep" / name / "systems.json").read_text())[SYSTEM]
                       ["prompt_sha256"]["system"])
    assert digests[0] != digests[1] and all(len(d) == 12 for d in digests)
    _run(tmp_path / "sweep", "2", (20, 45), f"prompt.system={mine}")  # before systems.json existed
    cells = sorted(_ap(build_tables(collect([tmp_path / "sweep"]))), key=lambda r: r["k"])
    assert [(c["runs"], c["k"]) for c in cells] == [(1, 10), (1, 20), (1, 30)]
    user = json.loads((tmp_path / "sweep" / "0" / "systems.json").read_text())[SYSTEM]["prompt_sha256"]["user"]
    assert [c["settings"] for c in cells] == [
        f"prompt.system.sha256={digests[1]} · prompt.user.sha256={user}",
        "prompt.system.sha256=n/a · prompt.user.sha256=n/a",
        f"prompt.system.sha256={digests[0]} · prompt.user.sha256={user}"]


def test_a_listed_systems_recorded_settings_outlive_its_conf_file(tmp_path: Path, monkeypatch) -> None:
    """``systems=[kg_oracle,rag]`` names rag, whose settings live in conf/system/rag.yaml. A run recorded
    rag at top_k 5; the file then says top_k 9 and a second run records that. On main both were rebuilt
    from today's file (top_k 9 for both: one cell of 2 runs); the record keeps them apart."""
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    monkeypatch.setattr(system_nodes, "CONF_DIR", str(conf))  # this project's conf reader, not a model call
    rag = "rag:openai/gpt-4o-mini"
    for name, k in (("0", 30), ("1", 10)):
        if name == "1":
            text = (conf / "system" / "rag.yaml").read_text(encoding="utf-8")
            (conf / "system" / "rag.yaml").write_text(text.replace("top_k: 5", "top_k: 9"), encoding="utf-8")
        run = epistemic_run(tmp_path / "sweep", name, {rag: {"AP": rate(k / 45, 0.0, 1.0, k, 45)}})
        recorded_systems(saved_epistemic_config(run, "systems=[kg_oracle,rag]"))
    assert json.loads((tmp_path / "sweep" / "0" / "systems.json").read_text())[rag]["settings"]["top_k"] == 5
    cells = sorted(_ap(build_tables(collect([tmp_path / "sweep"]))), key=lambda r: r["k"])
    assert [(c["runs"], c["k"], c["settings"]) for c in cells] == [(1, 10, "top_k=9"), (1, 30, "top_k=5")]


# The target of a censorship or benchmark run: the same mechanism, fed by the run's saved config.

TARGET_CONFIG = {
    "audited": {"name": "kimi_k2", "model": "moonshotai/kimi-k2", "template": "kimi_k2", "provider": None,
                "endpoint": "openrouter", "reasoning": None},
    "sampling": {"max_tokens": 500, "temperature": 0.7},
    "technique": {"name": "prefill", "with_baseline": True, "prefill_text": "Sure:", "menu": ["a", "b"]},
    "framing": {"name": "natural", "template": "{question}"},
    "gateway": {"api_base": "http://127.0.0.1:2/api/v1", "effective": {"openrouter": "http://127.0.0.1:1/api/v1"},
                "endpoints": {"local": {"api_base": "http://127.0.0.1:8000/v1/"},
                              "embedded": {"api_base": "http://127.0.0.1:45678/v1", "identity": "embedded:smol.gguf"}}},
    "topic": {"name": "tiananmen"}, "max_iterations": 20,
}


def test_target_settings_hold_every_setting_sent_and_nothing_else() -> None:
    settings = target_settings(TARGET_CONFIG)
    assert settings == {
        "model": "moonshotai/kimi-k2", "template": "kimi_k2", "provider": "null", "endpoint": "openrouter",
        "reasoning": "null", "sampling.max_tokens": "500", "sampling.temperature": "0.7",
        "technique.prefill_text": "Sure:", "technique.menu": '["a","b"]', "framing.template": "{question}",
        # where the calls really went (gateway.effective), not the configured default
        "server": "http://127.0.0.1:1/api/v1"}
    assert target_settings(None) == {} == target_settings({})
    # a saved config.yaml (OmegaConf) reads as the same text as a summary's plain config
    assert target_settings(OmegaConf.create(TARGET_CONFIG)) == settings


@pytest.mark.parametrize("endpoint, expected", [
    ("local", "http://127.0.0.1:8000/v1"),     # another endpoint: its own base URL
    ("embedded", "embedded:smol.gguf"),       # the embedded model: its identity, not its ephemeral port
])
def test_the_server_is_where_the_endpoint_reached(endpoint: str, expected: str) -> None:
    assert server(TARGET_CONFIG, endpoint) == expected
    # a run saved before gateway.effective: the base URL its config names
    old = {**TARGET_CONFIG, "gateway": {"api_base": "http://127.0.0.1:2/api/v1"}}
    assert server(old, "openrouter") == "http://127.0.0.1:2/api/v1"
    assert server({}, "openrouter") == "n/a"


def test_a_reference_model_is_keyed_by_what_it_was_sent_not_by_the_target() -> None:
    config = {**TARGET_CONFIG, "reference_endpoint": "local"}
    other_target = {**config, "audited": {**TARGET_CONFIG["audited"], "template": "kimi_k2_legacy"}}
    assert reference_settings(config) == reference_settings(other_target)
    assert reference_settings(config)["server"] == "http://127.0.0.1:8000/v1"
    assert "template" not in reference_settings(config)


def test_only_the_settings_that_vary_within_a_group_are_shown() -> None:
    a, b = target_settings(TARGET_CONFIG), target_settings(
        {**TARGET_CONFIG, "audited": {**TARGET_CONFIG["audited"], "provider": {"only": ["x"], "allow_fallbacks": False}}})
    other = target_settings({**TARGET_CONFIG, "sampling": {"temperature": 0.0}})
    varied = varied_settings(["kimi", "kimi", "glm"], [a, b, other])
    assert varied == [{"provider": "null"}, {"provider": '{"allow_fallbacks":false,"only":["x"]}'}, {}]
    assert [label(v) for v in varied] == settings_labels(["kimi", "kimi", "glm"], [a, b, other])
    # a key one run's config lacks (an older version) reads n/a: apart, never assumed equal
    assert varied_settings(["k", "k"], [{"reasoning": "null"}, {}]) == [{"reasoning": "null"}, {"reasoning": "n/a"}]
