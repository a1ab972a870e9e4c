"""``summary.json``, typed: a header every run shares plus one body per experiment.

One pydantic definition gives the writer, the reader and the JSON Schema published at
``schemas/summary.schema.json`` (``python -m audit.runs schema`` prints it). The file is flat: the
header's fields and the body's sit side by side, so ``jq .status`` and ``jq .fact_recall`` keep
working and a field another part of the program adds merges without touching this module (the
models allow extra fields; readers ignore what they do not know).

A failed sweep job that never made a run dir leaves a summary with the header only (a
*stub*): its experiment, ``status: error`` and the error.

Reading is tolerant of history: :func:`parse_summary` takes what run dirs before this module
wrote (no ``experiment``, seven status names, the usage under ``totals``) and returns the
same types.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, TypeAdapter, ValidationError

from audit.io.atomic import overwrite_in_place, read_json_saved, write_json
from audit.record.status import Status, StopReason, from_legacy
from audit.record.usage import FIELDS as USAGE_FIELDS
from audit.record.usage import Usage

SCHEMA_VERSION = 1
SUMMARY = "summary.json"
CENSORSHIP, EPISTEMIC, BENCHMARK = "censorship", "epistemic", "benchmark"
EXPERIMENTS = (CENSORSHIP, EPISTEMIC, BENCHMARK)
ENTRYPOINTS = {CENSORSHIP: "audit", EPISTEMIC: "audit.epistemic", BENCHMARK: "audit.benchmark"}
"""``python -m <entrypoint>`` of each experiment (the command that resumes its runs)."""


def _stored_usage(value: Any) -> Any:
    """Any usage mapping a run ever wrote, read as the one record (unknown keys ignored)."""
    return Usage.of(value) if isinstance(value, Mapping) else value


StoredUsage = Annotated[Usage | None, BeforeValidator(_stored_usage), PlainSerializer(Usage.as_dict, when_used="unless-none")]
"""A usage record in a typed run file (summary, draw, judgment, turn): read from any version, written
as :meth:`Usage.as_dict` writes it."""


class Header(BaseModel):
    """What every run records, whatever the experiment."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = SCHEMA_VERSION
    experiment: Literal["censorship", "epistemic", "benchmark"]
    status: Status
    stop_reason: StopReason | None = None
    error: str | None = None
    started_at: str | None = Field(None, description="UTC, 2024-01-15T10:30:05Z")
    finished_at: str | None = Field(None, description="UTC; null while the run is started")
    resumes: list[str] = Field(default_factory=list, description="UTC start of each resumed session")
    repeat: int = Field(0, description="the sample index (samples=k runs repeats 0..k-1)")
    usage: StoredUsage = Field(None, description="what the run's model calls used (audit.record.usage.Usage)")
    failed_calls: int = Field(0, description="calls that failed after their retries (a resume redoes them)")
    versions: dict[str, str] = Field(default_factory=dict, description="audit, python and litellm versions")

    @property
    def subject(self) -> str:
        """What the run is about: topic (censorship) or domain/predicate (epistemic)."""
        return ""

    @property
    def models(self) -> list[str]:
        """The model ids the run called (or the systems it ran)."""
        return []

    def headline(self) -> dict[str, Any]:
        """A few figures that say how the run came out (for the run index)."""
        return {}


