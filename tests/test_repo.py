"""Repository contracts: CI runs exactly the README's test command."""

import re

from .conftest import REPO


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)\n```", readme.split("## Quickstart")[1], re.S)
    test_line = blocks[1].strip()
    assert "pytest" in test_line
    ci_lines = [ln for ln in (REPO / ".ci" / "run").read_text().splitlines() if "pytest" in ln]
    assert ci_lines == [test_line]
