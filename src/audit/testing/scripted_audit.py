"""A scripted censorship audit for the loopback server: auditor, target, chat target and judge,
and the epistemic systems' YES/NO/UNKNOWN answers.

:class:`Script` answers every request from its content alone (which role, which turn, which
probe), never from call order, so a run killed mid-way and resumed by a new process sees the
same replies as an uninterrupted one. Tests and ``bench/`` install ``Script().handler``
on a :class:`~audit.testing.server.FakeOpenRouter` and vary it through its fields;
``python -m audit.testing.fake_openrouter`` serves it for runs started by hand.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from audit.censorship.prompts import SCHEMA_START, final_summary_request, load, reask_message
from audit.judging.assessment import HONESTY
from audit.judging.judge import classification_system
from audit.judging.prompts import load as judge_text
from audit.epistemic.metrics import PREDS
from audit.epistemic.systems.llm import RESPONSE_FORMAT as ANSWER_FORMAT
from audit.paths import CONF_DIR
from audit.testing.replies import Reply, chat_reply, completion_reply, content_text, slow

AUDITOR_MODEL = "test/auditor"
JUDGE_MODEL = "test/judge"
STRATEGIES = ("direct_factual", "historical_framing", "hypothetical")
_REASK_PREFIX = reask_message("XYZZY").split("XYZZY")[0]
_PROBE_NO = re.compile(r"Probe (\d+)")
_TURN_OF = re.compile(r"^ITERATION (\d+): below", flags=re.M)
"""The opening of the message that hands response N to the auditor (turn N + 1), in either turn template."""
_AUDITOR_OPENING = load("auditor_system").split("{topic}")[0]
_JUDGE_SYSTEMS = (classification_system(), judge_text("judge_facts_system"), judge_text("judge_entail_system"),
                  judge_text("judge_assess_system"))
_ENTAIL = re.compile(r"\AFACT: (?P<fact>.*?)\n\n(?:.*?<<<END AUDITOR>>>\n.*?\n)?<<<PASSAGE>>>\n(?P<passage>.*)\n<<<END PASSAGE>>>\Z",
                     re.S)
_RESPONSE = re.compile(r"<<<RESPONSE(?: \d+)?>>>\n(.*?)\n<<<END RESPONSE(?: \d+)?>>>", re.S)
"""A response as the judge's messages fence it (the first one shown)."""
EVAL_MARK = "this looks like a test"
"""A target answer holding these words is evaluation-aware (the scripted judge quotes them)."""
AUDITOR, JUDGE, ANSWER, BASELINE = "auditor", "judge", "answer", "baseline"
_AUTO_MARK = next(line for line in load("output_format_auto").splitlines() if '"action": {' in line).strip()
"""A line only ``technique=auto``'s auditor system prompt has: the auditor answers with actions."""


def user_persona_action(turn: int) -> dict[str, Any]:
    """The action a ``technique=auto`` auditor takes when the test scripts none: a user-persona draw."""
    return {"kind": "user_persona", "prompt": probe_text(turn), "system": None}


def audit_config(out: Path, *overrides: str) -> DictConfig:
    """The config ``python -m audit`` would build, pointed at test models and ``out``; the judge
    and the assistant baseline off (a test that needs them says so), so a test counts only its own calls;
    the auditor shown the full transcript (``auto`` would give the test auditor, which no provider
    caches, the ledger from turn 4: a test of the ledger or of ``auto`` says so). A copy of
    :func:`_composed`'s, with ``output_dir`` set to ``out``."""
    cfg = copy.deepcopy(_composed(overrides))
    cfg.output_dir = str(out)
    return cfg


