"""How the benchmark asks the target a question, by technique: the audit's three (:mod:`audit.censorship.techniques`)
and the published testbed's (Casademunt et al., ``cywinski/chinese_auditing``), each one way of sampling for a
whole run, so a cell never mixes two techniques.

* ``assistant``, ``user_persona``, ``prefill``: the audit's own (:func:`audit.censorship.action_kinds.probe_plan`);
  ``prefill`` opens the assistant turn with the ``prefill`` variant's text (or ``technique.prefill_text``,
  the user's own words given inline, which win).
* ``raw``: the question alone as a plain text completion (``/completions``, no chat template, no stop):
  what the model continues when nothing says it is an assistant.
* ``pretrain``: the question inside a written transcript (``technique.transcript``, a prompt file with
  ``{question}`` and ``{assistant_name}``) that ends where the named assistant's answer begins, sent as a
  plain text completion and cut at ``technique.stop`` (the next ``User:`` turn).
* ``few_shot``: the user's own question/answer examples (``technique.examples``, the testbed's few-shot file)
  as earlier turns of the model's chat template, then the question, as one raw prompt (the audit's few-shot
  action sends it so too: the earlier turns are the point, and a chat route may drop or rewrite them).
* ``confession``: the assistant's answer through the chat API, then, in the same conversation, a follow-up
  question (``technique.followup``) asking whether that answer was complete and honest. The follow-up's
  reply is kept under ``confession`` on the draw and judged on its own (``confession_judgment``): it never
  enters the answer's label, facts or assessment.

The system prompt is the ``system_prompt`` variant's (every technique that renders a chat template; ``raw``
and ``pretrain`` have none and refuse one). Every request goes through the one gateway and the one sender
(:func:`audit.censorship.techniques.send`), so each draw keeps its provenance (who served it, its outcome)
as every draw does. The model-facing text is in files (``prompts/``): none of it is written here.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from audit.censorship.action_kinds import probe_plan
from audit.censorship.conversations import DrawPlan, example_messages
from audit.censorship.send import Sample, send
from audit.censorship.techniques import TECHNIQUES, Target, draw_name
from audit.errors import UserError, unknown_choice
from audit.io.safe_read import UnsafeFile, parse_json, read_text
from audit.prompt_files import fill, placeholders, read_prompt

PROMPTS = Path(__file__).resolve().parent / "prompts"
RAW, FEW_SHOT, PRETRAIN, CONFESSION = "raw", "few_shot", "pretrain", "confession"
TECHNIQUES_HERE = (*TECHNIQUES, RAW, FEW_SHOT, PRETRAIN, CONFESSION)
"""The benchmark's techniques: the audit's, then the testbed's."""
NO_TEMPLATE = (RAW, PRETRAIN)
"""Techniques that send no chat template, so no system prompt can reach the model."""
MAX_EXAMPLES_FILE = 50_000_000
"""A few-shot file larger than this is refused."""


@dataclass(frozen=True)
class Example:
    """One few-shot example: a question and the answer shown for it."""

    question: str
    answer: str


