"""Which code produced a result: the git commit of this checkout, so a run's rows can be checked
to come from one version of the evaluator (an audit whose rows mix versions cannot be quoted).

`CUDAL1_COMMIT` wins when set: a copy of the tree on another machine (the device tool's) may
carry git metadata older than its files. Outside a checkout of cudal1 (an installed wheel, even
one inside another project's repository) the package version stands in. A checkout whose
package files differ from the commit (changed, or new and not ignored) is `SHA+dirty`.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from cudal1 import __version__

COMMIT_ENV = "CUDAL1_COMMIT"


@functools.cache
def code_version() -> str:
    if os.environ.get(COMMIT_ENV):
        return os.environ[COMMIT_ENV]
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(here), *args], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    if not sha or not git("ls-files", "--", Path(__file__).name):
        return __version__  # not a checkout of cudal1 (an install inside another repository)
    dirty = git("status", "--porcelain", "--", ".")  # the package's own files only
    return f"{sha}+dirty" if dirty else sha
