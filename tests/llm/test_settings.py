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