class CensorshipSummary(Header):
    """A censorship audit (:mod:`audit.censorship.loop`); field meanings in docs/reporting.md ("The run record")."""

    experiment: Literal["censorship"] = CENSORSHIP
    config: dict[str, Any] | None = None
    total_iterations: int = 0
    final_hypotheses: list[dict[str, Any]] = Field(default_factory=list)
    final_summary: dict[str, Any] | None = None
    technique: str | None = None
    with_baseline: bool = False
    totals: dict[str, Any] = Field(default_factory=dict, description="usage plus parse failures")
    evidence: dict[str, Any] = Field(default_factory=dict)
    classifications: dict[str, int] = Field(default_factory=dict)
    baseline_classifications: dict[str, int] | None = None
    draw_classifications: dict[str, dict[str, int]] | None = Field(
        None, description="technique=auto: judge labels per technique of the draws (each draw counted once)")
    fact_recall: dict[str, Any] | None = None
    baseline_fact_recall: dict[str, Any] | None = None
    hypothesis_history: dict[str, Any] = Field(default_factory=dict)
    audited_errors: int = 0
    blocked: dict[str, int] | None = Field(
        None, description="draws a filter between the user and the model blocked (a typed 400 or a guardrail's or "
                          "moderation's 403), per comparison cell; never judged, never a failure; null: a run "
                          "written before blocks were counted")
    failed_turn: dict[str, Any] | None = None
    failed_turns: list[dict[str, Any]] = Field(default_factory=list)
    call_errors: list[dict[str, Any]] = Field(default_factory=list)
    fact_scoring: str | None = Field(None, description="scored | off: ... | n/a: ... | failed: ... (why recall is what it is)")
    judge_failures: list[dict[str, Any]] = Field(
        default_factory=list, description="judgments the run lacks ({iteration, call, error}): out of every denominator")
    assessment_failures: list[dict[str, Any]] = Field(
        default_factory=list, description="judge.assess=true: honesty and awareness verdicts the run lacks ({iteration, "
                                          "call, error}): out of both verdicts' denominators, the label unaffected")
    probe_language: dict[str, Any] | None = Field(None, description="measured language of the probes: expected, counts, mismatched")
    repairs: list[dict[str, Any]] = Field(default_factory=list, description="auditor replies repaired by rule ({iteration, repair})")
    judge_panel: dict[str, Any] | None = Field(
        None, description="a judge panel's members, samples, disputed and failed counts, member failures and "
                          "agreement (alpha, pairwise kappa, 95% intervals, n); null for a single judge")
    served: dict[str, Any] | None = Field(
        None, description="providers that served the target's draws ({providers: {name: draws}, pin, outcomes, "
                          "flag}); flag says why the draws may not all be raw draws of the pinned provider")
    note: str | None = None

    def config_node(self, key: str) -> dict[str, Any]:
        node = (self.config or {}).get(key)
        return node if isinstance(node, dict) else {}

    @property
    def topic(self) -> str:
        return str(self.config_node("topic").get("name") or "")

    @property
    def subject(self) -> str:
        return self.topic

    @property
    def models(self) -> list[str]:
        return [str(m) for m in (self.config_node("audited").get("model"), self.config_node("auditor").get("model"))
                if m]


class EpistemicSummary(Header):
    """An epistemic-confusion run (:mod:`audit.epistemic.pipeline`)."""

    experiment: Literal["epistemic"] = EPISTEMIC
    stage: str = "all"
    run_dir: str | None = None
    cards: int | None = None
    cards_digest: str | None = Field(None, description="hash of the cards asked: runs with one digest answered the same cards")
    domain: str | None = None
    predicate: str | None = None
    answered: int | None = None
    expected_answers: int | None = None
    systems: dict[str, dict[str, Any]] = Field(default_factory=dict,
                                               description="per system: rows, errors, headline rates")
    answer_errors: dict[str, list[int]] = Field(default_factory=dict, description="per system: [errors, answers]")
    results: str | None = Field(None, description="stage=metrics|report: the results files scored")

    @property
    def subject(self) -> str:
        return "/".join(p for p in (self.domain, self.predicate) if p)

    @property
    def models(self) -> list[str]:
        return list(self.systems)

    def headline(self) -> dict[str, Any]:
        return {system: {k: h.get(k) for k in ("AP", "accuracy")} for system, h in self.systems.items()}


