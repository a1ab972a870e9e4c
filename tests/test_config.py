"""Every option of every config group composes with its primary config; typos list the options."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import MissingConfigException

from audit.paths import CONF_DIR

CONF = Path(CONF_DIR)


def groups_of(primary: str) -> list[str]:
    """The config groups a primary config's defaults list selects (Hydra's own groups aside)."""
    defaults = yaml.safe_load((CONF / f"{primary}.yaml").read_text())["defaults"]
    return [next(iter(d)) for d in defaults if isinstance(d, dict) and next(iter(d)) != "hydra"]


CASES = [(primary, group, option.stem)
         for primary in sorted(p.stem for p in CONF.glob("*.yaml"))
         for group in groups_of(primary)
         for option in sorted((CONF / group).glob("*.yaml"))]


def test_every_group_has_options():
    assert {"topic", "auditor", "audited", "technique", "judge", "gateway"} <= {g for _, g, _ in CASES}
    assert len([c for c in CASES if c[:2] == ("config", "audited")]) >= 9  # a model added is one more option


@pytest.mark.parametrize("primary, group, option", CASES)
def test_option_composes(primary, group, option):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(primary, overrides=[f"{group}={option}"])
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


def test_every_censored_topic_has_a_chinese_twin_with_the_same_facts():
    """Refusal rates differ by tens of points between English and Chinese: every censored topic
    can be probed in both (controls need no twin)."""
    topics = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in (CONF / "topic").glob("*.yaml")}
    censored = sorted(t for t, data in topics.items() if not t.endswith("_zh") and not data.get("control"))
    assert len(censored) >= 12
    for topic in censored:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            en, zh = (compose("config", overrides=[f"topic={t}"]).topic for t in (topic, f"{topic}_zh"))
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
