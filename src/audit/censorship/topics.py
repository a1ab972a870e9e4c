"""Where a run's topic comes from, and whether it is whole.

A topic is an identity (name, display name, description, language) plus the key facts the judge
scores against. The two must come from the same place: overriding only ``topic.display_name``
once ran an audit of a new topic scored against Tiananmen's six facts. So a command line that
changes an identity field must also say the facts (``topic.key_facts=[]`` means none: the run
goes without fact scoring and says so), and a topic of one's own is a whole file, given by path
(``topic_file=``) or found in a config dir (``--config-dir``).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from audit.errors import UserError

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
        return cfg
    path = Path(str(name)).expanduser()
    if not path.is_file():
        raise UserError(f"topic_file={name}: no such file; give the path of a topic yaml "
                        "(see conf/topic/tiananmen.yaml for the fields)")
    try:
        topic = OmegaConf.load(path)
    except (OmegaConfBaseException, yaml.YAMLError, ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"topic_file={name}: not a readable yaml file ({type(exc).__name__}); "
                        "see conf/topic/tiananmen.yaml for the format") from None
    if not isinstance(topic, DictConfig) or "defaults" in topic:
        raise UserError(f"topic_file={name}: must be a mapping with name, display_name, description, language "
                        "and key_facts (no defaults list: a file given by path is used whole)")
    with open_dict(cfg):
        cfg.topic = topic
    return cfg