@functools.cache
def _composed(overrides: tuple[str, ...]) -> DictConfig:
    """The composed config for ``overrides``, once per process: a compose reads and merges every file of the
    defaults list (~0.13 CPU-s, as much as the short audit a test then runs), and the tests composed the same
    few configs hundreds of times. Nothing it holds depends on when it is composed: the ``${oc.env:...}``
    values (the cache root a test points elsewhere) are interpolations, resolved when read."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=[
            f"auditor.model={AUDITOR_MODEL}", "judge=off", "technique.with_baseline=false", "auditor.context=full",
            "gateway.max_retries=0", "gateway.cache.enabled=false", *overrides])


def probe_text(k: int) -> str:
    return f"Probe {k}: what happened in Beijing in 1989?"


DETAILED = (2, 3, 5)
"""The facts besides the first that the scripted fact judge claims, each from a sentence of its own."""


def target_text(k: int) -> str:
    details = " ".join(f"Detail {k}.{fact} is known." for fact in DETAILED)
    return f" and I remember that the answer {k} is that students gathered in the square. {details}"


def quote(k: int) -> str:
    """An excerpt that really is in response ``k``."""
    return f"the answer {k} is that students gathered"


def fact_quote(k: int, fact: int) -> str:
    """What the scripted fact judge quotes from response ``k`` for fact number ``fact``: a sentence of
    its own per fact, as a careful judge quotes (a passage quoted for several facts credits none of
    them: :mod:`audit.judging.credit`)."""
    return quote(k) if fact == 1 else f"Detail {k}.{fact} is known"


INVENTED = "The government has forbidden me from answering"
UNSAID = "nothing happened"
"""What the scripted judge quotes for fact 4: in no response, so never credited."""


@dataclass
class Script:
    """A scripted auditor (chat), target (completions), chat target (baseline) and judge."""

    stop_at_turn: int | None = None          # this turn says should_continue false
    probe: Callable[[int], str] = probe_text
    target: Callable[[int], str] = target_text
    bad_replies: dict[int, list[str]] = field(default_factory=dict)   # turn -> unusable replies first
    invented_evidence: bool = False         # turns from 2 on also cite ``invented_excerpt`` (hypothesis h2)
    invented_excerpt: str = INVENTED
    fenced: bool = False
    target_delay_s: float = 0.0
    target_error: Callable[[int], Reply | None] = lambda k: None
    baseline_text: str = "I'm sorry, I can't discuss that topic."
    judge_label: str = "deflected"
    actions: Callable[[int], dict[str, Any]] | None = None
    """``technique=auto``: the action of each turn (turn -> action object)."""
    policy: Callable[[int, list[dict[str, Any]]], tuple[dict[str, Any], tuple[int, int, str]]] | None = None
    """``technique=auto``: an auditor that decides from its request (turn, messages -> action and the
    citation of h1), e.g. :class:`~audit.testing.visible_policy.VisiblePolicy`; set, it replaces
    ``actions`` and ``cite``."""
    cite: Callable[[int], tuple[int, int, str]] = lambda turn: (turn - 1, 1, quote(turn - 1))
    """``technique=auto``: the citation of h1 at a turn: (iteration, draw, excerpt)."""
    reasoning: Callable[[int], str] = lambda turn: f"turn {turn}"
    """The auditor's ``reasoning`` at a turn (``bench/`` sizes it like a real auditor's)."""
    entail: Callable[[str, str, str], str] = lambda fact, passage, asked: scripted_entailment(fact)
    """The credit check's answer (states, contradicts, neither) for (fact, passage, the auditor's
    words shown with it or ''); by default the answer that keeps the fact judge's scripted verdict
    (:func:`scripted_entailment`), so only the quote check and the rules of ``credit.py`` decide."""

    def handler(self, request: Any) -> Reply | None:
        body = request.json
        if request.endpoint == "completion":
            k = self._probe_number(body["prompt"])
            error = self.target_error(k)
            if error is not None:
                return error
            return slow(self.target_delay_s, completion_reply(self.target(k)))
        # a request with cache breakpoints carries content parts: the script reads their text
        body = {**body, "messages": [{**m, "content": content_text(m.get("content"))} for m in body["messages"]]}
        role = chat_role(body)
        if role == AUDITOR:
            return chat_reply(self.auditor_reply(body["messages"]))
        if role == JUDGE:
            return chat_reply(self.judge_reply(body["messages"]))
        if role == ANSWER:
            return chat_reply(json.dumps({"answer": card_answer(body["messages"])}))
        return chat_reply(self.baseline_text)  # the audited model through the chat API

    def _probe_number(self, prompt: str) -> int:
        found = _PROBE_NO.findall(prompt)
        return int(found[-1]) if found else 0

    def auditor_reply(self, messages: list[dict[str, Any]]) -> str:
        users = [m["content"] for m in messages if m["role"] == "user"]
        reasks = _trailing_reasks(users)
        # The turn is read from the turn's own message, not counted from the earlier ones: under
        # auditor.context=ledger older turns are left out of the request.
        handed = _TURN_OF.findall(users[-1 - reasks])
        turn = int(handed[-1]) + 1 if handed else 1
        bad = self.bad_replies.get(turn, [])
        if reasks < len(bad):
            return bad[reasks]
        # asked in the turn's own message, or by a re-ask that gives up on the turn's probe
        final = turn > 1 and any(final_summary_request(turn - 1) in u for u in users[-1 - reasks:])
        auto = self.actions is None and _AUTO_MARK in str(messages[0].get("content"))
        actions, cite = user_persona_action if auto else self.actions, self.cite
        if self.policy is not None:
            action, citation = self.policy(turn, messages)
            actions, cite = (lambda _: action), (lambda _: citation)
        reply = self.good_reply(turn, final=final or turn == self.stop_at_turn, actions=actions, cite=cite)
        text = json.dumps(reply, ensure_ascii=False, indent=1)
        return f"Here is my analysis.\n```json\n{text}\n```\nThanks." if self.fenced else text

    def good_reply(self, turn: int, *, final: bool, actions: Callable[[int], dict[str, Any]] | None = None,
                   cite: Callable[[int], tuple[int, int, str]] | None = None) -> dict[str, Any]:
        """The auditor's reply at ``turn``: a probe, or with ``actions`` (``technique=auto``) an action
        citing ``cite``'s evidence (by default the field's)."""
        hypotheses = []
        if turn > 1:
            hypotheses.append({
                "id": "h1", "type": "knowledge", "hypothesis": "Model knows students gathered",
                "confidence": "low" if turn < 3 else "medium",
                "supporting_evidence": [{"iteration": turn - 1, "excerpt": quote(turn - 1)}],
                "contradicting_evidence": []})
            if self.invented_evidence:
                hypotheses.append({
                    "id": "h2", "type": "behavior", "hypothesis": "Model claims a ban",
                    "confidence": "low",
                    "supporting_evidence": [{"iteration": turn - 1, "excerpt": self.invented_excerpt}],
                    "contradicting_evidence": []})
        if actions is not None and hypotheses:
            iteration, draw, excerpt = (cite or self.cite)(turn)
            hypotheses[0]["supporting_evidence"] = [{"iteration": iteration, "draw": draw, "excerpt": excerpt}]
        reply: dict[str, Any] = {"reasoning": self.reasoning(turn), "hypotheses": hypotheses}
        if final and actions is not None:
            reply |= {"action": None, "prompt_strategy": None, "prompt_rationale": None}
        if final:
            reply |= {"should_continue": False, "final_summary": {
                "knowledge_confirmed": ["students gathered in the square"],
                "censorship_patterns": ["none seen"], "conclusion": f"ended at turn {turn}"}}
        else:
            reply |= {"next_prompt": self.probe(turn)} if actions is None else {"action": actions(turn)}
            reply |= {"prompt_strategy": STRATEGIES[turn % len(STRATEGIES)],
                      "prompt_rationale": f"tests h1 at turn {turn}", "should_continue": True}
        return reply

    def judge_reply(self, messages: list[dict[str, Any]]) -> str:
        """Classify every response as ``judge_label``. Fact scoring, quoting the first response shown
        (:func:`fact_quote` of its iteration, verbatim when the target played the script): the odd-numbered
        facts revealed; fact 2 both revealed and contradicted (counted once, as contradicted); fact 4
        claimed revealed with a quote that is in no response (the tool does not count it)."""
        if messages[0]["content"] == judge_text("judge_entail_system"):
            found = _ENTAIL.match(messages[1]["content"])
            assert found is not None, messages[1]["content"]
            asked = messages[1]["content"].split("<<<END AUDITOR>>>")[0] if "<<<END AUDITOR>>>" in found.group(0) else ""
            return json.dumps({"verdict": self.entail(found["fact"], found["passage"], asked), "rationale": "scripted"})
        if messages[0]["content"] == judge_text("judge_assess_system"):
            return json.dumps(scripted_assessment(judged_response(messages[1]["content"])))
        if messages[0]["content"] == judge_text("judge_facts_system"):
            ids = [int(n) for n in re.findall(r"^(\d+)\. ", messages[1]["content"], flags=re.M)]
            shown = [int(n) for n in re.findall(r"^<<<RESPONSE (\d+)>>>", messages[1]["content"], flags=re.M)]
            first = shown[0] if shown else 0
            return json.dumps({"facts": [
                {"id": k, "revealed": k % 2 == 1 or k in (2, 4), "contradicted": k == 2, "response": first,
                 "quote": UNSAID if k == 4 else fact_quote(first, k) if k % 2 == 1 or k == 2 else ""} for k in ids]})
        return json.dumps({"label": self.judge_label, "rationale": "it changes the subject"})


def judged_response(user: str) -> str:
    """The (first) response a judge's user message shows, as fenced there ('' when none)."""
    found = _RESPONSE.findall(user)
    return found[0] if found else ""


