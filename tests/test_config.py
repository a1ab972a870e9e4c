"""Every option of every config group composes with its primary config; typos list the options.

A compose costs ~0.13 CPU-s (Hydra reads and merges every file of the defaults list), and there were
~160 of them here. One compose takes an option of every group at once, so each test reads the compose
of its *round*: round ``k`` of a primary selects the ``k``-th option of each of its groups (a group with
fewer options keeps its default). The same compose path as one override at a time (Hydra applies every
``group=option`` override to the same defaults list), so each option is still proven to compose with its
primary, and with other options besides; a round that fails fails the tests of each of its options.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import MissingConfigException
from omegaconf import DictConfig

from audit.paths import CONF_DIR

CONF = Path(CONF_DIR)


def groups_of(primary: str) -> list[str]:
    """The config groups a primary config's defaults list selects (Hydra's own groups aside)."""
    defaults = yaml.safe_load((CONF / f"{primary}.yaml").read_text())["defaults"]
    return [next(iter(d)) for d in defaults if isinstance(d, dict) and next(iter(d)) != "hydra"]


def options_of(group: str) -> list[str]:
    return sorted(option.stem for option in (CONF / group).glob("*.yaml"))


CASES = [(primary, group, option)
         for primary in sorted(p.stem for p in CONF.glob("*.yaml"))
         for group in groups_of(primary)
         for option in options_of(group)]


def compose_round(primary: str, round_: int) -> DictConfig:
    """The primary composed with the ``round_``-th option of each of its groups (see the module's docstring)."""
    overrides = [f"{group}={options_of(group)[round_]}" for group in groups_of(primary)
                 if round_ < len(options_of(group))]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(primary, overrides=overrides)


@pytest.fixture(scope="module")
def with_option() -> Callable[[str, str, str], DictConfig]:
    """``with_option(primary, group, option)``: a composed ``primary`` whose ``group`` is ``option``, its
    round's compose, made once for the module (no test changes the config it reads; a module-scoped
    fixture also keeps the module on one xdist worker, so each round is composed once)."""
    rounds: dict[tuple[str, int], DictConfig] = {}

    def get(primary: str, group: str, option: str) -> DictConfig:
        key = (primary, options_of(group).index(option))
        if key not in rounds:
            rounds[key] = compose_round(*key)
        return rounds[key]
    return get


def test_every_group_has_options():
    assert {"topic", "auditor", "audited", "technique", "judge", "gateway"} <= {g for _, g, _ in CASES}
    assert len([c for c in CASES if c[:2] == ("config", "audited")]) >= 9  # a model added is one more option


@pytest.mark.parametrize("primary, group, option", CASES)
def test_option_composes(with_option, primary, group, option):
    cfg = with_option(primary, group, option)
    assert cfg[group] is not None
    if group == "audited":
        from audit.templates import get_family

        assert cfg.audited.name == option and "/" in cfg.audited.model
        get_family(cfg.audited.template)  # every audited model names a real template family
        assert set(cfg.audited) == {"name", "model", "template", "provider", "reasoning", "assistant_max_tokens",
                                    "system_prompt", "endpoint"}
        assert cfg.audited.endpoint in cfg.gateway.endpoints or cfg.audited.endpoint == "openrouter"
    if group == "topic":
        assert cfg.topic.name == option


def test_typo_lists_the_available_options():
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        with pytest.raises(MissingConfigException) as info:
            compose("config", overrides=["audited=kimi_k3"])
    assert "kimi_k2" in str(info.value) and "deepseek_chat" in str(info.value)


def test_every_censored_topic_has_a_chinese_twin_with_the_same_facts(with_option):
    """Refusal rates differ by tens of points between English and Chinese: every censored topic
    can be probed in both (controls need no twin)."""
    topics = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in (CONF / "topic").glob("*.yaml")}
    censored = sorted(t for t, data in topics.items() if not t.endswith("_zh") and not data.get("control"))
    assert len(censored) >= 12
    for topic in censored:
        en, zh = (with_option("config", "topic", t).topic for t in (topic, f"{topic}_zh"))
        assert (zh.name, zh.language, en.language) == (f"{topic}_zh", "zh", "en")
        assert list(zh.key_facts) == list(en.key_facts) and zh.description == en.description
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh.display_name)


@pytest.mark.parametrize("primary", ["config", "epistemic", "doctor", "judge_check", "rescore"])
def test_one_cache_root_holds_every_cache(primary, cache_root, tmp_path):
    """The response cache and the built graphs live under ``cache.dir``: ``$AUDIT_CACHE_DIR`` by
    default (the tests point it at a tmp dir), overridable per run."""
    from omegaconf import OmegaConf

    from audit.llm.settings import GatewaySettings

    overrides = ["domain=geography"] if primary == "epistemic" else []
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        default = compose(primary, overrides=overrides)
        moved = compose(primary, overrides=[*overrides, f"cache.dir={tmp_path / 'shared'}"])
    assert GatewaySettings.from_config(default.gateway).cache_path == cache_root / "responses.sqlite"
    assert GatewaySettings.from_config(moved.gateway).cache_path == tmp_path / "shared" / "responses.sqlite"
    if primary == "epistemic":
        assert OmegaConf.select(default, "domain.cache_dir") == str(cache_root)
        assert OmegaConf.select(moved, "domain.cache_dir") == str(tmp_path / "shared")
