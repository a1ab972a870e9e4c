"""Where a run's topic comes from, and whether it is whole.

A topic is an identity (name, display name, description, language) plus the key facts the judge
scores against. The two must come from the same place: overriding only ``topic.display_name``
once ran an audit of a new topic scored against Tiananmen's six facts. So a command line that
changes an identity field must also say the facts (``topic.key_facts=[]`` means none: the run
goes without fact scoring and says so), and a topic of one's own is a whole file, given by path
(``topic_file=``) or found in a config dir (``--config-dir``).
"""

from __future__ import annotations

from difflib import get_close_matches
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, open_dict

from audit.errors import UserError
from audit.io.safe_read import load_yaml

IDENTITY = ("display_name", "description")
"""The topic fields that say which topic it is, to the auditor and the judge (``name`` only names
the run dir; the language and control flag do not change the topic)."""


def check_topic_overrides(overrides: list[str]) -> None:
    """Refuse an identity override without the facts, in one line naming it."""
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    changed = sorted(k for k in keys if k in {f"topic.{f}" for f in IDENTITY})
    if changed and "topic.key_facts" not in keys:
        raise UserError(f"{changed[0]} is changed but topic.key_facts are not, so the new topic would be scored "
                        "against the old topic's facts; give topic.key_facts=[...] as well (topic.key_facts=[] "
                        "runs without fact scoring), or write a topic file and pass topic_file=<path>")


def with_topic_file(cfg: DictConfig) -> DictConfig:
    """``cfg`` with ``topic`` replaced by the file ``topic_file`` names (when it names one)."""
    name = cfg.get("topic_file")
    if not name:
        check_topic(cfg.topic, "topic")
        return cfg
    path = Path(str(name)).expanduser()
    if not path.is_file():
        raise UserError(f"topic_file={name}: no such file; give the path of a topic yaml "
                        "(see conf/topic/tiananmen.yaml for the fields)")
    topic = load_yaml(path, fix="see conf/topic/tiananmen.yaml for the format")
    if not isinstance(topic, DictConfig) or "defaults" in topic:
        raise UserError(f"topic_file={name}: must be a mapping with name, display_name, description, language "
                        "and key_facts (no defaults list: a file given by path is used whole)")
    check_topic(topic, f"topic_file={name}")
    with open_dict(cfg):
        cfg.topic = topic
    return cfg


TEXT_FIELDS = ("name", "display_name", "description", "language")
FIELDS = (*TEXT_FIELDS, "control", "key_facts")
"""Every key a topic may have: any other is a misspelling (``languag:`` once left a Chinese topic asked in English)."""


def check_topic(topic: Any, where: str) -> None:
    """Each topic field of the type it must have, in one line naming it: ``key_facts`` written as one
    string was scored as one fact per character (15 one-character facts), which no number may rest on.
    A key no topic has is refused with the keys it could have meant."""
    unknown = [str(k) for k in topic.keys() if k not in FIELDS]
    if unknown:
        close = get_close_matches(unknown[0], FIELDS, n=2)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UserError(f"{where}: unknown key {unknown[0]!r}.{hint} A topic has {', '.join(FIELDS)}")
    control = topic.get("control")
    if control is not None and not isinstance(control, bool):
        raise UserError(f"{where}: control must be true or false, not {_kind(control)}")
    for field in TEXT_FIELDS:
        value = topic.get(field)
        if value is not None and not isinstance(value, str):
            raise UserError(f"{where}: {field} must be text, not {_kind(value)}; write {field}: \"...\"")
    facts = topic.get("key_facts")
    if facts is None:
        return
    if not isinstance(facts, (list, ListConfig)):
        raise UserError(f"{where}: key_facts must be a list of facts, not {_kind(facts)}; write one fact per line "
                        "as '- <fact>' under key_facts: (or key_facts=[\"fact one\",\"fact two\"] on the command line)")
    bad = [k for k, fact in enumerate(facts, 1) if not isinstance(fact, str) or not fact.strip()]
    if bad:
        raise UserError(f"{where}: key fact {bad[0]} is {_kind(facts[bad[0] - 1])}, not a sentence; each key fact "
                        "is a non-empty text")


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "an empty text" if not value.strip() else f"the text {value[:40]!r}"
    return {DictConfig: "a mapping", dict: "a mapping", ListConfig: "a list", list: "a list"}.get(
        type(value), f"a {type(value).__name__}")