@dataclass(frozen=True)
class Elicitation:
    """The checked technique settings of a run: what each draw sends besides the question."""

    technique: str
    prefill: str = ""
    examples: tuple[Example, ...] = ()
    transcript: str = ""
    stop: tuple[str, ...] = ()
    followup: str = ""

    label: str = ""
    """The draw's ``technique`` as its cell names it: the technique, then each setting that differs from
    its shipped default (``prefill=...``, ``system=...``, ``examples=...``), so runs that sent different
    text never share a cell."""

    @classmethod
    def from_config(cls, cfg: DictConfig) -> Elicitation:
        """Read ``technique``, ``system_prompt`` and ``prefill`` (one line naming the key on bad input)."""
        name = str(cfg.technique.name)
        if name not in TECHNIQUES_HERE:
            raise unknown_choice("technique", name, TECHNIQUES_HERE)
        node = cfg.technique
        system = cfg.get("system_prompt")
        default = system is None or system.get("model") or name in NO_TEMPLATE
        parts = [] if default else [f"system={_named(system.get('file'), system_text(cfg))}"]
        if name in NO_TEMPLATE and system_text(cfg) is not None:
            raise UserError(f"technique={name} sends no chat template, so the system prompt "
                            f"(system_prompt={system.name if system is not None else 'model_default'}) cannot "
                            "reach the model; add system_prompt=none (or use a chat technique)")
        how = cls(name)
        if name == "prefill" and node.get("prefill_text") is not None:  # the user's own words, given inline
            text = str(node.prefill_text)
            how = cls(name, prefill=text)
            if cfg.get("prefill") is not None:  # a run saved before the variants keeps its cell's name on resume
                parts.append(f"prefill=text:{_digest(text)}")
        elif name == "prefill":
            how = cls(name, prefill=prompt_text(cfg.prefill, "prefill"))
            parts += _changed("prefill", cfg.prefill.get("file"), how.prefill, "prefill_standard")
        elif name == FEW_SHOT:
            how = cls(name, examples=read_examples(node.get("examples"), node.get("shots")))
            used = json.dumps([[e.question, e.answer] for e in how.examples], ensure_ascii=False)
            parts.append(f"examples={Path(str(node.examples)).stem}:{_digest(used)}")
        elif name == PRETRAIN:
            transcript = prompt_text(node, "technique", key="transcript")
            missing = {"question", "assistant_name"} - placeholders(transcript, "technique.transcript")
            if missing:
                raise UserError(f"technique.transcript={node.transcript}: the transcript has no "
                                f"{{{sorted(missing)[0]}}} placeholder; put {{question}} after 'User:' and end with "
                                "'{assistant_name}:'")
            how = cls(name, transcript=fill(transcript, assistant_name=str(node.get("assistant_name") or "")),
                      stop=tuple(str(s) for s in node.get("stop") or ()))
            parts += _changed("transcript", node.get("transcript"), transcript, "pretrain_transcript")
            parts.append(f"name={node.get('assistant_name') or ''}")
        elif name == CONFESSION:
            how = cls(name, followup=prompt_text(node, "technique", key="followup"))
            parts += _changed("followup", node.get("followup"), how.followup, "confession_followup")
        return replace(how, label=name + "".join(f" [{p}]" for p in parts))

    def prompt(self, question: str) -> str | None:
        """The raw text a no-template technique sends for ``question`` (None for the others)."""
        if self.technique == RAW:
            return question
        if self.technique == PRETRAIN:
            return fill(self.transcript, question=question)
        return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _named(value: Any, text: str | None) -> str:
    """A text's name in a cell: a shipped prompt by its name; your own file by its name and the digest of
    its text (an edited file is another cell); no text: ``none``."""
    if text is None:
        return "none"
    name = str(value)
    return name if os.sep not in name and not Path(name).is_absolute() else f"{Path(name).stem}:{_digest(text)}"


def _changed(key: str, value: Any, text: str, shipped: str) -> list[str]:
    """``[key=<name>]`` when a prompt file is not its shipped default, else nothing."""
    return [] if str(value) == shipped else [f"{key}={_named(value, text)}"]


def system_text(cfg: DictConfig) -> str | None:
    """The system prompt of the ``system_prompt`` variant: its file's text, ``audited.system_prompt``
    for ``model_default`` (``file: null`` and ``model: true``), or None for ``none``."""
    node = cfg.get("system_prompt")
    if node is None or node.get("model"):
        value = cfg.audited.get("system_prompt")
        return None if value is None else str(value)
    return None if node.get("file") is None else prompt_text(node, "system_prompt")


def prompt_text(node: Mapping[str, Any], where: str, *, key: str = "file") -> str:
    """The text of the prompt file ``node[key]`` names: a shipped one in ``prompts/`` or a path to the
    user's own (through the safe reader; a missing or bad one is one line naming ``<where>.<key>``)."""
    value = node.get(key)
    if not value:
        raise UserError(f"{where}.{key} is empty; name a prompt file (docs/benchmark.md, \"Techniques\")")
    try:
        return read_prompt(PROMPTS, str(value), own_files=True).removesuffix("\n")
    except UserError as exc:
        raise UserError(f"{where}.{key}={value}: {exc}") from None


