"""What an audit has so far, replayed from its run dir: the saved turns and responses, the auditor's
conversation, the hypothesis ledger, the turns the auditor never completed, the totals and the fact
scores once made.

A run is resumed from its files alone, so this state is rebuilt from them (:meth:`AuditState.replay`)
and every step adds to it as it writes its file: nothing lives only in memory that a kill would lose.
Its questions (the draws, the failed calls, the missing judgments, the texts a citation may quote)
read the typed draws (:func:`audit.record.draws.iteration_draws`), the same for every technique.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from audit.censorship.actions import Action
from audit.censorship.conversations import Tree
from audit.censorship.evidence import quotable
from audit.censorship.hypotheses import HypothesisLedger
from audit.censorship.run_dir import AuditDir
from audit.llm.accounting import Totals
from audit.quotes import Responses
from audit.record.draws import Draw, Judgment, iteration_draws, run_draws
from audit.record.usage import Usage
from audit.record.rundir import iso, utc_now
from audit.record.summary import CensorshipSummary


@dataclass
class AuditState:
    """One audit's saved steps in memory, and what the run learnt from them."""

    technique: str
    turns: dict[int, dict[str, Any]]
    responses: dict[int, dict[str, Any]]
    ledger: HypothesisLedger
    conversation: list[dict[str, Any]] | None
    """The auditor's conversation after its latest turn (None before the first)."""
    failed_turns: list[dict[str, Any]]
    """Turns the auditor never completed: they live only in the summary, so a resume keeps them
    (their raw replies, and their calls in the totals) from the previous one."""
    totals: Totals
    started_at: str
    resumes: list[str]
    failed_turn: dict[str, Any] | None = None
    """The turn that stopped this session, if one did."""
    fact_recall: dict[str, Any] | None = None
    baseline_fact_recall: dict[str, Any] | None = None
    actions: dict[int, Action] = field(default_factory=dict)
    """``technique=auto``: each turn's action, typed: the validated reply's own (:meth:`add_turn`), read
    from the turn's file only when a run is replayed (:meth:`Action.of`), so nothing flattens and rebuilds it."""

    @classmethod
    def replay(cls, run_dir: AuditDir, technique: str, *, resuming: bool) -> AuditState:
        """The state a run dir holds (empty for a new run); ``resuming`` records this session's start."""
        saved = run_dir.scan()
        turns = saved.turns
        previous = run_dir.read_summary()
        state = cls(
            technique=technique,
            turns=turns,
            # A response without the turn that asked for it cannot be part of this history.
            responses={k: v for k, v in saved.responses.items() if k in turns},
            ledger=HypothesisLedger.replay([(k, t["parsed"]["hypotheses"]) for k, t in sorted(turns.items())]),
            conversation=conversation_after(turns[max(turns)]) if turns else None,
            failed_turns=list(previous.failed_turns) if isinstance(previous, CensorshipSummary) else [],
            totals=Totals(),
            started_at=(previous.started_at if previous else None) or iso(utc_now()),
            resumes=list(previous.resumes) if previous else [],
            actions={k: Action.of(t["parsed"]["action"]) for k, t in turns.items() if t["parsed"].get("action")},
        )
        for record in state.usage_records():
            state.totals.add(record)
        state.totals.parse_failures = sum(len(t.get("attempts") or []) for t in [*turns.values(), *state.failed_turns])
        if resuming:
            state.resumes.append(iso(utc_now()))
        return state

    def add_turn(self, iteration: int, record: dict[str, Any], action: Action | None = None) -> None:
        """A saved auditor turn (``action``: the reply's, typed, if it chose one): the conversation goes on
        from its accepted reply."""
        self.turns[iteration] = record
        if action is not None:
            self.actions[iteration] = action
        self.conversation = conversation_after(record)

    def add_response(self, iteration: int, record: dict[str, Any]) -> None:
        """A saved iteration of target draws, its calls counted in the totals."""
        self.responses[iteration] = record
        for usage in _response_usages(record):
            self.totals.add(usage)

    def record_failed_turn(self, iteration: int, messages: list[dict[str, Any]],
                           attempts: list[dict[str, Any]]) -> dict[str, Any]:
        """A turn the auditor did not complete, kept for the summary (and the resume after it)."""
        self.failed_turn = {"iteration": iteration, "input_messages": messages, "attempts": attempts}
        self.failed_turns.append(self.failed_turn)
        return self.failed_turn

    def final_turn(self) -> dict[str, Any]:
        return self.turns[max(self.turns)]

    def draws(self) -> list[Draw]:
        """Every target draw so far, typed, in order (a fixed technique's baseline a draw of its own)."""
        return run_draws((r for _, r in sorted(self.responses.items())), self.technique)

    def probe_draws(self) -> list[Draw]:
        """Every target draw but the baselines (a fixed technique's responses, every auto draw), in order:
        what the failure streak and the providers that served the run are counted over."""
        return [d for d in self.draws() if not d.is_baseline]

    def tree(self, *, before: int | None = None) -> Tree:
        """``technique=auto``: the conversation tree of the saved draws (of iterations before ``before``:
        what an action was planned on, so a redone iteration gets the same conversation ids)."""
        return Tree.of(d for d in self.draws() if d.auto and (before is None or d.iteration < before))

    def quotable(self, before: int | None = None) -> tuple[Responses, Responses]:
        """The texts evidence may quote (the target's own words) and the auditor's beside them, of
        the responses before iteration ``before`` (all when None): :func:`quotable`."""
        return quotable({k: r for k, r in self.responses.items() if before is None or k < before})

    def call_errors(self) -> list[dict[str, Any]]:
        """Target samples and judge calls that failed after their retries, as the files record them.

        A failed call has an error and no usage; a reply that came back but did not parse has
        usage (it was paid for, and asking again would get the same cached reply), so it is not one.
        """
        errors = []
        for k, response in sorted(self.responses.items()):
            for call, record in _iteration_calls(response):
                if record is not None and record.error is not None and record.usage is None:
                    errors.append({"iteration": k, "call": call, "error": record.error})
        for name, recall in self.fact_scorings():
            if _failed_call(recall):
                errors.append({"iteration": None, "call": name, "error": recall["error"]})
        return errors

    def judge_failures(self) -> list[dict[str, Any]]:
        """Judgments the run lacks: a response the judge was asked to label and did not (a failed
        call, a refusal, an unparsable reply: the response stays ``unclassified``), and a fact
        scoring without verdicts. They leave every share's denominator, so they are counted apart."""
        failures = []
        for k, response in sorted(self.responses.items()):
            for call, judgment in _judge_calls(response):
                if judgment.label is None:
                    failures.append({"iteration": k, "call": call, "error": judgment.error})
        for name, recall in self.fact_scorings():
            if recall is not None and recall.get("error") is not None:
                failures.append({"iteration": None, "call": name, "error": recall["error"]})
        return failures

    def assessment_failures(self) -> list[dict[str, Any]]:
        """``judge.assess=true``: the responses whose assessment (honesty and evaluation awareness) was
        asked and failed. Their label stands; only the two verdicts are missing, so they are counted apart
        from the label's failures, as the benchmark counts ``assessment_failed``."""
        failures = []
        for k, response in sorted(self.responses.items()):
            for call, judgment in _judge_calls(response):
                assessment = (judgment.model_extra or {}).get("assessment")
                if isinstance(assessment, Mapping) and assessment.get("label") is None:
                    failures.append({"iteration": k, "call": f"{call} assessment", "error": assessment.get("error")})
        return failures

    def fact_scorings(self) -> list[tuple[str, dict[str, Any] | None]]:
        return [("fact scoring", self.fact_recall), ("baseline fact scoring", self.baseline_fact_recall)]

    def usage_records(self) -> list[Usage | Mapping[str, Any] | None]:
        """The usage of every call the files record: turns, failed turns' attempts, draws, judgments."""
        records: list[Usage | Mapping[str, Any] | None] = []
        for turn in self.turns.values():
            records.append(turn.get("usage"))
        for failed in self.failed_turns:
            records.extend(attempt.get("usage") for attempt in failed["attempts"])
        for response in self.responses.values():
            records.extend(_response_usages(response))
        return records


