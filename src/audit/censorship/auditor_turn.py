"""The auditor's turn: one request (the conversation so far, or the bounded ledger view), re-asked with
the parse error on an unusable reply up to ``auditor.max_reask`` times, its citations checked, its
hypotheses entered in the ledger, and the turn saved before anything acts on it."""

from __future__ import annotations

import asyncio
from typing import Any

from audit.censorship.auditor_context import LEDGER, ledger_messages, stable_prefix
from audit.censorship.draw_actions import Actions
from audit.censorship.evidence import check_evidence
from audit.censorship.language import WrongLanguage, check_probe
from audit.censorship.plan import Plan
from audit.censorship.progress import beat, preview, say
from audit.censorship.prompts import final_summary_request, reask_message
from audit.censorship.run_dir import AuditDir
from audit.censorship.schema import (FINAL, NEXT, ReplyError, parse_auditor_reply, reask_stage, response_formats,
                                     stage_of)
from audit.censorship.state import AuditState
from audit.censorship.stopped import AuditStopped
from audit.counted import counted
from audit.llm.accounting import call_usage
from audit.llm.types import GatewayError, LLMResponse
from audit.record.rundir import iso, utc_now
from audit.record.usage import Usage


class AuditorTurns:
    """Asks the auditor for each turn of one audit and saves it into the run's :class:`AuditState`."""

    def __init__(self, plan: Plan, gateway: Any, state: AuditState, run_dir: AuditDir, language: str):
        self.plan, self.gateway, self.state, self.run_dir, self.language = plan, gateway, state, run_dir, language
        self.actions: Actions = plan.actions  # what the reply may ask for, and what its draws send
        self.formats = response_formats(self.actions)

    async def take(self, iteration: int, message: str, *, final: bool) -> None:
        """Ask the auditor, re-asking with the parse error on an unusable reply (bounded)."""
        plan, state = self.plan, self.state
        messages = self.messages(message)
        stable = stable_prefix(plan.context, messages)  # re-asks extend the request past it
        attempts: list[dict[str, Any]] = []
        unusable: list[LLMResponse] = []
        usages: list[dict[str, Any]] = []
        stage = schema = stage_of(iteration, final=final)
        # A resume of a turn that failed before draws fresh replies: the cached ones are the failure.
        earlier_failures = sum(f.get("iteration") == iteration for f in state.failed_turns)
        ended_early: str | None = None
        attempt = -1
        while True:
            attempt += 1
            doing = "the final summary" if stage == FINAL else f"turn {iteration}"
            try:
                with beat(f"auditor: writing {doing}{f' (re-ask {attempt})' if attempt else ''}", self.gateway,
                          plan.auditor_max_tokens):
                    response = await self.gateway.achat(
                        plan.auditor_model, messages, max_tokens=plan.auditor_max_tokens,
                        temperature=plan.auditor_temperature, tag="auditor", endpoint=plan.auditor_endpoint,
                        response_format=self.formats[schema], structured=plan.auditor_structured,
                        sample_index=earlier_failures, cache_prefix=stable, **plan.auditor_routing)
            except GatewayError as exc:
                raise AuditStopped(f"auditor {plan.auditor_model} failed at turn {iteration}: {exc}",
                                   failed_turn=state.record_failed_turn(iteration, messages, attempts)) from exc
            except asyncio.CancelledError:
                if attempts:  # unusable replies already paid for: the summary keeps them for the resume
                    state.record_failed_turn(iteration, messages, attempts)
                raise
            usages.append(call_usage(response))
            state.totals.add(usages[-1])
            try:
                reply = parse_auditor_reply(response.text, stage=stage, menu=self.actions)
                self.actions.check(reply.action, state, iteration, plan.target)
                check_probe(reply.next_prompt, self.language)
                break
            except ReplyError as exc:
                state.totals.parse_failures += 1
                attempts.append({"raw_response": response.text, "error": str(exc), "usage": usages[-1].as_dict()})
                unusable.append(response)
                if attempt >= plan.max_reask:
                    if isinstance(exc, WrongLanguage):  # usable: sent, and the mismatch is recorded
                        attempts.pop()
                        state.totals.parse_failures -= 1
                        break
                    if stage == NEXT:  # once: the audit ends on what it has, with the auditor's summary
                        ended_early = f"no usable reply at turn {iteration} after {attempt} re-asks: {exc}"
                        say(f"auditor: {ended_early}; asking it to conclude on the {counted(iteration - 1, 'iteration')} it has")
                        messages = [*messages, {"role": "assistant", "content": response.text},
                                    {"role": "user", "content": reask_message(str(exc), plan.output_format)
                                     + "\n\n" + final_summary_request(iteration - 1)}]
                        stage = schema = FINAL
                        continue
                    self.gateway.forget(*unusable)  # a resume asks afresh instead of replaying the failed turn
                    raise AuditStopped(
                        f"auditor gave no usable reply at turn {iteration} after {attempt} re-asks: {exc}",
                        failed_turn=state.record_failed_turn(iteration, messages, attempts)) from None
                say(f"auditor: turn {iteration} unusable, re-ask {attempt + 1} of {plan.max_reask}: {preview(str(exc))}")
                messages = [*messages, {"role": "assistant", "content": response.text},
                            {"role": "user", "content": reask_message(str(exc), plan.output_format)}]
                schema = reask_stage(stage, response.text)
        parsed = reply.as_dict()
        parsed["hypotheses"], counts = check_evidence(parsed["hypotheses"], *state.quotable())
        record = {
            "iteration": iteration,
            "timestamp": iso(utc_now()),
            "input_messages": messages,
            "raw_response": response.text,
            "parsed": parsed,
            "attempts": attempts,
            "hypothesis_delta": state.ledger.update(iteration, parsed["hypotheses"]),
            "evidence": counts,
            "repairs": reply.repairs,
            "final_requested": final or ended_early is not None,
            **({"ended_early": ended_early} if ended_early else {}),
            "usage": Usage.total(usages).as_dict(),
        }
        self.run_dir.write_turn(iteration, record)
        state.add_turn(iteration, record, reply.action)

    def messages(self, message: str) -> list[dict[str, Any]]:
        """The auditor's request for the next turn: the conversation so far plus ``message``, or under
        ``auditor.context=ledger`` the bounded context :mod:`~audit.censorship.auditor_context` builds."""
        if self.plan.context.mode == LEDGER:
            return ledger_messages(self.plan.auditor_system, self.state.turns, message, keep=self.plan.context.turns,
                                   conversations=self.actions.conversations(self.state))
        assert self.state.conversation is not None
        return [*self.state.conversation, {"role": "user", "content": message}]
