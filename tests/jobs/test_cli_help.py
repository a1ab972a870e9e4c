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
