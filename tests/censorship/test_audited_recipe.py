"""The docs' worked `conf/audited/<name>.yaml` is a model that runs: the file exactly as printed in
docs/audit.md, put in a config dir of one's own, audits through its chat template."""

from __future__ import annotations

import json
import re
from pathlib import Path

from audit.testing.scripted_audit import Script

from .test_main import BASE, audit, finish

DOC = Path(__file__).resolve().parents[2] / "docs" / "audit.md"


def worked_example() -> tuple[str, str]:
    """(file name, yaml) of the worked example in the docs' model recipe."""
    match = re.search(r"```yaml\n# conf/audited/(\w+)\.yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert match, "docs/audit.md lost its worked conf/audited example"
    return match.group(1), match.group(2)


def test_the_worked_audited_file_runs(tmp_path, fake_openrouter):
    name, text = worked_example()
    (tmp_path / "mine" / "audited").mkdir(parents=True)
    (tmp_path / "mine" / "audited" / f"{name}.yaml").write_text(text, encoding="utf-8")
    fake_openrouter.handler = Script(stop_at_turn=2).handler
    code, out, err = finish(audit(tmp_path, fake_openrouter, "--config-dir", str(tmp_path / "mine"),
                                  f"audited={name}", *BASE))
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["config"]["audited"]["model"] == "qwen/qwen-2.5-7b-instruct"
    (request,) = fake_openrouter.completion_requests()
    assert request.json["model"].endswith("qwen/qwen-2.5-7b-instruct")
    assert request.json["prompt"].startswith("<|im_start|>system")  # the qwen2_5 family's own render