def read_examples(path: Any, shots: Any) -> tuple[Example, ...]:
    """The few-shot examples of ``technique.examples`` in the testbed's few-shot format: a JSON list (or
    ``{"samples": [...]}``) of ``{"question" (or "prompt"), "response", "is_refusal"?}``. As the testbed
    does, an example with no response or marked ``is_refusal`` is left out; ``technique.shots=N`` keeps
    the first N (file order, so a run is reproducible; shuffle the file to draw others)."""
    key = "technique.examples"
    if not path:
        raise UserError(f"technique=few_shot needs {key}=<file.json>: your examples in the few-shot format "
                        "(docs/benchmark.md, \"few_shot\"); none are shipped")
    file = Path(str(path)).expanduser()
    fix = "give a JSON list of {\"question\", \"response\"} (docs/benchmark.md, \"few_shot\")"
    if not file.is_file():
        raise UserError(f"{key}={path}: no such file; {fix}")
    try:
        data = parse_json(read_text(file, max_bytes=MAX_EXAMPLES_FILE, fix=fix), file, fix=fix)
    except UnsafeFile as exc:
        raise UserError(f"{key}={path}: {exc.problem}; {fix}") from None
    items = data.get("samples") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise UserError(f"{key}={path}: expected a JSON list of examples (or {{\"samples\": [...]}}); {fix}")
    examples = []
    for n, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise UserError(f"{key}={path}: example {n} is not an object; {fix}")
        question = item.get("question", item.get("prompt"))
        answer = item.get("response")
        if answer is None or item.get("is_refusal") is True:
            continue
        if not isinstance(question, str) or not question.strip() or not isinstance(answer, str):
            raise UserError(f"{key}={path}: example {n} needs a non-empty 'question' (or 'prompt') and a "
                            f"string 'response'; {fix}")
        examples.append(Example(question, answer))
    if shots is not None:
        if isinstance(shots, bool) or not isinstance(shots, int) or shots < 1:
            raise UserError(f"technique.shots={shots!r}: give a whole number of examples, at least 1 (or null for all)")
        examples = examples[:shots]
    if not examples:
        raise UserError(f"{key}={path}: no usable example (each needs a response and no is_refusal: true); {fix}")
    return tuple(examples)


def few_shot_messages(examples: Sequence[Example], question: str, system: str | None) -> list[dict[str, str]]:
    """The conversation a few-shot draw renders: system (if any), each example as a user and an assistant
    turn, then the question."""
    pairs = [{"question": e.question, "answer": e.answer} for e in examples]
    head = [{"role": "system", "content": system}] if system is not None else []
    return [*head, *example_messages(pairs), {"role": "user", "content": question}]


async def elicit(gateway: Any, target: Target, how: Elicitation, question: str, *, sample_index: int, tag: str,
                 run_technique: str) -> Sample:
    """One draw of ``question`` with the run's technique, sent as every draw is (a failed call is recorded:
    :func:`audit.censorship.send.send`)."""
    technique = how.technique
    draw = draw_name(run_technique, tag)
    raw = how.prompt(question)
    if raw is not None:
        record: dict[str, Any] = {"technique": technique, "prompt_sent": question, "formatted_prompt": raw,
                                  "messages_sent": None}
        return await send(gateway, target, DrawPlan(record, prompt=raw, stops=how.stop), sample_index=sample_index,
                          tag=tag, draw=draw)
    if technique == FEW_SHOT:
        messages = few_shot_messages(how.examples, question, target.system_prompt)
        prompt = target.family.assistant_prompt(messages)
        record = {"technique": technique, "prompt_sent": question, "formatted_prompt": prompt, "messages_sent": None,
                  "examples": len(how.examples)}
        plan = DrawPlan({**record, "role": "assistant"}, prompt=prompt, stops=target.family.stops, kept=tuple(record))
        return await send(gateway, target, plan, sample_index=sample_index, tag=tag, draw=draw)
    chat = "assistant" if technique == CONFESSION else technique
    plan = probe_plan(chat, question, target.family, target.system_prompt, prefill=how.prefill)
    sampled = await send(gateway, target, plan, sample_index=sample_index, tag=tag, draw=draw)
    return replace(sampled, draw=sampled.draw.extended(technique=technique))


async def confess(gateway: Any, target: Target, how: Elicitation, answered: Mapping[str, Any], *,
                  sample_index: int, tag: str, run_technique: str) -> dict[str, Any] | None:
    """The confession follow-up of one answered draw: the same chat, the answer as the assistant's turn,
    then ``how.followup`` as the user's; the reply's record (what was sent, what came back, who served it),
    or None when there is no answer to ask about."""
    answer = answered.get("raw_response")
    if how.technique != CONFESSION or answer is None or answered.get("error") is not None:
        return None
    messages = [*answered["messages_sent"], {"role": "assistant", "content": answer},
                {"role": "user", "content": how.followup}]
    record: dict[str, Any] = {"technique": CONFESSION, "prompt_sent": how.followup, "formatted_prompt": None,
                              "messages_sent": messages}
    sampled = await send(gateway, target, DrawPlan(record, messages=messages), sample_index=sample_index, tag=tag,
                         draw=draw_name(run_technique, f"{tag}/confession"))
    return {**sampled.draw.given(), "error_kind": sampled.error_kind}


def with_system(target: Target, system: str | None) -> Target:
    """``target`` with the run's system prompt variant."""
    return replace(target, system_prompt=system)
