"""Which code made a result: the checkout's commit, CUDAL1_COMMIT where a copy's git metadata
cannot be trusted, the package version outside git."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import cudal1
from cudal1 import version

PACKAGE = Path(cudal1.__file__).parent


def _version_in(path: Path, env: dict[str, str]) -> str:
    code = "from cudal1.version import code_version; print(code_version())"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(path)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_the_environment_names_the_commit(monkeypatch):
    monkeypatch.setenv(version.COMMIT_ENV, "feedbeef")
    version.code_version.cache_clear()
    try:
        assert version.code_version() == "feedbeef"
    finally:
        version.code_version.cache_clear()


def test_a_checkout_gives_its_commit_and_a_copy_outside_git_the_package_version(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != version.COMMIT_ENV}
    head = subprocess.run(
        ["git", "-C", str(PACKAGE), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    if head:
        assert _version_in(PACKAGE.parent, env).removesuffix("+dirty") == head
    shutil.copytree(PACKAGE, tmp_path / "cudal1", ignore=shutil.ignore_patterns("__pycache__"))
    assert _version_in(tmp_path, env) == cudal1.__version__


def test_an_install_inside_another_repository_is_not_named_by_its_commit(tmp_path):
    """A virtual environment inside a user's project: git finds the project's repository, whose
    commit says nothing about cudal1's code."""
    env = {k: v for k, v in os.environ.items() if k != version.COMMIT_ENV}
    project = tmp_path / "project"
    site = project / ".venv" / "site-packages"
    shutil.copytree(PACKAGE, site / "cudal1", ignore=shutil.ignore_patterns("__pycache__"))
    (project / ".gitignore").write_text(".venv/\n")
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", ".gitignore"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    assert _version_in(site, env) == cudal1.__version__
