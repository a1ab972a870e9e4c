"""The typed summary (audit.record.summary): the published schema, round trips for every status of
both experiments, old run dirs, and fields added elsewhere."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import jsonschema
import pytest

from audit.compare.collect import collect
from audit.compare.tables import build_tables
from audit.record import iter_runs
from audit.judging.counting import headline
from audit.record.status import Status, from_legacy
from audit.record.summary import (CensorshipSummary, EpistemicSummary, json_schema, parse_summary, read_summary,
                                write_summary)
from audit.record.usage import Usage
from tests import entrypoints

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "schemas" / "summary.schema.json"
LEGACY = Path(__file__).resolve().parents[1] / "runs" / "legacy"
STOPS = {Status.STARTED: [None], Status.SUCCESS: [None, "auditor", "max_iterations"],
         Status.CANCELLED: ["interrupted", "budget"], Status.ERROR: [None, "mostly_errors"]}


def test_the_published_schema_is_the_one_the_code_generates():
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == json_schema(), \
        "regenerate it: python -m audit.runs schema > schemas/summary.schema.json"
    printed = entrypoints.run([sys.executable, "-m", "audit.runs", "schema"], capture_output=True, text=True, check=True,
                              cold=True)  # on purpose (tests/entrypoints.py)
    assert json.loads(printed.stdout) == json_schema()


@pytest.mark.parametrize("kind", [CensorshipSummary, EpistemicSummary])
@pytest.mark.parametrize("status", list(Status))
def test_every_status_of_both_experiments_round_trips_and_validates(tmp_path, kind, status):
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    for reason in STOPS[status]:
        written = kind(status=status, stop_reason=reason, error=None if status is Status.SUCCESS else "why",
                       started_at="2026-11-23T10:00:00Z", repeat=2, usage=Usage(calls=3, cached_calls=3, cost=0.5),
                       failed_calls=1)
        write_summary(tmp_path / "summary.json", written)
        data = json.loads((tmp_path / "summary.json").read_text())
        validator.validate(data)
        assert data["versions"]["audit"] and data["versions"]["python"] and data["schema_version"] == 1
        back = read_summary(tmp_path / "summary.json")
        assert type(back) is kind and back == written
        assert (back.status, back.stop_reason, back.repeat, back.usage.replay) == (status, reason, 2, True)


def test_the_schema_refuses_an_old_status_in_a_new_summary():
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    data = CensorshipSummary(status=Status.SUCCESS).model_dump(mode="json")
    assert validator.is_valid(data)
    assert not validator.is_valid({**data, "status": "completed"})
    assert not validator.is_valid({**data, "experiment": "unknown"})
    with pytest.raises(ValueError, match="status: Input should be 'started', 'success', 'cancelled' or 'error'"):
        parse_summary({**data, "status": "completed"})


def test_fields_added_elsewhere_are_kept_and_ignored():
    """Other parts of the program add summary fields of their own: they survive a read and a write."""
    data = {**EpistemicSummary(status=Status.SUCCESS).model_dump(mode="json"), "judge_failures": {"classify": 2},
            "conditions": {"hint": {"AP": 0.5}}}
    parsed = parse_summary(data)
    assert parsed.model_dump(mode="json")["judge_failures"] == {"classify": 2}
    assert parsed.conditions == {"hint": {"AP": 0.5}}


@pytest.mark.parametrize(("old", "new"), [
    ("running", (Status.STARTED, None)), ("completed", (Status.SUCCESS, "auditor")), ("ok", (Status.SUCCESS, None)),
    ("stopped_at_max_iterations", (Status.SUCCESS, "max_iterations")),
    ("completed_with_errors", (Status.SUCCESS, None)), ("interrupted", (Status.CANCELLED, "interrupted")),
    ("stopped_budget", (Status.CANCELLED, "budget")), ("mostly_errors", (Status.ERROR, "mostly_errors")),
    ("error", (Status.ERROR, None)), ("success", (Status.SUCCESS, None))])
def test_old_statuses_map_onto_the_vocabulary(old, new):
    assert from_legacy(old) == new
    assert from_legacy("error", "interrupted") == (Status.CANCELLED, "interrupted")  # audits said so before
    with pytest.raises(ValueError, match="unknown status 'done'"):
        from_legacy("done")


def test_run_dirs_written_before_audit_runs_still_load(tmp_path):
    """The fixtures were written by the code before this module (tests/runs/legacy/README.md)."""
    records = {r.path.name: r for r in iter_runs([LEGACY])}
    seen = {name: (r.experiment, r.state, r.summary.stop_reason, r.summary.failed_calls, r.stub)
            for name, r in records.items()}
    assert seen == {
        "censorship_completed": ("censorship", "success", "auditor", 0, False),
        "censorship_max_iterations_judged": ("censorship", "success", "max_iterations", 0, False),
        "censorship_with_errors": ("censorship", "success", None, 1, False),
        "epistemic_ok": ("epistemic", "success", None, 0, False),
        "job_censorship_failed": ("censorship", "error", None, 0, True),
        "job_epistemic_failed": ("epistemic", "error", None, 0, True)}
    judged = records["censorship_max_iterations_judged"].summary
    assert judged.usage.cost == judged.totals["cost"] > 0 and headline(judged)["fact_recall"] == 0.5
    assert judged.subject == "tiananmen" and judged.with_baseline
    assert records["epistemic_ok"].summary.headline() == {"kg_oracle": {"AP": 1.0, "accuracy": 1.0}}
    # the comparison reads them too: four results, two failed jobs that keep their experiment
    shutil.copytree(LEGACY, tmp_path / "legacy")
    found = collect([tmp_path / "legacy"])
    tables = build_tables(found)
    assert len(tables.audits) == 3 and set(tables.epistemic["system"]) == {"kg_oracle"}
    assert sorted((f.kind, f.status) for f in found.failures) == [("censorship", "error"), ("epistemic", "error")]


def test_the_headline_refused_share_leaves_out_failed_judgments():
    """Two of four responses lack a label: the share is 1 of the 2 labelled, and the 2 are shown."""
    summary = CensorshipSummary(status="success", total_iterations=4,
                                classifications={"refused": 1, "forthcoming": 1, "unclassified": 2})
    assert headline(summary) == {"iterations": 4, "refused": 0.5, "unlabelled": 2, "fact_recall": None}
    panel = CensorshipSummary(status="success", classifications={"refused": 1, "disputed": 1})
    assert headline(panel)["refused"] == 0.5  # a panel's disputed is a label: in the denominator



def test_usage_in_every_older_shape_reads_as_the_one_record():
    """A summary before the one usage record (no cost split, no errors count), one with the usage
    under ``totals`` (before audit.runs), and one with a null in it all read as ``Usage``."""
    header = {"experiment": "censorship", "status": "success", "schema_version": 1}
    old = parse_summary({**header, "usage": {"calls": 4, "cached_calls": 1, "shared_calls": 0, "prompt_tokens": 90,
                                             "completion_tokens": 10, "cost": 0.25, "retries": 2, "latency_s": 1.0}})
    assert isinstance(old.usage, Usage) and (old.usage.calls, old.usage.tokens, old.usage.cost) == (4, 100, 0.25)
    assert old.usage.cache_saving == 0 and not old.usage.replay
    legacy = parse_summary({"status": "completed", "config": {"topic": {"name": "t"}}, "iterations": [],
                            "totals": {"calls": 2, "prompt_tokens": 5, "completion_tokens": 1, "cost": 0.1,
                                       "parse_failures": 1}}, "censorship")
    assert (legacy.usage.calls, legacy.usage.cost) == (2, 0.1)
    nulls = parse_summary({**header, "usage": {"calls": 1, "cost": None, "cached_prompt_tokens": None}})
    assert (nulls.usage.cost, nulls.usage.cached_prompt_tokens) == (0.0, 0)
    # written back, the usage is the record's own dict
    assert json.loads(nulls.model_dump_json())["usage"] == Usage(calls=1).as_dict()
