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


def wheel_files(source: Path, into: Path) -> set[str]:
    """Build a wheel of ``source`` as `pip install /path/to/agent-exam` does, and list it."""
    import subprocess
    import sys
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(into), str(source)], check=True, capture_output=True)
    (wheel,) = into.glob("*.whl")
    with zipfile.ZipFile(wheel) as zipped:
        return set(zipped.namelist())


@pytest.mark.slow  # builds wheels with pip
def test_a_file_removed_from_the_checkout_is_not_installed_by_the_next_pip_install(tmp_path):
    # pip builds in the checkout, and setuptools copies into build/lib without ever emptying it:
    # an upgrade from the same clone (docs/deployment.md section 8) shipped a migration or
    # module deleted since the last install, beside its successor
    import shutil

    source = tmp_path / "agent-exam"
    source.mkdir()
    for name in ("exam", "graders", "bank"):
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, source / name)
    gone = source / "exam" / "db" / "migrations" / "versions" / "0099_removed_later.py"
    gone.write_text('"""A migration this version has and the next one does not."""\n')

    first = wheel_files(source, tmp_path / "first")
    assert "exam/db/migrations/versions/0099_removed_later.py" in first
    gone.unlink()
    second = wheel_files(source, tmp_path / "second")
    assert "exam/db/migrations/versions/0099_removed_later.py" not in second
    assert "exam/db/migrations/versions/0007_baseline.py" in second