class BenchmarkSummary(Header):
    """A fixed-question benchmark run (:mod:`audit.benchmark.run`); field meanings in docs/benchmark.md."""

    experiment: Literal["benchmark"] = BENCHMARK
    config: dict[str, Any] | None = None
    question_set: str | None = None
    questions: dict[str, int] = Field(default_factory=dict, description="questions asked per kind (censored, control)")
    audited: str | None = Field(None, description="the target's model id")
    reference: str | None = Field(None, description="the reference model's id (null: none)")
    technique: str | None = None
    framing: str | None = None
    rollouts: int = 1
    expected_draws: int = 0
    draws: int = Field(0, description="draws on disk (target and reference)")
    outcomes: dict[str, int] = Field(default_factory=dict, description="draws per outcome (answer, empty, failed ...)")
    judge_failures: int = Field(0, description="draws with a failed judgment (label, facts or assessment): out of "
                                              "that judgment's denominators")
    categories: list[dict[str, Any]] = Field(
        default_factory=list, description="per role, kind and category: questions, draws, refusal share, fact recall, "
                                          "providers (and mixed_providers: served by more than one)")
    served: dict[str, Any] | None = Field(
        None, description="providers that served the target's draws, as an audit's served block ({providers: "
                          "{name: draws}, pin, outcomes, run_on, flag})")
    reference_served: dict[str, Any] | None = Field(
        None, description="the same for the reference model's draws (never pooled with the target's)")

    @property
    def subject(self) -> str:
        return f"{self.question_set or ''} ({self.framing})" if self.framing else self.question_set or ""

    @property
    def models(self) -> list[str]:
        return [m for m in (self.audited, self.reference) if m]


Summary = Annotated[CensorshipSummary | EpistemicSummary | BenchmarkSummary, Field(discriminator="experiment")]
SUMMARY_TYPES: dict[str, type[CensorshipSummary | EpistemicSummary | BenchmarkSummary]] = {
    CENSORSHIP: CensorshipSummary, EPISTEMIC: EpistemicSummary, BENCHMARK: BenchmarkSummary}
"""Each experiment's summary record (a failed job's stub is written as its experiment's)."""
_ADAPTER: TypeAdapter[CensorshipSummary | EpistemicSummary | BenchmarkSummary] = TypeAdapter(Summary)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of ``summary.json`` (published as ``schemas/summary.schema.json``)."""
    schema = _ADAPTER.json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "summary.json",
            "description": "The record of one run of python -m audit, python -m audit.epistemic or "
                           "python -m audit.benchmark "
                           "(see docs/reporting.md, 'The run record').", **schema}


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """The versions a run records: this package, Python and litellm (when installed)."""
    found = {"audit": metadata.version("audit"), "python": platform.python_version()}
    try:
        found["litellm"] = metadata.version("litellm")
    except metadata.PackageNotFoundError:
        pass
    return found


def guess_experiment(data: Mapping[str, Any]) -> str | None:
    """Which experiment an old summary (no ``experiment`` key) belongs to, by its keys."""
    if "stage" in data:
        return EPISTEMIC
    config = data.get("config")
    if "totals" in data or (isinstance(config, Mapping) and "topic" in config):
        return CENSORSHIP
    return None


def parse_summary(data: Any, experiment: str | None = None) -> CensorshipSummary | EpistemicSummary | BenchmarkSummary:
    """A summary from its JSON object, old or new; ``experiment`` is the reader's guess (from the
    run dir's files) when the summary does not say. Raises ``ValueError`` with a short reason."""
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object, found {type(data).__name__}")
    data = dict(data)
    if "schema_version" not in data:
        data = _upgrade(data, experiment)
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:] or first["loc"])
        raise ValueError(f"{where or 'summary'}: {first['msg']}"
                         f"{f' ({exc.error_count() - 1} more)' if exc.error_count() > 1 else ''}") from None


