"""What one iteration sends to the target: a fixed technique, or the action ``technique=auto``'s
auditor chose from its menu.

A fixed technique is a menu of one action: sample the turn's probe with the run's technique (and its
assistant baseline, when asked). Both kinds answer every question about the run's kind through one
interface (:class:`Actions`): what the auditor's reply may ask for (each extends its reply menu of
:mod:`~audit.censorship.schema`), the OUTPUT FORMAT it is shown, the next turn's message, whether a
reply's action can be sent, the draws it makes, the draws left. ``Plan.from_config`` builds one; the
auditor's turn and the loop ask it and never which kind of run they drive. Each writes the files and sends
the requests it always did (a fixed iteration's record with its ``baseline``, an auto iteration's
``draws``): the exact-bytes tests and the cache identity of every draw do not depend on this split.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from audit.censorship.actions import Action
from audit.censorship.auditor_context import conversation_ends
from audit.censorship.auto_view import auto_turn_message
from audit.censorship.action_kinds import check_action, plan_draws, probe_plan
from audit.censorship.conversations import answered
from audit.censorship.language import measure as measure_language
from audit.censorship.prompts import auto_output_format, turn_message
from audit.censorship.schema import Menu, OneProbe, ReplyError, ReplyMenu
from audit.censorship.state import AuditState
from audit.censorship.stopped import AuditStopped
from audit.censorship.send import Sample, send
from audit.censorship.techniques import Target, draw_name
from audit.errors import UserError
from audit.llm.types import FATAL_KINDS
from audit.judging.judge import label_counts
from audit.record.draws import (AUTO, BASELINE_TECHNIQUE, BLOCKED, Draw, auto_file, drawn_text, fixed_file,
                                iteration_draws, judgments)
from audit.record.rundir import iso, utc_now

Classify = Callable[[str, Sample], Awaitable[dict[str, Any] | None]]
"""The judging pass over one draw: what it answers and the draw -> its judgment (None: not judged)."""


@dataclass(frozen=True)
class Drawn:
    """One iteration's draws: the record to save and what its progress line shows."""

    record: dict[str, Any]
    strategy: str | None
    shown: str | None
    label: str | None
    error: str | None
    judge_failed: bool = False


class Actions(ReplyMenu, Protocol):
    """The questions about a run's kind (its reply menu, :class:`~audit.censorship.schema.ReplyMenu`, and
    an iteration's draws), answered alike by every kind of run."""

    technique: str
    """The run's technique (``auto``: the auditor's choice per action)."""
    with_baseline: bool
    """Whether each probe is also sent through the chat API as the assistant, scored apart."""

    @property
    def output_format(self) -> str | None:
        """The OUTPUT FORMAT the auditor is shown and re-asked with (None: the spec's)."""
        ...

    def turn_message(self, state: AuditState, iteration: int) -> str:
        """The auditor's next user message: what iteration ``iteration``'s draws returned."""
        ...

    def check(self, action: Action | None, state: AuditState, iteration: int, target: Target) -> None:
        """Raise a :class:`ReplyError` (the auditor's to fix) when turn ``iteration``'s action cannot be sent."""
        ...

    async def draw(self, gateway: Any, target: Target, state: AuditState, iteration: int,
                   classify: Classify) -> Drawn:
        """Send turn ``iteration``'s draws, each judged; a fatal target error stops the audit."""
        ...

    def draws_left(self, state: AuditState) -> int:
        """Target draws the run may still make."""
        ...

    def by_technique(self, draws: list[Draw]) -> dict[str, dict[str, int]] | None:
        """The summary's ``draw_classifications``: judge labels per technique of the draws, when the run
        has more than its own technique to keep apart."""
        ...

    def conversations(self, state: AuditState) -> dict[str, tuple[int, str]] | None:
        """The conversations the auditor can go on with, for the ledger note (None: the run opens none)."""
        ...


@dataclass(frozen=True)
class FixedTechnique(OneProbe):
    """A fixed technique: one action (the spec's reply: its ``next_prompt``), the turn's probe sampled with
    ``technique`` (and, with ``with_baseline``, through the chat API as the assistant: what the model says
    beside it)."""

    technique: str
    prefill: str
    with_baseline: bool

    @property
    def output_format(self) -> None:
        """None: the spec's OUTPUT FORMAT."""
        return None

    def turn_message(self, state: AuditState, iteration: int) -> str:
        response, *baselines = iteration_draws(state.responses[iteration], self.technique)
        baseline = baselines[0] if baselines else None
        return turn_message(iteration, drawn_text(response), technique=self.technique,
                            baseline_text=drawn_text(baseline) if baseline else None,
                            response_error=response.error,
                            baseline_error=baseline.error if baseline else None,
                            response_blocked=response.blocked_by,
                            baseline_blocked=baseline.blocked_by if baseline else None)

    def check(self, action: Action | None, state: AuditState, iteration: int, target: Target) -> None:
        """Nothing to check: the one action is the probe, which the reply's schema already requires."""

    async def draw(self, gateway: Any, target: Target, state: AuditState, iteration: int,
                   classify: Classify) -> Drawn:
        turn = state.turns[iteration]["parsed"]
        probe = turn["next_prompt"]
        kinds = [("audited", self.technique), *([("baseline", BASELINE_TECHNIQUE)] if self.with_baseline else [])]
        samples = await asyncio.gather(*(
            send(gateway, target, probe_plan(kind, probe, target.family, target.system_prompt, prefill=self.prefill),
                 sample_index=iteration, tag=tag, draw=draw_name(self.technique, tag)) for tag, kind in kinds))
        if samples[0].error_kind in FATAL_KINDS:  # no later probe can avoid these; other failures are recorded
            raise AuditStopped(f"audited model {target.model} failed at iteration {iteration}: "
                               f"{samples[0].draw.error}")
        labels = await asyncio.gather(*(classify(probe, s) for s in samples))
        main = samples[0].draw.extended(probe_language=measure_language(probe), classification=labels[0])
        baseline = samples[1].draw.extended(is_baseline=True, classification=labels[1]) if self.with_baseline \
            else None
        judged = main.classification
        shown_label = (judged.label if judged else None) or (BLOCKED if main.reply_outcome == BLOCKED else None)
        return Drawn(fixed_file(iso(utc_now()), main, baseline), turn.get("prompt_strategy"), samples[0].text,
                     shown_label, main.error, judge_failed=judged is not None and not judged.label)

    def draws_left(self, state: AuditState) -> int:
        """No cap: a fixed technique draws once (and its baseline) per iteration, up to ``max_iterations``."""
        return sys.maxsize

    def by_technique(self, draws: list[Draw]) -> None:
        """None: every draw is the run's technique (its baseline is counted apart already)."""
        return None

    def conversations(self, state: AuditState) -> None:
        """None: each probe is a fresh prompt, so there is no conversation to go on with."""
        return None


