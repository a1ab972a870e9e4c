"""Config names that become path components cannot leave ``output_dir``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.errors import UserError
from audit.io.names import path_component
from tests import entrypoints

TRAVERSALS = ["..", ".", "../../escaped", "/tmp/escaped", "a/../../escaped", "a\\..\\escaped", "",
              ".hidden", "a b", "a\nb", "x" * 101, "-rf"]


@pytest.mark.parametrize("bad", TRAVERSALS)
def test_unsafe_names_are_refused_in_one_line_naming_the_key(bad):
    with pytest.raises(UserError) as caught:
        path_component(bad, "topic.name")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("topic.name=") and "topic.name=my_topic" in message


@pytest.mark.parametrize("good", ["tiananmen", "qwen3_235b", "gpt-4.1", "A1", "x" * 100])
def test_ordinary_names_pass_unchanged(good):
    assert path_component(good, "audited.name") == good


# -- through the real entrypoints: exit 1, one line, nothing written anywhere ----------------

ENTRY_OVERRIDES = [
    ("audit", "topic.name"), ("audit", "audited.name"),
    ("audit.epistemic", "predicate.name"),
]


def _run(cwd: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENROUTER_")}
    env["OPENROUTER_API_KEY"] = "sk-or-test-not-a-real-key"
    return entrypoints.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=120)


@pytest.mark.parametrize("value", ["../../escaped", "/tmp/i9b-escaped", "''"])
@pytest.mark.parametrize("module,key", ENTRY_OVERRIDES)
def test_entrypoints_refuse_path_escaping_names(tmp_path, module, key, value):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    extra = ["stage=cards", "cards.num_per_type=1"] if module == "audit.epistemic" else ["max_iterations=1"]
    proc = _run(work, module, f"{key}={value}", "output_dir=out", *extra)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and key in proc.stderr and "Traceback" not in proc.stderr
    assert not (work / "out").exists() or not any((work / "out").rglob("*.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"] and not Path("/tmp/i9b-escaped").exists()


def test_domain_name_reaching_the_run_dir_is_checked(tmp_path):
    proc = _run(tmp_path, "audit.epistemic", "domain.name=../escaped", "predicate.domain=../escaped",
                "stage=cards", "cards.num_per_type=1", "output_dir=out")
    assert proc.returncode == 1 and "domain.name=" in proc.stderr and proc.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["out"])
