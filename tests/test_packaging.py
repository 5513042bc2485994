"""What `pip install /path/to/agent-exam` (a wheel, not the editable checkout) ships.

A deployment installs the package (docs/deployment.md), so a template or schema that the
package-data globs miss works in every test of the checkout and fails in production: the
dashboard's stylesheet, included by base.html, once made every page a 500 there.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def shipped(package: str) -> set[Path]:
    """The data files setuptools puts in the wheel for ``package``: its package-data globs."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"].get("package-data", {}).get(package, [])
    return {p for pattern in patterns for p in (ROOT / package).glob(pattern) if p.is_file()}


def data_files(package: str) -> set[Path]:
    """Every file of ``package`` that is not Python source (nor its bytecode)."""
    return {p for p in (ROOT / package).rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
            and "__pycache__" not in p.parts}


@pytest.mark.parametrize("package", ["exam", "graders"])
def test_every_data_file_of_the_package_is_installed(package):
    missing = sorted(str(p.relative_to(ROOT)) for p in data_files(package) - shipped(package))
    assert not missing, (f"not in [tool.setuptools.package-data] {package} of pyproject.toml, so "
                         f"not installed by pip: {missing}")


def test_the_dashboard_stylesheet_is_among_them():
    # the check above is only as good as its idea of a data file: the file that broke it once
    assert ROOT / "exam" / "templates" / "_style.css" in shipped("exam")


def test_the_demo_bank_is_installed_where_exam_demo_looks_for_it(tmp_path, monkeypatch):
    # a pip install has no repository root: `exam demo` reads the bank pip puts in
    # <prefix>/share/agent-exam/bank (data-files), every file of bank/ included
    import sysconfig

    from exam.demo.main import SHARED_BANK, demo_bank_dir

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data_files = config["tool"]["setuptools"]["data-files"]
    shipped_banks = {p for pattern in data_files[str(SHARED_BANK)] for p in ROOT.glob(pattern)}
    assert shipped_banks == set((ROOT / "bank").glob("*.json"))

    assert demo_bank_dir(ROOT) == ROOT / "bank"
    prefix = tmp_path / "venv"
    (prefix / SHARED_BANK).mkdir(parents=True)
    monkeypatch.setattr(sysconfig, "get_path", lambda name, scheme=None: str(prefix))
    assert demo_bank_dir(tmp_path / "site-packages") == prefix / SHARED_BANK
