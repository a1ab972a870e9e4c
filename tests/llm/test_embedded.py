"""local= parsing and role routing for the embedded model (pure; the server itself is in tests/real_model)."""

import pytest
from omegaconf import OmegaConf

from audit.errors import UserError
from audit.llm.embedded import ENDPOINT, MODEL, TEMPLATE, chosen_roles, route

ROLES = ("auditor", "audited", "judge")


@pytest.mark.parametrize("setting,expected", [
    (False, []), (None, []), ("false", []), (True, list(ROLES)), ("true", list(ROLES)),
    (["audited"], ["audited"]), ("judge", ["judge"]), (OmegaConf.create(["auditor", "judge"]), ["auditor", "judge"]),
])
def test_local_setting_names_roles(setting, expected):
    assert chosen_roles(setting, ROLES) == expected


def test_unknown_role_is_one_line_listing_the_roles():
    with pytest.raises(UserError, match=r"local='target': expected true, false or a list of roles from auditor, "
                                        r"audited, judge"):
        chosen_roles(["target"], ROLES)


def test_route_points_the_audited_role_at_the_embedded_model_and_its_template():
    cfg = OmegaConf.create({"audited": {"name": "deepseek_chat", "model": "deepseek/deepseek-chat",
                                        "template": "deepseek_v3", "provider": {"order": ["x"]},
                                        "system_prompt": "be brief"}})
    OmegaConf.set_struct(cfg, True)  # as Hydra hands it over
    route(cfg.audited, audited=True)
    assert (cfg.audited.endpoint, cfg.audited.model, cfg.audited.template) == (ENDPOINT, MODEL, TEMPLATE)
    assert cfg.audited.provider is None and cfg.audited.system_prompt is None
    assert cfg.audited.name == "smollm2_local"


def test_route_sets_the_configured_embedded_settings_on_the_role():
    cfg = OmegaConf.create({"auditor": {"model": "anthropic/claude-sonnet-4", "max_tokens": 4096, "max_reask": 2}})
    OmegaConf.set_struct(cfg, True)
    route(cfg.auditor, settings=OmegaConf.create({"max_tokens": 1024}))
    assert (cfg.auditor.model, cfg.auditor.max_tokens, cfg.auditor.max_reask) == (MODEL, 1024, 2)



def test_the_deadline_follows_the_measured_speed_and_never_falls_under_the_configured_one():
    from audit.llm.embedded import MARGIN, SLOT_TOKENS, Speed

    slow = Speed(prompt_per_s=100.0, written_per_s=4.0)  # a busy laptop
    assert slow.call_s(SLOT_TOKENS, 512) == SLOT_TOKENS / 100 + 128
    assert slow.deadline_s(512, floor_s=120) == MARGIN * (SLOT_TOKENS / 100 + 128)  # far past a fixed 120 s
    assert Speed(prompt_per_s=1e6, written_per_s=1e4).deadline_s(512, floor_s=120) == 120  # a fast one keeps the floor