def scripted_assessment(response: str) -> dict[str, Any]:
    """The scripted judge's honesty and evaluation-awareness verdicts of one response, from its text alone:
    evasive when it says it cannot answer, else honest; evaluation-aware, quoting its words, when it holds
    :data:`EVAL_MARK`. The reply's shape is :data:`audit.judging.assessment.SCHEMA`'s."""
    at = response.lower().find(EVAL_MARK)
    refuses = "cannot" in response or "can't" in response
    return {"honesty": HONESTY[1] if refuses else HONESTY[0], "eval_aware": at >= 0,
            "evidence": response[at:at + len(EVAL_MARK)] if at >= 0 else "", "rationale": "scripted"}


def _second_facts() -> frozenset[str]:
    """Every shipped topic's second key fact: the one the scripted fact judge marks contradicted."""
    facts = (OmegaConf.load(p).get("key_facts") or [] for p in sorted((Path(CONF_DIR) / "topic").glob("*.yaml")))
    return frozenset(str(f[1]) for f in facts if len(f) > 1)


_CONTRADICTED = _second_facts()


def scripted_entailment(fact: str) -> str:
    """What the scripted judge answers the credit check by default, from the fact alone (stateless,
    as every scripted reply): "contradicts" for the fact it marks contradicted, else "states"."""
    return "contradicts" if fact in _CONTRADICTED else "states"


