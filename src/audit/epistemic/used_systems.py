"""What each system of an epistemic run was when it ran, written beside the run's ``config.yaml``
(``systems.json``) so the run dir describes itself.

``config.yaml`` names a listed system but not its settings (those come from
``conf/system/<name>.yaml``, which may change after the run), and names a prompt file but not its
text (a user's file edited between two runs keeps its name). So when a run starts it records, per
system id, the resolved node it answers with (after the ``prompt`` group, ``per_system`` and
``local=`` routing) and a short sha256 of each prompt file's text; the comparison keys its cells on
that record (:mod:`audit.compare.answer_settings`). The node holds no key: keys are read from the
environment by the gateway, never set on a system.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

from audit.epistemic.systems.llm import load_prompt

RECORD = "systems.json"
"""The record's file name in a run dir."""
DIGEST_CHARS = 12
"""Hex digits of a prompt text's sha256 kept: enough to tell edits apart, short enough to show."""


def text_digest(text: str) -> str:
    """A prompt text's short sha256 (of its UTF-8 bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def used_systems(nodes: Sequence[DictConfig], ids: Sequence[str]) -> dict[str, Any]:
    """The record of a run answering with ``nodes`` (resolved, as built) under ``ids``: per id, its
    ``settings`` (the node) and ``prompt_sha256`` (each prompt file's text digest; none for a system
    that sends no prompt, the KG oracle)."""
    out: dict[str, Any] = {}
    for node, sid in zip(nodes, ids, strict=True):
        prompts = node.get("prompt") or {}
        out[sid] = {"settings": OmegaConf.to_container(node, resolve=True),
                    "prompt_sha256": {str(role): text_digest(load_prompt(str(name))) for role, name in prompts.items()}}
    return out


def recorded_system(record: Mapping[str, Any], system: str) -> tuple[Mapping[str, Any], Mapping[str, str]]:
    """System ``system``'s settings and prompt digests in a run's record; ValueError naming the
    problem when the record does not hold them (a hand-edited or foreign file)."""
    used = record.get(system)
    if not isinstance(used, Mapping):
        raise ValueError(f"{system} not in {RECORD}")
    settings, digests = used.get("settings"), used.get("prompt_sha256") or {}
    if not isinstance(settings, Mapping) or not isinstance(digests, Mapping):
        raise ValueError(f"{RECORD}: {system} has no settings mapping")
    return settings, digests


def changed_since(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """What differs between the systems a run recorded when it started and those a resume would
    answer with (``now``, :func:`used_systems`), as a phrase; None when they are the same. A resume
    rebuilds a listed system from today's conf/system file and rereads each prompt file, so an edit
    since the start would answer the rest of the cards with other settings under the same run."""
    for sid in sorted(set(recorded) | set(now)):
        if sid not in recorded or sid not in now:
            return f"system {sid} {'was not' if sid not in recorded else 'is no longer'} one of the run's systems"
        then_settings, then_digests = recorded_system(recorded, sid)
        now_settings, now_digests = recorded_system(now, sid)
        for key in sorted(set(then_settings) | set(now_settings)):
            if then_settings.get(key) != now_settings.get(key):
                return f"{sid}'s {key} is {now_settings.get(key)!r}, not {then_settings.get(key)!r} as when the run started"
        for role in sorted(set(then_digests) | set(now_digests)):
            if then_digests.get(role) != now_digests.get(role):
                return f"{sid}'s {role} prompt file's text changed since the run started"
    return None
