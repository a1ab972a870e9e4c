"""The fast --help: the app's own groups, defaults marked, header from hydra.help."""

import subprocess
import sys

import pytest

from audit.jobs.cli_help import render_help, wants_help


def test_wants_help_only_for_app_help():
    assert wants_help(["prog", "topic=x", "--help"]) and wants_help(["prog", "-h"])
    assert not wants_help(["prog", "--hydra-help"]) and not wants_help(["prog", "topic=help"])


def test_lists_the_apps_own_groups_with_defaults(tmp_path):
    (tmp_path / "color").mkdir()
    (tmp_path / "other").mkdir()
    for name in ("red", "blue"):
        (tmp_path / "color" / f"{name}.yaml").write_text("x: 1\n")
    (tmp_path / "other" / "o.yaml").write_text("x: 1\n")
    (tmp_path / "app.yaml").write_text(
        "defaults:\n  - color: red\n  - hydra: default\n  - _self_\n"
        "hydra:\n  help:\n    app_name: python -m app\n    header: |\n      Paints things.\n")
    text = render_help("app", tmp_path)
    assert text.startswith("Paints things.")
    assert "color: blue, red*" in text
    assert "other" not in text and "hydra:" not in text
    assert "python -m app [group=option" in text


@pytest.mark.parametrize(("module", "group"), [("audit", "audited:"), ("audit.epistemic", "predicate:"),
                                                ("audit.doctor", "audited:"), ("audit.judge_check", "judge:"),
                                                ("audit.rescore", "judge:")])
def test_each_entrypoint_answers_help_without_litellm(module, group, tmp_path):
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", module, "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert group in done.stdout and "default marked *" in done.stdout
    assert "litellm" not in done.stderr


EVERYDAY = {
    "config": ("local=", "samples=", "budget.max_cost_usd=", "judge.model=", "judge.models=", "technique.with_baseline=",
               "export.inspect=", "max_iterations="),
    "epistemic": ("cards.num_per_type=", "cards.suites=", "cards.conditions=", "systems=", "local=", "samples="),
    "doctor": ("audited.provider=", "local="),
    "rescore": ("judge.model=", "judge.models=", "judging="),
    "judge_check": ("judge.model=", "judge.models=", "local="),
}


@pytest.mark.parametrize("config_name", sorted(EVERYDAY))
def test_help_lists_the_everyday_settings_and_each_is_a_real_key(config_name):
    """--help names the settings a user reaches for daily, and every key=value it shows is a key the
    composed config has (the help never advertises a key nothing reads)."""
    import re

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from audit.paths import CONF_DIR

    text = render_help(config_name)
    for knob in EVERYDAY[config_name]:
        assert knob in text, knob
    footer = text.split("Everyday settings", 1)[1]
    shown = set(re.findall(r"(?<![\w./+<-])([a-z_]+(?:\.[a-z_]+)*)=", footer))
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(config_name, overrides={"config": ["technique=auto"], "epistemic": ["system=raw_llm"]}.get(config_name, []))
    groups = {"topic", "audited", "auditor", "technique", "judge", "domain", "predicate", "system", "hydra/launcher"}
    for key in shown - groups:
        assert OmegaConf.select(cfg, key, default="<missing>") != "<missing>", f"--help shows {key}=, not a config key"
