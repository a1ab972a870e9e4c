"""End to end: the new suites (grounded, negation, held_out, nonexistent) and prompts as a sweep
axis, ``python -m audit.epistemic`` in a subprocess against the loopback server."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from audit.epistemic.systems.llm import load_prompt
from audit.epistemic.used_systems import RECORD, text_digest
from audit.testing.replies import chat_reply
from tests.epistemic.test_main import only_run_dir, run_cli
from tests import entrypoints

SUITES = "cards.suites=[standard,grounded,negation,held_out,nonexistent]"


def test_a_prompt_sweep_over_the_new_suites(tmp_path: Path, fake_openrouter) -> None:
    fake_openrouter.default_reply = chat_reply('{"answer": "NO"}')
    proc = run_cli(tmp_path, "-m", "prompt=default,abstain_encouraged", "system=raw_llm", "system.model=acme/tiny",
                   "cards.num_per_type=2", SUITES, env=fake_openrouter.env())
    assert proc.returncode == 0, proc.stderr
    (sweep,) = (tmp_path / "multirun").iterdir()
    systems_prompts = set()
    for job, prompt in (("0", "default"), ("1", "abstain_encouraged")):
        (run_dir,) = (sweep / job).glob("rivers_has_mouth_*")
        assert f"name: {prompt}" in (run_dir / "config.yaml").read_text()  # the prompt is recorded in the run
        rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
        assert len(rows) == 3 * 3 * 2 + 2 + 2  # 3 suites x E/C/U x 2, then 2 U-only suites
        assert {r["u_kind"] for r in rows if r["label"] == "U"} == {"open_world", "held_out", "nonexistent"}
        metrics = json.loads((run_dir / "metrics.json").read_text())["raw_llm:acme/tiny"]
        assert {k: v["metrics"]["NO_on_U"]["value"] for k, v in metrics["u_kinds"].items()} == \
            {"open_world": 1.0, "held_out": 1.0, "nonexistent": 1.0}
        assert set(metrics["suites"]) == {"standard", "grounded", "negation", "held_out", "nonexistent"}
        html = (run_dir / "report.html").read_text()
        assert "Unknowns by kind" in html and "denies a true fact" in html and "Glossary" in html
    requests = fake_openrouter.chat_requests()
    systems_prompts = {r.json["messages"][0]["content"] for r in requests}
    assert len(systems_prompts) == 2  # each job sent its own system prompt ...
    assert len(requests) == 2 * 22  # ... and none was served from the other's cache entries
    assert any("UNKNOWN is always better than guessing" in p for p in systems_prompts)


def test_a_users_own_prompt_file_and_a_systems_extra_body_reach_the_request_and_a_missing_file_is_one_line(
        tmp_path: Path, fake_openrouter) -> None:
    """One run with a prompt file of the user's and a reasoning effort (any extra request field) for its
    system, which passes through to the model (once a run of its own: the two settings meet nowhere but in
    the request, where each is checked); then a prompt file that does not exist."""
    fake_openrouter.default_reply = chat_reply('{"answer": "UNKNOWN"}')
    mine = tmp_path / "mine.txt"
    mine.write_text("Answer only with JSON. Facts are all you know.")
    proc = run_cli(tmp_path, "system=raw_llm", f"prompt.system={mine}", "system.extra_body={reasoning: {effort: low}}",
                   "cards.num_per_type=1", "cards.suites=[negation]", env=fake_openrouter.env())
    assert proc.returncode == 0, proc.stderr
    assert {r.json["messages"][0]["content"] for r in fake_openrouter.chat_requests()} == {mine.read_text()}
    bodies = [r.json for r in fake_openrouter.chat_requests()]
    assert len(bodies) == 3 and all(b.get("reasoning") == {"effort": "low"} for b in bodies), "extra_body reaches it"
    assert all("extra_body" not in b for b in bodies)
    # the run dir says which text it sent (a later edit of mine.txt keeps its name): systems.json, written
    # at the start, holds the system as it ran and each prompt file's text digest, and never the key
    record = (only_run_dir(tmp_path) / RECORD).read_text()
    (used,) = json.loads(record).values()
    assert used["settings"]["prompt"] == {"system": str(mine), "user": "facts_question.txt"}
    assert used["prompt_sha256"] == {"system": text_digest(mine.read_text()),
                                     "user": text_digest(load_prompt("facts_question.txt"))}
    assert fake_openrouter.env()["OPENROUTER_API_KEY"] not in record
    missing = run_cli(tmp_path, "system=raw_llm", f"prompt.system={tmp_path / 'nope.txt'}", env=fake_openrouter.env())
    assert missing.returncode == 1 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def test_a_sweep_over_condition_and_prompt_is_an_axis_of_the_comparison(tmp_path: Path, fake_openrouter) -> None:
    fake_openrouter.default_reply = chat_reply('{"answer": "YES"}')
    proc = run_cli(tmp_path, "-m", "cards.conditions=[closed_book],[in_context,counterfactual]",
                   "prompt=default,abstain_encouraged", "system=raw_llm", "system.model=acme/tiny",
                   "cards.num_per_type=2", "cards.suites=[standard]", env=fake_openrouter.env())
    assert proc.returncode == 0, proc.stderr
    (sweep,) = (tmp_path / "multirun").iterdir()
    runs = sorted(run for job in sweep.iterdir() if job.is_dir() for run in job.glob("rivers_has_mouth_*"))
    assert len(runs) == 4
    conditions = set()
    for run_dir in runs:
        rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
        conditions |= {r["condition"] for r in rows}
    assert conditions == {"closed_book", "in_context", "counterfactual"}
    compared = entrypoints.run([sys.executable, "-m", "audit.compare", str(sweep), "--out", str(tmp_path / "cmp")],
                               capture_output=True, text=True, timeout=120)
    assert compared.returncode == 0, compared.stderr
    matrix = (tmp_path / "cmp" / "epistemic_matrix.csv").read_text()
    header = matrix.splitlines()[0].split(",")
    assert "condition" in header
    found = {line.split(",")[header.index("condition")] for line in matrix.splitlines()[1:]}
    assert found == {"closed_book", "in_context", "counterfactual"}
    # each prompt is its own cell (read from each run's config.yaml), never repeats of the other's cards
    cells = list(csv.DictReader(io.StringIO(matrix)))
    assert {c["settings"].split(" · ")[0] for c in cells} == {"prompt=default", "prompt=abstain_encouraged"}
    assert {c["runs"] for c in cells} == {"1"}
