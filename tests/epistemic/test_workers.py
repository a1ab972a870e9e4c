"""``workers=2``: a run's calls made by two forked processes, end to end against the loopback server.

The run must be the run of one process: the same answers, metrics and ledger records (who served
each call, its cached and reasoning tokens) for a server that answers by the card alone, every call
once in one ledger, the budget stopping it, and a worker that dies stopping it with one line that
says how to resume.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

from omegaconf import OmegaConf

from audit.io.journal import read_records
from audit.llm.workers import worker_count
from audit.runs.tables import CACHE_COLUMNS, load_tables
from audit.testing.replies import Hold, chat_reply, estimate_tokens

from .test_interrupts import ARGS, CARDS, answer, finished_run, start
from .test_main import run_cli

PROVIDERS = ("DeepInfra", "Novita")
SMALL = (*(a for a in ARGS[:-1] if not a.startswith("cards.num_per_type")), "cards.num_per_type=2")
"""The interrupt tests' run at two cards per kind: enough for both workers and both providers to have calls
(the comparison is record by record, so more cards prove no more and cost ~30 ms of CPU each, twice)."""
SMALL_CARDS = 18  # cards.num_per_type=2 x 3 labels x 3 suites


def served(request) -> object:
    """A reply that names who served it as OpenRouter documents (API overview, "CompletionsResponse
    format": ``provider``, ``native_finish_reason`` beside the normalised ``finish_reason``, ``reasoning``,
    ``usage.completion_tokens_details.reasoning_tokens`` and ``usage.prompt_tokens_details``'s
    ``cached_tokens`` and ``cache_write_tokens``), each decided by the card alone, so the run's records
    do not depend on which worker or in what order the calls were made."""
    question = request.json["messages"][-1]["content"]
    h = sum(map(ord, question))
    return chat_reply(f'{{"answer": "{("YES", "NO", "UNKNOWN")[h % 3]}"}}', provider=PROVIDERS[h % 2],
                      native_finish_reason=("end_turn", "eos")[h % 2], reasoning="The card asks about a river.",
                      reasoning_tokens=5 + h % 7,
                      usage={"prompt_tokens_details": {"cached_tokens": 10 + h % 13, "cache_write_tokens": h % 3}})


def details(reply) -> tuple[str, int, int, int]:
    """What a ledger record keeps of a scripted reply: provider, cached and written prompt tokens,
    completion tokens (the reasoning ones included)."""
    body = reply.body
    cache = body.usage["prompt_tokens_details"]
    return body.provider, cache["cached_tokens"], cache["cache_write_tokens"], \
        estimate_tokens(body.text) + body.reasoning_tokens


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


def test_two_workers_give_the_answers_metrics_and_ledger_of_one(tmp_path, fake_openrouter):
    """The same answers, metrics and ledger, record by record: each call's provider, cached and
    cache-written prompt tokens, reasoning tokens (in ``completion_tokens``, as OpenRouter counts them),
    cost and its split, as the server sent them for that card (:func:`served`)."""
    fake_openrouter.handler = served
    one = finished_run(tmp_path, fake_openrouter, *SMALL, f"output_dir={tmp_path / 'one'}", "workers=1")
    assert len(fake_openrouter.requests) == SMALL_CARDS
    sent = Counter(details(served(r)) for r in fake_openrouter.chat_requests())
    fake_openrouter.reset()
    fake_openrouter.handler = served
    proc = run_cli(tmp_path, *SMALL, f"output_dir={tmp_path / 'two'}", "workers=2", env=fake_openrouter.env())
    assert proc.returncode == 0, proc.stderr
    assert "calls made by 2 worker processes" in proc.stdout and proc.stderr == ""
    two = Path(proc.stdout.rsplit("run dir: ", 1)[1].strip())
    assert len(fake_openrouter.requests) == SMALL_CARDS  # each card asked once, by one of the two
    assert rows(two) == rows(one)
    assert [OmegaConf.load(d / "config.yaml").workers for d in (one, two)] == [1, 2]
    assert json.loads((two / "metrics.json").read_text()) == json.loads((one / "metrics.json").read_text())
    usage = [json.loads((d / "usage.json").read_text()) for d in (one, two)]
    assert usage[1]["totals"] == usage[0]["totals"] | {"latency_s": usage[1]["totals"]["latency_s"]}
    # one writer: the journal holds each call once, whole lines only
    assert len(read_records(two / "usage.jsonl")) == len((two / "usage.jsonl").read_text().splitlines()) == SMALL_CARDS
    # who served each call and its token details, as the server sent them, whichever process made the call
    assert Counter(details(served(r)) for r in fake_openrouter.chat_requests()) == sent
    records = {d: [{k: v for k, v in r.items() if k != "latency_s"} for r in read_records(d / "usage.jsonl")]
               for d in (one, two)}
    for made in records.values():
        assert Counter((r["provider"], r["cached_prompt_tokens"], r["cache_write_tokens"], r["completion_tokens"])
                       for r in made) == sent
        assert all(r["priced_calls"] == 1 and r["cache_saving"] for r in made)
    assert sorted(records[two], key=json.dumps) == sorted(records[one], key=json.dumps)
    totals = usage[1]["totals"]
    assert len({provider for provider, *_ in sent}) == 2 and totals["cached_prompt_tokens"] > 0
    assert totals["cache_write_tokens"] > 0 and totals["completion_tokens"] > SMALL_CARDS * 5  # reasoning counted
    # an epistemic run's runs.csv row takes its cache columns from usage.json's totals
    (row,) = load_tables(tmp_path / "two").runs.to_dict("records")
    assert {c: row[c] for c in CACHE_COLUMNS} == {c: totals[c] for c in CACHE_COLUMNS}


def test_the_budget_stops_a_run_with_workers_as_it_stops_one_without(tmp_path, fake_openrouter):
    """Checked as each call takes one of the run's slots: only the calls already in flight pass, and the
    first refusal stops the run (a spent budget is fatal: every later call would be refused too)."""
    sent = []
    for workers in (1, 2):
        fake_openrouter.reset()
        fake_openrouter.handler = answer
        proc = run_cli(tmp_path, *ARGS[:-1], f"output_dir={tmp_path / str(workers)}", f"workers={workers}",
                       "budget.max_cost_usd=0.0000001", env=fake_openrouter.env())
        (line,) = proc.stderr.strip().splitlines()
        assert proc.returncode == 1 and "budget.max_cost_usd=1e-07 is spent" in line and "resume=" in line
        (run_dir,) = (tmp_path / str(workers)).iterdir()
        summary = json.loads((run_dir / "summary.json").read_text())
        # a stop, not a failure (conf/epistemic.yaml, docs/sweeps.md): cancelled, stop reason budget
        assert (summary["status"], summary["stop_reason"]) == ("cancelled", "budget"), summary
        sent.append(len(fake_openrouter.requests))
    # gateway.max_concurrency=4: at most the four calls that took a slot before the first charge reached
    # the server (how many of them did before the stop cancelled the rest is up to timing)
    assert all(1 <= n <= 4 for n in sent), sent


def test_a_killed_worker_stops_the_run_with_one_line_and_it_resumes(tmp_path, fake_openrouter):
    hold = Hold(answer, skip=10)
    fake_openrouter.handler = hold
    proc = start(tmp_path, fake_openrouter, *ARGS, "workers=2")
    try:
        assert hold.wait(), "the run never reached its held requests"
        deadline = time.monotonic() + 60
        children: list[str] = []
        while len(children) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            time.sleep(0.01)
        Path(f"/proc/{children[0]}/stat").read_text()  # a worker of this run, alive
        os.kill(int(children[0]), signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        hold.release()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (out, err)
    (line,) = err.strip().splitlines()
    (run_dir,) = (tmp_path / "out").iterdir()
    assert "gateway worker" in line and "killed by SIGKILL" in line and f"resume={run_dir}" in line
    assert "Traceback" not in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "error" and "killed by SIGKILL" in summary["error"]
    fake_openrouter.reset()
    fake_openrouter.handler = answer
    assert finished_run(tmp_path, fake_openrouter, f"resume={run_dir}") == run_dir
    assert len(rows(run_dir)) == CARDS and all(r["error"] is None for r in rows(run_dir))



def test_by_default_a_run_takes_the_cores_available_and_saves_the_number(tmp_path, fake_openrouter):
    """``workers=auto`` (the default) is resolved when the run starts and saved as a number, so a
    comparison of two runs reads the settings each had."""
    fake_openrouter.handler = answer
    # one card per kind: how many cards a run has does not enter how its workers are resolved
    run_dir = finished_run(tmp_path, fake_openrouter, *(a for a in ARGS if not a.startswith("cards.num_per_type")),
                           "cards.num_per_type=1")
    assert OmegaConf.load(run_dir / "config.yaml").workers == worker_count("auto")
