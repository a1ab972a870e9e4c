import pytest
from omegaconf import OmegaConf

from audit.errors import UserError
from audit.llm.settings import GatewaySettings, require_api_key


def test_env_base_url_overrides_config(monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_BASE", "http://127.0.0.1:9/v1/")
    node = OmegaConf.create({"api_base": "https://example.invalid/api/v1", "cache": {"enabled": False}})
    settings = GatewaySettings.from_config(node)
    assert settings.api_base == "http://127.0.0.1:9/v1"
    assert settings.cache_enabled is False


def test_missing_key_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as info:
        require_api_key()
    message = str(info.value)
    assert "OPENROUTER_API_KEY" in message and ".env" in message and "\n" not in message


def test_bad_base_url_rejected(monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_BASE", raising=False)
    with pytest.raises(UserError, match="not an http"):
        GatewaySettings.from_config(OmegaConf.create({"api_base": "example.invalid"}))


def test_an_endpoint_may_have_its_own_deadline_and_the_timeout_names_it():
    node = OmegaConf.create({"endpoints": {"embedded": {"api_base": "http://127.0.0.1:1/v1", "timeout_s": 900},
                                           "local": {"api_base": "http://127.0.0.1:2/v1"}}})
    settings = GatewaySettings.from_config(node)
    assert settings.deadline_s("embedded") == 900 and settings.deadline_setting("embedded") == \
        "gateway.endpoints.embedded.timeout_s"
    assert settings.deadline_s("local") == settings.deadline_s("openrouter") == 120  # the gateway's
    assert settings.deadline_setting("local") == "gateway.timeout_s"
    assert settings.deadline_s("embedded", streamed=True) == settings.stream_timeout_s
    with pytest.raises(UserError, match="timeout_s"):
        GatewaySettings.from_config(OmegaConf.create({"endpoints": {"e": {"api_base": "http://x/v1", "timeout_s": 0}}}))
