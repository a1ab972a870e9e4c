"""What an audit costs: whole audits against the loopback server (in this process through the loop that
``python -m audit`` runs, and one through the entrypoint itself: :func:`run` says why).

The auditor's request stays bounded under ``auditor.context=ledger`` and grows under ``full``; cache
breakpoints reach the wire on the stable prefix for a provider that takes them and never for one that
does not; the cached prompt tokens the server reports (OpenRouter's ``usage.prompt_tokens_details``,
see :mod:`audit.testing.prompt_cache`) are recorded per call, in the totals and the end line.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from audit.testing.prompt_cache import PromptCache
from audit.testing.scripted_audit import AUDITOR_MODEL, Script, chat_role
from audit.testing.server import FakeOpenRouter

from tests import entrypoints
from tests.censorship.test_main import audit, finish

from .conftest import audit_in_process

BASE = ["judge=off", "technique.with_baseline=false", "gateway.max_retries=0", "gateway.cache.enabled=false",
        "output_dir=out"]


def run(tmp_path: Path, server: FakeOpenRouter, *args: str, entrypoint: bool = False) -> tuple[Path, str]:
    """An audit with ``BASE`` and ``args`` against a server that caches prompts: its run dir and what it printed.

    In this process through :func:`audit.censorship.loop.run`, with the config ``python -m audit`` builds
    (its default ``auditor.context=auto`` too), unless ``entrypoint``: what is measured here (the requests,
    the ledger, the lines printed) is the run's, and a warm start each cost ~0.4 CPU-s more. The cost split's
    test goes through ``python -m audit`` (its Inspect export is the entrypoint's), and so reaches the same
    run from the command line."""
    server.handler = PromptCache().wrap(Script().handler)
    tmp_path.mkdir(exist_ok=True)
    if entrypoint:
        code, out, err = finish(audit(tmp_path, server, *BASE, *args))
        assert code == 0, err
        (run_dir,) = (tmp_path / "out").iterdir()
        return run_dir, out
    printed = io.StringIO()
    with redirect_stdout(printed):
        run_dir = audit_in_process(server, tmp_path, *BASE, *args)
    return run_dir, printed.getvalue()


def auditor_prompt_tokens(run_dir: Path) -> list[int]:
    calls = json.loads((run_dir / "usage.json").read_text())["calls"]
    return [c["prompt_tokens"] for c in calls if c["tag"] == "auditor"]


def test_the_ledger_request_at_turn_10_is_no_larger_than_at_turn_3_plus_one_turn(tmp_path, fake_openrouter):
    ledger, _ = run(tmp_path / "ledger", fake_openrouter, f"auditor.model={AUDITOR_MODEL}", "max_iterations=10",
                    "auditor.context=ledger", "auditor.context_turns=2")
    full, _ = run(tmp_path / "full", fake_openrouter, f"auditor.model={AUDITOR_MODEL}", "max_iterations=10",
                  "auditor.context=full")
    bounded, grown = auditor_prompt_tokens(ledger), auditor_prompt_tokens(full)
    assert len(bounded) == len(grown) == 11  # turns 1-10 and the final one
    one_turn = grown[9] - grown[8]  # what turn 9's exchange adds to the whole transcript
    assert bounded[9] <= bounded[2] + one_turn
    assert grown[9] > grown[2] + 6 * one_turn  # the bound is one the full transcript breaks
    assert bounded[:3] == grown[:3]  # up to turn k + 1 the two modes send the same request
    turn10 = json.loads((ledger / "auditor_turns" / "010.json").read_text())["input_messages"]
    assert "iterations 1-7 are not shown" in turn10[1]["content"]
    # the full record stays on disk either way
    assert len(list((ledger / "auditor_turns").iterdir())) == 11
    assert json.loads((ledger / "summary.json").read_text())["config"]["auditor"]["context"] == "ledger"


def marks(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any("cache_control" in part for part in content)


def requests_by_role(server: FakeOpenRouter) -> dict[str, list[dict[str, Any]]]:
    roles: dict[str, list[dict[str, Any]]] = {}
    for request in server.chat_requests():
        body = request.json or {}
        flat = {**body, "messages": [{**m, "content": m["content"][0]["text"] if marks(m) else m["content"]}
                                     for m in body["messages"]]}
        roles.setdefault(chat_role(flat), []).append(body)
    return roles


def test_breakpoints_mark_the_stable_prefix_and_cached_tokens_are_recorded(tmp_path, fake_openrouter):
    """The cached tokens (reads and writes, OpenRouter's ``usage.prompt_tokens_details``) reach every
    record: per call, the totals, the summary, the end line and the comparison's ``runs.csv``."""
    run_dir, out = run(tmp_path, fake_openrouter, "auditor.model=anthropic/claude-sonnet-4", "max_iterations=3",
                       "auditor.context=full", "judge=default", "judge.model=openai/gpt-4o-mini")
    roles = requests_by_role(fake_openrouter)
    assert len(roles["auditor"]) == 4 and roles["judge"]
    for body in roles["auditor"]:
        messages = body["messages"]
        # the system prompt and the newest message (the prefix the next turn repeats), nothing else
        assert [i for i, m in enumerate(messages) if marks(m)] == [0, len(messages) - 1]
        assert messages[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert not any(marks(m) for body in roles["judge"] for m in body["messages"])  # OpenAI caches by itself
    calls = json.loads((run_dir / "usage.json").read_text())
    auditor = [c for c in calls["calls"] if c["tag"] == "auditor"]
    # turn t reads what turn t - 1 wrote: its whole request
    assert [c["cached_prompt_tokens"] for c in auditor[1:]] == [c["prompt_tokens"] for c in auditor[:-1]]
    assert auditor[0]["cache_write_tokens"] == auditor[0]["prompt_tokens"]
    total = sum(c["cached_prompt_tokens"] for c in calls["calls"])
    assert total > 0 and calls["totals"]["cached_prompt_tokens"] == total
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["usage"]["cached_prompt_tokens"] == total
    assert summary["totals"]["cached_prompt_tokens"] == total  # the run files' own count agrees
    prompt = calls["totals"]["prompt_tokens"]
    assert f"{total:,} of {prompt:,} prompt tokens ({total / prompt:.0%}) read from the provider's prompt cache" in out
    # litellm's map has no Claude Sonnet 4: its split is priced from the model list the loopback server
    # serves as OpenRouter documents it (prompt 1e-6, input_cache_read 1e-7, input_cache_write 1.25e-6)
    read = auditor[1]["cached_prompt_tokens"]
    assert auditor[1]["list_priced_calls"] == auditor[1]["priced_calls"] == 1
    assert auditor[1]["cache_read_cost"] == pytest.approx(read * 1e-7)
    assert auditor[0]["cache_write_cost"] == pytest.approx(auditor[0]["cache_write_tokens"] * 1.25e-6)
    assert summary["usage"]["list_priced_calls"] >= len(auditor)
    assert f"read from the provider's prompt cache, saving ~${summary['usage']['cache_saving']:.4f} (estimate)" in out
    # runs.csv, as `python -m audit.compare` writes it, shows the same reads, writes and saving, none of them 0
    compared = entrypoints.run([sys.executable, "-m", "audit.compare", str(run_dir.parent), "--out", "cmp"],
                               cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert compared.returncode == 0, compared.stderr
    (row,) = pd.read_csv(tmp_path / "cmp" / "runs.csv").to_dict("records")
    columns = ("prompt_tokens", "cached_prompt_tokens", "cache_write_tokens", "cache_saving", "cost")
    assert {c: row[c] for c in columns} == {c: summary["totals"][c] for c in columns} == \
        {c: summary["usage"][c] for c in columns}
    assert row["cached_prompt_tokens"] == total and row["cache_write_tokens"] > 0 and row["cache_saving"] > 0
    assert f"{row['cached_prompt_tokens']:,} of {row['prompt_tokens']:,} prompt tokens" in out
    assert f"saving ~${row['cache_saving']:.4f}" in out


def test_under_the_ledger_context_only_the_system_prompt_is_marked_and_read(tmp_path, fake_openrouter):
    """The ledger's window slides, so only the system prompt is a prefix the next request repeats: a
    breakpoint on the newest message would pay a cache write every turn that no later turn reads."""
    run_dir, _ = run(tmp_path, fake_openrouter, "auditor.model=anthropic/claude-sonnet-4", "max_iterations=5",
                     "auditor.context=ledger", "auditor.context_turns=1")
    roles = requests_by_role(fake_openrouter)
    assert len(roles["auditor"]) == 6
    assert all([i for i, m in enumerate(body["messages"]) if marks(m)] == [0] for body in roles["auditor"])
    auditor = [c for c in json.loads((run_dir / "usage.json").read_text())["calls"] if c["tag"] == "auditor"]
    system = auditor[0]["cache_write_tokens"]  # turn 1 writes its system prompt, every later turn reads it
    assert 0 < system < auditor[0]["prompt_tokens"]
    assert all(c["cached_prompt_tokens"] == system and c["cache_write_tokens"] == 0 for c in auditor[1:])


def test_no_breakpoints_for_a_provider_that_caches_by_itself(tmp_path, fake_openrouter):
    run_dir, _ = run(tmp_path, fake_openrouter, "auditor.model=openai/gpt-4.1", "max_iterations=2",
                     "judge=default", "judge.model=anthropic/claude-3.5-haiku")
    roles = requests_by_role(fake_openrouter)
    assert roles["auditor"] and not any(marks(m) for body in roles["auditor"] for m in body["messages"])
    for body in roles["judge"]:  # the judge's system prompt is its stable prefix
        assert [i for i, m in enumerate(body["messages"]) if marks(m)] == [0]
    auditor = [c for c in json.loads((run_dir / "usage.json").read_text())["calls"] if c["tag"] == "auditor"]
    assert auditor[1]["cached_prompt_tokens"] > 0 and auditor[1]["cache_write_tokens"] == 0  # automatic reads


def test_the_cost_split_and_the_caches_saving_reach_the_ledger_summary_end_line_and_inspect_log(
        tmp_path, fake_openrouter):
    """OpenRouter bills one ``usage.cost`` per call (cookbook/administration/usage-accounting.mdx);
    the split into uncached input, cache reads, cache writes and output is priced from litellm's map
    (``openai/gpt-4.1``: input 2e-6, cache read 5e-7 per token) and marked an estimate."""
    pytest.importorskip("inspect_ai.log", reason="the Inspect log needs inspect-ai (the test extra)")
    from inspect_ai.log import read_eval_log

    run_dir, out = run(tmp_path, fake_openrouter, "auditor.model=openai/gpt-4.1", "max_iterations=3",
                       "export.inspect=true", entrypoint=True)
    usage = json.loads((run_dir / "usage.json").read_text())
    auditor = [c for c in usage["calls"] if c["tag"] == "auditor"]
    read = auditor[1]["cached_prompt_tokens"]
    assert read > 0 and auditor[1]["estimated_calls"] == auditor[1]["priced_calls"] == 1
    assert auditor[1]["cache_read_cost"] == pytest.approx(read * 5e-7)
    assert auditor[1]["input_cost"] == pytest.approx((auditor[1]["prompt_tokens"] - read) * 2e-6)
    assert auditor[1]["cache_saving"] == pytest.approx(read * (2e-6 - 5e-7))
    saving = sum(c["cache_saving"] for c in usage["calls"])
    assert saving > 0 and usage["totals"]["cache_saving"] == pytest.approx(saving)
    assert usage["by_tag"]["auditor"]["cache_saving"] == pytest.approx(sum(c["cache_saving"] for c in auditor))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["usage"]["cache_saving"] == pytest.approx(saving)
    assert summary["usage"]["estimated_calls"] == usage["totals"]["estimated_calls"] > 0
    assert f"read from the provider's prompt cache, saving ~${saving:.4f} (estimate)" in out
    (path,) = run_dir.glob("*.eval")
    exported = read_eval_log(str(path)).stats.model_usage["openai/gpt-4.1"]
    by_model = usage["by_model"]["openai/gpt-4.1"]
    assert exported.input_tokens_cache_read == by_model["cached_prompt_tokens"] > 0
    assert exported.input_tokens == by_model["prompt_tokens"] - by_model["cached_prompt_tokens"]
    assert exported.total_tokens == by_model["prompt_tokens"] + by_model["completion_tokens"]


def test_auto_settles_the_context_at_the_start_and_saves_the_mode_it_chose(tmp_path, fake_openrouter):
    """The shipped default ``auditor.context=auto``: a caching provider within its break-even gets the full
    transcript, a model no provider caches the ledger; each run's config.yaml says which, and the run
    says why in its first lines."""
    cached, out = run(tmp_path / "cached", fake_openrouter, "auditor.model=anthropic/claude-sonnet-4",
                      "max_iterations=4")
    uncached, out2 = run(tmp_path / "uncached", fake_openrouter, f"auditor.model={AUDITOR_MODEL}", "max_iterations=4")
    saved = [(d / "config.yaml").read_text() for d in (cached, uncached)]
    assert "context: full" in saved[0] and "context: ledger" in saved[1] and "context: auto" not in "".join(saved)
    assert "auditor.context=auto: full (anthropic/ caches prompts" in out
    assert f"auditor.context=auto: ledger/2 ({AUDITOR_MODEL} is in no row of prompt_caching" in out2
    turn4 = json.loads((uncached / "auditor_turns" / "004.json").read_text())["input_messages"]
    assert "iterations 1 are not shown in full" in turn4[1]["content"]  # the ledger from turn 4