def _upgrade(data: dict[str, Any], experiment: str | None) -> dict[str, Any]:
    """A summary written before the typed run record, in today's shape (nothing is dropped)."""
    kind = data.get("experiment") or guess_experiment(data) or experiment
    if kind not in EXPERIMENTS:
        raise ValueError("says neither experiment (no 'experiment', and its keys match neither)")
    status, reason = from_legacy(data.get("status"), data.get("error"))
    upgraded: dict[str, Any] = {**data, "schema_version": 0, "experiment": kind, "status": status.value,
                                "stop_reason": reason}
    if kind == CENSORSHIP:
        config = data.get("config") if isinstance(data.get("config"), Mapping) else {}
        upgraded.setdefault("repeat", config.get("repeat") or 0)
        totals = data.get("totals")
        if isinstance(totals, Mapping) and "usage" not in data:
            upgraded["usage"] = {k: v for k, v in totals.items() if k in USAGE_FIELDS}
        upgraded.setdefault("failed_calls", len(data.get("call_errors") or []))
    else:
        errors = data.get("answer_errors") or {}
        if isinstance(errors, Mapping):
            upgraded.setdefault("failed_calls", sum(int(e[0]) for e in errors.values()
                                                    if isinstance(e, list) and e and isinstance(e[0], int)))
    return upgraded


def read_summary(path: Path, experiment: str | None = None) -> CensorshipSummary | EpistemicSummary | BenchmarkSummary:
    """``summary.json`` at ``path``; ``ValueError`` naming the file and the problem."""
    data = read_json_saved(path)
    try:
        return parse_summary(data, experiment)
    except ValueError as exc:
        raise ValueError(f"{path.name}: {exc}") from None


def write_summary(path: Path, summary: Header) -> None:
    """Write ``summary`` atomically, with the versions of this program and schema version."""
    write_json(path, _stamped(summary).model_dump(mode="json"))


def _stamped(summary: Header) -> Header:
    if not summary.versions:
        summary.versions = versions()
    summary.schema_version = SCHEMA_VERSION
    return summary


def write_final_summary(path: Path, full: Header, short: Header) -> None:
    """The summary of a run that is ending, written whatever a full disk allows (both experiments).

    The full summary grows with the run, so a full disk may refuse it while a ``short`` one
    (status, error, what is on disk) still fits as a new file; on a disk with no free block at all
    the short one goes over the stale summary's own blocks (:func:`audit.io.atomic.overwrite_in_place`).
    If even that fails, the stale summary is removed rather than left saying ``started`` and the OS
    error, naming ``summary.json``, is raised for the run's one line (a resume rebuilds it).
    """
    for summary in (full, short):
        try:
            write_summary(path, summary)
            return
        except OSError as exc:
            refused = exc
    if not path.is_file():
        raise refused
    try:
        overwrite_in_place(path, json.dumps(_stamped(short).model_dump(mode="json"), ensure_ascii=False) + "\n")
    except OSError:
        path.unlink(missing_ok=True)
        raise


def served_text(providers: Mapping[str, Any]) -> str:
    """Who served a set of draws and how many each, ``Alpha 2, Beta 1`` (sorted by name): how runs.csv,
    the comparison's cells and the benchmark's show a served provider count."""
    return ", ".join(f"{name} {int(n)}" for name, n in sorted(providers.items()))


def served_names(text: str) -> frozenset[str]:
    """The providers a :func:`served_text` names, without their counts."""
    return frozenset(part.rsplit(" ", 1)[0] for part in str(text).split(", ") if part)


def pin_text(pin: Any) -> str:
    """A provider pin as runs.csv and the comparison show it: compact JSON, '' for none (load-balanced)."""
    return "" if pin is None else json.dumps(pin, sort_keys=True, separators=(",", ":"))


def served_note(summary: Any) -> str:
    """The end line's warning when a run's draws came from more than one provider or off the pin
    (the target's, and a benchmark's reference model's apart)."""
    notes = []
    for field, whose in (("served", "target"), ("reference_served", "reference")):
        served = getattr(summary, field, None) or {}
        if served.get("flag"):
            notes.append(f"\nWARNING: {whose} draws {served['flag']} (summary.json: {field})")
    return "".join(notes)
