"""The package entrypoint stays light: ``--help`` must not pay for litellm (~3 s)."""

from __future__ import annotations

import subprocess
import sys


def test_help_works_without_importing_litellm(tmp_path):
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "audit", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "audited" in proc.stdout and "topic" in proc.stdout
    imported = [line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "hydra" in imported and not [m for m in imported if m.split(".")[0] == "litellm"]


def test_cfg_job_shows_the_composed_config(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "audit", "--cfg", "job", "topic=tibet", "audited=glm_4_5"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "model: z-ai/glm-4.5" in proc.stdout and "name: tibet" in proc.stdout and "resume: null" in proc.stdout
