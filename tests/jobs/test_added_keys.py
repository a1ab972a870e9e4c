"""A +key that nothing reads is refused; the keys under user-owned mappings stay open."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.errors import UserError
from audit.jobs.added_keys import added_key, check_added_keys, options_holding
from audit.paths import conf_dir

CONF = conf_dir()


@pytest.mark.parametrize("override, fix", [
    ("+max_iteration=3", "did you mean max_iterations=3?"),
    ("+sampling.temprature=0.5", "did you mean sampling.temperature=0.5?"),
    ("+judge.modle=x/y", "did you mean judge.model=x/y?"),  # judge is a group: its default option's keys
    ("+zzz=1", "see the keys with --cfg job"),
])
def test_an_added_key_nothing_reads_is_one_line(override, fix):
    with pytest.raises(UserError) as refused:
        check_added_keys(["topic=tibet", override], "config", CONF)
    assert str(refused.value) == f"{override} adds a key nothing reads (it would be ignored); {fix}"


@pytest.mark.parametrize("override", [
    "+gateway.endpoints.gpu={api_base: 'http://10.0.0.5:8000/v1', key_env: GPU_API_KEY}",
    "+hydra.launcher.ray.init.num_cpus=2", "++max_iterations=3", "~judge", "max_iterations=3", "+topic=tibet",
])
def test_keys_that_are_read_pass(override):
    check_added_keys([override], "config", CONF)


def test_per_system_settings_pass_in_the_epistemic_app():
    check_added_keys(["+per_system.rag.endpoint=local", "+per_system.rag.model=m"], "epistemic", CONF)


def test_added_key():
    assert added_key("+a.b=1") == "a.b" and added_key("++a=1") is None and added_key("a=1") is None


def test_options_holding(tmp_path: Path):
    assert options_holding(CONF, "technique.menu") == ["auto"]
    assert options_holding(CONF, "technique.nothing") == [] and options_holding(CONF, "max_iterations") == []
