"""Asking a chat model for ``{"answer": "YES|NO|UNKNOWN"}``: prompt, call, tolerant parse.

Shared by every LLM system so they differ only in what they put into the prompt. A
gateway failure or an unusable reply becomes ``pred=None`` with ``error`` set: an API
error must never be read as the model abstaining.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from audit.epistemic.metrics import PREDS
from audit.epistemic.systems.base import Reply
from audit.errors import UserError
from audit.llm.settings import role_endpoint, role_routing
from audit.llm.structured import check_mode, json_schema_format
from audit.llm.types import GatewayError
from audit.model_json import ReplyError, check_size, json_objects
from audit.prompt_files import placeholders, read_prompt

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
RESPONSE_FORMAT = json_schema_format("answer", {
    "type": "object", "additionalProperties": False, "required": ["answer"],
    "properties": {"answer": {"type": "string", "enum": list(PREDS)}},
})
"""``{"answer": "YES|NO|UNKNOWN"}`` as ``response_format``; :func:`parse_answer` reads the same shape."""


def load_prompt(name: str) -> str:
    """A prompt file: a name in ``prompts/`` or a path to a user's own file (UserError listing
    the shipped ones when neither exists)."""
    return read_prompt(PROMPTS_DIR, name, own_files=True)


def check_fields(template: str, where: str, fields: Sequence[str]) -> None:
    """Refuse, in one line naming the file, a user template that leaves out a field or names an unknown one."""
    found = placeholders(template, where)
    missing, unknown = [f for f in fields if f not in found], sorted(found - set(fields))
    if missing or unknown:
        problem = (f"has no placeholder {', '.join('{' + f + '}' for f in missing)}, so the model would never see it"
                   if missing else f"names {', '.join('{' + f + '}' for f in unknown)}, which this system does not fill")
        raise UserError(f"prompt file {where} {problem}; the template takes exactly "
                        f"{', '.join('{' + f + '}' for f in fields)}")


def with_prompts(node: DictConfig, prompts: DictConfig | None) -> DictConfig:
    """A system's config with the run's ``prompt`` group applied: ``system`` replaces its system
    prompt, and a template named like its ``prompt.user`` file (``facts_question`` for
    facts_question.txt) replaces that; null keeps the system's own."""
    if not prompts or "prompt" not in node:
        return node
    out = node.copy()
    if prompts.get("system"):
        out.prompt.system = str(prompts.system)
    template = Path(str(node.prompt.user)).stem
    if prompts.get(template):
        out.prompt.user = str(prompts[template])
    return out


def bullet_list(lines: Sequence[str]) -> str:
    """Facts as '- ' lines; '(none)' so an empty list is visible to the model."""
    return "\n".join(f"- {line}" for line in lines) if lines else "(none)"


def _word(value: Any) -> str | None:
    word = str(value).strip().strip(".!\"'` ").upper()
    return word if word in PREDS else None


def parse_answer(text: str) -> str:
    """YES/NO/UNKNOWN from a reply: a JSON object (possibly fenced or inside prose) with an
    ``answer`` key, or a bare word. Raises ValueError("unparseable: ...") otherwise.

    Deliberately no substring guessing ("NO" inside "UNKNOWN" or "NOT"): a reply we
    cannot read is an error, not an answer.
    """
    check_size(text)
    try:
        for data in json_objects(text):  # the one reader of model JSON: depth and size checked first
            answer = next((v for k, v in data.items() if str(k).lower() == "answer"), None)
            if answer is not None and _word(answer):
                return _word(answer)  # type: ignore[return-value]
    except ReplyError:
        pass  # an empty reply: no object, maybe still no word
    word = _word(text)
    if word:
        return word
    preview = " ".join(text.split())[:120]
    raise ValueError(f"unparseable: {preview!r}")


class Asker:
    """One model with one prompt pair (system prompt file + user template file)."""

    def __init__(self, cfg: DictConfig, gateway: Any, tag: str, fields: Sequence[str]):
        """``fields`` are the texts the system fills in: the user template must place each of them and
        nothing else (a template without ``{facts}`` scored cards the model never saw as answered)."""
        self.gateway = gateway
        self.model = str(cfg.model)
        self.temperature = cfg.get("temperature")
        self.max_tokens = cfg.get("max_tokens")
        routing = role_routing(cfg, "system")  # provider pin; reasoning and extra_body into the request
        self.provider, self.extra_body = routing["provider"], routing["extra_body"]
        self.system_prompt = load_prompt(cfg.prompt.system)
        self.user_template = load_prompt(cfg.prompt.user)
        check_fields(self.user_template, str(cfg.prompt.user), fields)
        self.tag = tag
        self.endpoint = role_endpoint(cfg)
        self.structured = check_mode(str(cfg.get("structured_output", "auto")))

    def messages(self, **fields: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": self.user_template.format(**fields)},
        ]

    async def ask(self, **fields: str) -> Reply:
        """Call the model with the rendered prompt and parse its answer."""
        try:
            reply = await self.gateway.achat(
                self.model, self.messages(**fields), max_tokens=self.max_tokens,
                temperature=self.temperature, response_format=RESPONSE_FORMAT, structured=self.structured,
                provider=self.provider, tag=self.tag, endpoint=self.endpoint, extra_body=self.extra_body,
            )
        except GatewayError as exc:
            if exc.fatal:
                raise UserError(f"{self.tag}: {exc}; stopped, since every call would fail the same way") from None
            return Reply(pred=None, reason="model call failed", error=str(exc))
        try:
            pred = parse_answer(reply.text)
        except ValueError as exc:
            self.gateway.forget(reply)  # never served again from the cache
            return Reply(pred=None, reason="reply not understood", raw_output=reply.text, error=str(exc))
        return Reply(pred=pred, reason=f"{self.model} answered {pred}", raw_output=reply.text)
