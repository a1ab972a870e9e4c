"""End to end against the real embedded model (no key, no network): doctor, per-role endpoints,
an epistemic run and the cache. The complete local audit is in test_local_audit.py."""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from audit.llm.embedded import MODEL
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import AUDITOR_MODEL, Script
from tests.real_model.conftest import (DEADLINE, SMOLLM2, assert_exits_soon, assert_sampled_in_family, local_endpoint,
                                       only_run_dir, read, run_cli)


def sample(server, prompt: str) -> str:
    """One chat reply at temperature 1 from the server, over its own HTTP API."""
    body = {"model": "smollm2", "messages": [{"role": "user", "content": prompt}], "max_tokens": 24, "temperature": 1.0}
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.loads(reply.read())["choices"][0]["message"]["content"]


def test_the_seeded_server_replays_a_sample_alone_and_beside_another_request(embedded):
    """Why the session's tests take the same path on every run (conftest's SEED): the same request gets
    the same sampled reply, also while another request shares the server's batch (the judge and the
    baseline run beside the target). Unseeded, two 24-token samples at temperature 1 differ."""
    prompt = "Name a river and say where it flows."
    first = sample(embedded, prompt)
    with ThreadPoolExecutor(2) as pool:
        beside = pool.submit(sample, embedded, "Write one line about the sea.")
        again = sample(embedded, prompt)
        beside.result()
    assert first and again == first


def test_doctor_reports_raw_completions_honoured(embedded, tmp_path):
    """One pair of canaries (``canaries=1``), not the shipped 4: the pairs are there for a load balancer's
    several providers, each judged on its own, and this server is one; one token canary and one content
    canary (24 tokens) reach the same verdict through the same checks."""
    done = run_cli("audit.doctor", local_endpoint(embedded), *SMOLLM2, "canaries=1", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK, raw completions are honoured" in done.stdout


def test_per_role_endpoints_auditor_on_loopback_target_on_real_model(embedded, tmp_path):
    with FakeOpenRouter() as fake:
        fake.handler = Script().handler
        done = run_cli("audit", local_endpoint(embedded), *SMOLLM2, f"auditor.model={AUDITOR_MODEL}", "judge=off",
                       "max_iterations=2", "sampling.max_tokens=40", f"output_dir={tmp_path / 'out'}",
                       "gateway.cache.enabled=false", cwd=tmp_path, env=fake.env())
        assert done.returncode == 0, done.stdout + done.stderr
        paths, n_requests, fake_base = {r.path for r in fake.requests}, len(fake.requests), fake.base_url
    run_dir = only_run_dir(tmp_path / "out")
    assert paths == {"/api/v1/chat/completions"}  # the auditor's calls only: no target call went to the fake
    calls = read(run_dir / "usage.json")["calls"]
    where = {(c["tag"], c["endpoint"], c["api_base"]) for c in calls}
    # the assistant baseline (on by default) goes where the audited model does
    assert where == {("auditor", "openrouter", fake_base), ("audited", "local", embedded.base_url),
                     ("baseline", "local", embedded.base_url)}
    assert sum(c["tag"] == "auditor" for c in calls) == n_requests
    # the embedded model's calls are booked under its name, never the GGUF's path (a home dir names the user)
    assert {c["model"] for c in calls if c["endpoint"] == "local"} == {MODEL}
    assert ".gguf" not in (run_dir / "usage.jsonl").read_text() + (run_dir / "usage.json").read_text()
    assert_sampled_in_family(run_dir, 2)
    config = read(run_dir / "summary.json")["config"]
    assert config["gateway"]["effective"] == {"openrouter": fake_base, "local": embedded.base_url}


ONE_CARD = Path(__file__).with_name("one_card.jsonl")
"""One card (label E, suite standard), word for word the first card ``python -m audit.epistemic
cards.num_per_type=1 cards.suites=[standard]`` generates (2026-11-29), given as ``cards.path``. Each answer is
one real-model call, and what the test shows (both systems answer every card, each answer valid or an error,
the re-run served whole from the cache) does not grow with their number: the three cards of that command
(E, C, U) read 1,198 prompt tokens and wrote 88 in 6 answers; the labels are the same call with other facts.
Generating cards is no model call (tests/epistemic)."""


def epistemic(tmp_path: Path, out: str) -> Path:
    """A ``local=true`` epistemic run, timed from its ``done:`` line to its exit (the exit test of issue 38,
    item 7, for this entrypoint: first with calls served, then with none)."""
    assert_exits_soon(["audit.epistemic", "local=true", "systems=[raw_llm,graph_rag]", f"cards.path={ONE_CARD}",
                       f"output_dir={tmp_path / out}", f"gateway.cache.path={tmp_path / 'cache.sqlite'}", DEADLINE],
                      tmp_path, cold=False)
    return only_run_dir(tmp_path / out)


def test_epistemic_run_on_real_model_then_cached_rerun_sends_nothing(tmp_path):
    """Bounded by its settings: 2 systems x one card (ONE_CARD), 2 answers of at most 20 tokens (conf/system's
    ``max_tokens``), 40 written tokens in all, and a re-run that sends nothing;
    ``local=true`` starts llama.cpp's server and measures its speed in each of the two runs, and each run
    exits within seconds of its ``done:`` line (the exit test of issue 38, item 7, for this entrypoint). Its
    cost is the prompts read more than the tokens written (the 135M model reads ~120 tokens/s and writes ~48
    on one thread; graph_rag's prompts carry the card's facts): measured 2026-11-29, 408 tokens read and 31
    written (raw_llm 165 and 11, graph_rag 243 and 20). With a card a label (1,198 read, 88 written) the test
    took 25.8 CPU-s, now 14.5 (one after the other at load 10-15); with 2 cards a label (2,435 read, 177
    written) and the exit timed in a separate cold run, the two tests took 30.4 + 15.2 CPU-s."""
    run_dir = epistemic(tmp_path, "first")
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["system"] for r in rows} == {"raw_llm:smollm2-135m-instruct",
                                                                 "graph_rag:smollm2-135m-instruct"}
    for row in rows:  # a valid answer, or an error recorded as an error (never a silent UNKNOWN)
        assert (row["pred"] in ("YES", "NO", "UNKNOWN")) != bool(row.get("error")), row
    assert read(run_dir / "metrics.json")
    first = read(run_dir / "usage.json")["totals"]
    assert first["calls"] > 0 and first["cached_calls"] == 0

    rerun = read(epistemic(tmp_path, "second") / "usage.json")["totals"]
    assert rerun["calls"] == first["calls"] and rerun["cached_calls"] == rerun["calls"]
