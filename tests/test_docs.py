"""The documentation: a short README, a docs site that builds with strict link checking, and the
pages generated from the code (configuration, CLI) equal to what the code would write now."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from audit.epistemic.rates import RATE_NAMES
from audit.judging.judge import CLASSES
from audit.paths import conf_dir
from audit.reference import config_page

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_the_docs_build_strictly_and_offline(tmp_path):
    """`mkdocs build --strict` fails on a broken link or anchor, a page missing from the nav or a nav
    entry without a page (mkdocs.yml's validation block); the built site asks no font or CDN host."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    pages = list((tmp_path / "site").glob("*.html"))
    assert len(pages) >= len(list(DOCS.glob("*.md")))
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert not re.search(r"fonts\.googleapis|fonts\.gstatic|cdn\.jsdelivr|unpkg\.com", html), page.name


def test_strict_build_catches_a_broken_link(tmp_path):
    """The check can fail: the same site with one link to a missing page is refused."""
    shutil.copytree(DOCS, tmp_path / "docs", symlinks=False)
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "docs" / "index.md").write_text("# x\n\n[gone](no-such-page.md)\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode != 0 and "no-such-page.md" in done.stdout + done.stderr


def test_the_configuration_page_is_the_config_tree():
    assert (DOCS / "configuration.md").read_text(encoding="utf-8") == config_page.render(conf_dir()), (
        "docs/configuration.md differs from conf/: run python -m audit.reference")


def test_the_configuration_page_follows_a_changed_default(tmp_path):
    """A default changed in conf/ changes the page, so the test above fails until it is regenerated."""
    shutil.copytree(conf_dir(), tmp_path / "conf")
    config = tmp_path / "conf" / "config.yaml"
    text = config.read_text(encoding="utf-8")
    assert "max_iterations: 20" in text
    config.write_text(text.replace("max_iterations: 20", "max_iterations: 21"), encoding="utf-8")
    assert config_page.render(tmp_path / "conf") != config_page.render(conf_dir())
    assert "max_iterations: 21" in config_page.render(tmp_path / "conf")


def test_the_cli_page_is_every_entrypoints_help():
    """Every `python -m` module answers --help (the generator fails loudly otherwise), and the page is
    what they print now."""
    done = subprocess.run([sys.executable, "-m", "audit.reference", "--check", "--docs", str(DOCS)],
                          capture_output=True, text=True, timeout=900, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_python_m_module_is_on_the_cli_page():
    from audit.reference.cli_page import ENTRYPOINTS

    src = ROOT / "src"
    modules = set()
    for path in (src / "audit").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name == "__main__.py" or 'if __name__ == "__main__"' in text:
            parts = path.relative_to(src).with_suffix("").parts
            modules.add(".".join(parts[:-1] if parts[-1] == "__main__" else parts))
    modules.discard("audit.reference")  # the generator itself
    assert modules == {m for m, _ in ENTRYPOINTS}


def test_the_readme_is_short_and_its_commands_are_the_real_ones():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    first, test_command = blocks[0], next(b for b in blocks if "pytest" in b)
    assert "local=true" in first and first.startswith("python3 -m venv .venv")  # runs with no key
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == test_command  # .ci/run runs exactly the README's test command
    assert "--durations=" in test_command
    for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.(?:md|cff)|LICENSE)(?:#[\w-]+)?\)", readme):
        assert (ROOT / link).is_file(), link


def test_every_number_and_label_is_defined():
    """AP and every epistemic rate, and every response label (judging/labels.yaml), each have an anchored entry."""
    numbers = (DOCS / "numbers.md").read_text(encoding="utf-8")
    for name in (*RATE_NAMES, *CLASSES):
        assert f'<a id="{name.lower()}"></a>' in numbers, name


def test_licence_and_citation():
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert "cff-version: 1.2.0" in cff and "license: MIT" in cff


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_no_page_points_at_the_old_readme_sections(page):
    """The README's sections moved here: "see the README, 'X'" or (README "X") would send a reader nowhere."""
    text = (DOCS / page).read_text(encoding="utf-8")
    assert not re.search(r"\(README\b|README[,:] ['\"“]|see the README", text), page


def test_every_term_the_pages_define_has_its_entry_in_the_docs():
    """A header's "?" cites docs/numbers.md#<anchor>: each anchor exists there (an <a id> or a heading)."""
    from audit.compare.terms import GLOSSARY

    numbers = (DOCS / "numbers.md").read_text(encoding="utf-8")
    headings = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                for h in re.findall(r"^#+ (.*)$", numbers, re.M)}
    for term in GLOSSARY.all_terms():
        assert f'<a id="{term.anchor}"></a>' in numbers or term.anchor in headings, term


def mapped_packages(design: str) -> tuple[set[str], set[str]]:
    """The packages the code map in docs/design.md ("Repository layout") names: those listed under
    ``src/audit/`` (``  <name>/`` lines) and each ``src/hydra_plugins/<name>/`` line."""
    block = design.split("## Repository layout", 1)[1].split("```", 2)[1]
    audit: set[str] = set()
    plugins: set[str] = set()
    root = None
    for line in block.splitlines():
        if line and not line.startswith(" "):
            root = line.split()[0]
            if root.startswith("src/hydra_plugins/"):
                plugins.add(root.removeprefix("src/hydra_plugins/").strip("/"))
        elif root == "src/audit/" and (found := re.match(r"^  (\w+)/", line)):
            audit.add(found.group(1))
    return audit, plugins


def packages(root: Path) -> set[str]:
    return {init.parent.name for init in root.glob("*/__init__.py")}


def test_the_code_map_names_every_package_where_it_is():
    """Every package under src/audit is a line of the code map under src/audit/ (not under another root),
    and every Hydra plugin package under src/hydra_plugins/; the map names no package that is gone."""
    audit, plugins = mapped_packages((DOCS / "design.md").read_text(encoding="utf-8"))
    assert audit == packages(ROOT / "src" / "audit"), "docs/design.md's code map: add or remove these packages"
    assert plugins == packages(ROOT / "src" / "hydra_plugins")


def test_the_code_map_check_fails_on_a_missing_or_misplaced_package():
    design = (DOCS / "design.md").read_text(encoding="utf-8")
    without = re.sub(r"^  benchmark/.*\n", "", design, count=1, flags=re.M)
    assert "benchmark" not in mapped_packages(without)[0]
    # io/ listed under the plugin's root (as the map once had it) is not a package of src/audit
    misplaced = re.sub(r"^(  io/.*\n)((?:.*\n)*?)(src/hydra_plugins/\S+\n(?: {22}.*\n)*)", r"\2\3\1", design,
                       count=1, flags=re.M)
    assert misplaced != design and "io" not in mapped_packages(misplaced)[0]


def test_the_home_page_links_every_page_of_the_site():
    """docs/index.md's table links every page of the nav, each experiment's page among them."""
    import yaml

    def pages(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        items = nav.values() if isinstance(nav, dict) else nav if isinstance(nav, list) else []
        return [page for item in items for page in pages(item)]

    nav = pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    assert {"audit.md", "epistemic.md", "benchmark.md"} <= set(nav)
    assert [page for page in nav if page != "index.md" and f"]({page})" not in home] == []


def test_the_site_s_changelog_is_the_repository_s():
    """One changelog: the site's page is a link to ``CHANGELOG.md``. It had become a copy (a helper wrote the
    page in place of the link) and the two drifted apart, each holding entries the other lacked."""
    assert (DOCS / "changelog.md").is_symlink() and (DOCS / "changelog.md").resolve() == ROOT / "CHANGELOG.md"