@dataclass(frozen=True)
class AutoMenu(Menu):
    """``technique=auto``: the action the auditor chose from its menu (the reply's ``action``), carried out
    on the conversation tree, within ``max_draws`` target draws for the whole run (spent, the next turn is
    the final one)."""

    max_draws: int
    technique: ClassVar[str] = AUTO
    with_baseline: ClassVar[bool] = False
    """No baseline: the auditor asks for assistant draws itself when it wants what the model says."""

    @property
    def output_format(self) -> str:
        """An action of the menu instead of a prompt, with the run's caps."""
        return auto_output_format(self.actions, batch_max=self.batch_max, max_draws=self.max_draws)

    def turn_message(self, state: AuditState, iteration: int) -> str:
        response = state.responses[iteration]
        return auto_turn_message(iteration, response["action"], iteration_draws(response),
                                 state.tree(before=iteration + 1), self.draws_left(state))

    def check(self, action: Action | None, state: AuditState, iteration: int, target: Target) -> None:
        """An action that does not fit the tree or the draws left is the auditor's to fix (a re-ask);
        a reply without one (the final turn) has nothing to send."""
        if action is None:
            return
        tree = state.tree(before=iteration)
        problem = check_action(action, tree)
        left = self.draws_left(state)
        if problem is None and action.draws > left:
            problem = (f"this action needs {action.draws} target draws but only {left} are left "
                       "(technique.max_draws); choose a smaller one or finish with a final_summary")
        if problem is None:
            try:  # e.g. a legacy fixed-string family has no slot for earlier turns or a system prompt
                plan_draws(action, tree, target.family, target.system_prompt, iteration)
            except UserError as exc:
                problem = f"the target's chat template cannot send this action: {exc}"
        if problem is not None:
            raise ReplyError(problem)

    async def draw(self, gateway: Any, target: Target, state: AuditState, iteration: int,
                   classify: Classify) -> Drawn:
        """The action's draws in parallel (each its own cache entry, so a resume after a kill mid-batch
        re-sends none that were answered), each judged, saved as one record with the draws' places in
        the conversation tree."""
        action = state.actions[iteration]
        tree = state.tree(before=iteration)
        plans = plan_draws(action, tree, target.family, target.system_prompt, iteration)
        samples = await asyncio.gather(*(
            send(gateway, target, p, sample_index=iteration, tag=f"audited/{action.kind}",
                 draw=draw_name(AUTO, f"draw {p.fields['id']}"))
            for p in plans))
        fatal = [s for s in samples if s.error_kind in FATAL_KINDS]
        if fatal:
            raise AuditStopped(f"audited model {target.model} failed at iteration {iteration}: "
                               f"{fatal[0].draw.error}")
        labels = await asyncio.gather(*(classify(answered(s.draw, tree), s) for s in samples))
        draws = [s.draw.extended(auto=True, classification=label) for s, label in zip(samples, labels)]
        record = auto_file(iteration, iso(utc_now()), action.as_dict(), draws, measure_language(action.shown()))
        if not draws:  # an action that only shows the auditor something (reopen)
            return Drawn(record, action.kind, None, None, None)
        first = draws[0]
        shown = first.raw_response if len(draws) == 1 else f"{len(draws)} draws: {first.raw_response}"
        return Drawn(record, action.kind, shown, first.classification.label if first.classification else None,
                     first.error)

    def draws_left(self, state: AuditState) -> int:
        return self.max_draws - len(state.draws())

    def by_technique(self, draws: list[Draw]) -> dict[str, dict[str, int]]:
        """Judge labels per technique of the draws, so compare reads each technique's responses of one
        auto run apart (never pooled), each draw counted once."""
        auto = [d for d in draws if d.auto]
        return {t: label_counts(judgments(d for d in auto if d.technique == t))
                for t in sorted({d.technique for d in auto})}

    def conversations(self, state: AuditState) -> dict[str, tuple[int, str]]:
        """Each conversation of the tree: the iteration of its latest draw and its last turn's role."""
        return conversation_ends(state.tree())
