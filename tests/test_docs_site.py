"""The documentation site builds: ``mkdocs build --strict`` over docs/ with no warning (a broken link
or anchor, a page missing from the nav or a nav entry without its page all fail), and the results
page is what benchmarks/render_results.py makes of the committed result files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (the docs extra: pip install -e '.[docs]')")
    pytest.importorskip("material", reason="mkdocs-material is not installed (the docs extra)")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert done.returncode == 0, done.stderr[-4000:]
    for page in sorted((REPO / "docs").glob("*.md")):
        name = "index.html" if page.stem == "index" else f"{page.stem}/index.html"
        assert (tmp_path / "site" / name).is_file(), f"docs/{page.name} was not built"


def test_the_results_page_is_generated_from_the_result_files(tmp_path: Path) -> None:
    """docs/results.md is exactly what the renderer makes of benchmarks/results/: nobody edited
    it by hand, and no result file was committed without rendering it."""
    page = tmp_path / "results.md"
    done = subprocess.run([sys.executable, "-m", "benchmarks.render_results", "--results",
                           str(REPO / "benchmarks" / "results"), "--out", str(page)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert page.read_text() == (REPO / "docs" / "results.md").read_text(), \
        "docs/results.md is stale: run python -m benchmarks.render_results"


def test_pictures_the_docs_keep_are_used() -> None:
    pictures = {p.name for p in (REPO / "docs").glob("*.png")}
    text = "".join(p.read_text() for p in (REPO / "docs").glob("*.md"))
    unused = sorted(name for name in pictures if f"({name})" not in text)
    assert pictures and not unused, f"pictures in docs/ no page shows: {unused}"


def test_the_test_extra_installs_the_docs_tools() -> None:
    """CI installs the test extra; it must bring mkdocs, or the build test above would only skip."""
    try:
        import tomllib
    except ModuleNotFoundError:          # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("mkdocs-material") for req in extras["docs"])
    assert any(req.startswith("fpgashare[") and "docs" in req.split("[")[1] for req in extras["test"])