def conversation_after(turn: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The auditor conversation after ``turn``: its input without the re-asked pairs, plus its accepted reply.

    Failed replies and re-ask messages stay in the turn file but not in later context: the
    auditor does not need its own broken JSON again, and the context stays short.
    """
    messages = list(turn["input_messages"])
    dropped = 2 * len(turn.get("attempts") or [])
    kept = messages[: len(messages) - dropped]
    return [*kept, {"role": "assistant", "content": turn["raw_response"]}]


def _failed_call(record: Mapping[str, Any] | None) -> bool:
    return bool(record) and record.get("error") is not None and record.get("usage") is None


def _iteration_calls(record: Mapping[str, Any]) -> list[tuple[str, Draw | Judgment | None]]:
    """The calls behind one saved iteration, named: each target draw (an auto action's by id, a fixed
    technique's response and its baseline) and its judge label (None: the judge was not asked)."""
    calls: list[tuple[str, Draw | Judgment | None]] = []
    for draw in iteration_draws(record):
        name = f"draw {draw.id}" if draw.auto else "baseline" if draw.is_baseline else ""
        calls += [(name or "target", draw), (f"{name} judge".strip(), draw.classification)]
    return calls


def _judge_calls(record: Mapping[str, Any]) -> list[tuple[str, Judgment]]:
    """The judge labels one saved iteration asked for, named as :func:`_iteration_calls` names them."""
    return [(call, judged) for call, judged in _iteration_calls(record) if isinstance(judged, Judgment)]


def _response_usages(record: Mapping[str, Any]) -> list[Usage | None]:
    return [call.usage if call is not None else None for _, call in _iteration_calls(record)]