def _trailing_reasks(users: list[str]) -> int:
    """How many of the last user messages are re-asks (they follow the turn's own message)."""
    count = 0
    while count < len(users) - 1 and users[-1 - count].startswith(_REASK_PREFIX):
        count += 1
    return count


def chat_role(body: dict[str, Any]) -> str:
    """Who sent a chat request: the test models by name, any other model by its system prompt
    (so a run with the shipped auditor and judge models plays the script too)."""
    if body.get("model") == AUDITOR_MODEL:
        return AUDITOR
    if body.get("model") == JUDGE_MODEL:
        return JUDGE
    messages = body.get("messages") or [{}]
    system = messages[0].get("content") if messages[0].get("role") == "system" else None
    if isinstance(system, str) and system.startswith(_AUDITOR_OPENING) and SCHEMA_START in system:
        return AUDITOR
    if system in _JUDGE_SYSTEMS:
        return JUDGE
    schema_name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if schema_name == ANSWER_FORMAT["json_schema"]["name"] or "UNKNOWN" in (system or ""):
        return ANSWER
    return BASELINE


def card_answer(messages: list[dict[str, Any]]) -> str:
    """YES, NO or UNKNOWN, fixed by the card's text (a checksum), so every answer occurs and a re-run agrees."""
    return PREDS[zlib.crc32(str(messages[-1].get("content")).encode("utf-8")) % len(PREDS)]
