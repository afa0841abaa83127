import json

import pytest

from cudal1 import __version__


def test_version(cli):
    code, out, _ = cli("--version")
    assert code == 0 and __version__ in out


@pytest.mark.parametrize(
    "args", [[], ["tasks"], ["tasks", "list"], ["tasks", "show"], ["tasks", "check"]]
)
def test_help_on_every_command(cli, args):
    code, out, _ = cli(*args, "--help")
    assert code == 0 and "Usage" in out


def test_tasks_list_json(cli):
    code, out, _ = cli("tasks", "list", "--json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) >= 40
    assert {"id", "level", "name", "split", "hash"} <= set(rows[0])
    assert {r["split"] for r in rows} == {"train", "heldout"}


def test_tasks_list_paths(cli, kernelbench_dir, cudal1_file):
    for path in (kernelbench_dir, cudal1_file):
        code, out, _ = cli("tasks", "list", str(path), "--json")
        assert code == 0 and len(json.loads(out)) == 3


def test_tasks_show(cli):
    code, out, _ = cli("tasks", "show", "L1_1", "--json")
    row = json.loads(out)
    assert code == 0 and row["id"] == "L1_1" and "class Model" in row["source"]
    assert row["cpu_sizes"]


def test_bad_input_is_one_line_and_exit_2(cli, tmp_path):
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_X.py").write_text("class Model(:\n")
    code, out, err = cli("tasks", "list", str(tmp_path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "1_X.py: line 1: syntax error" in err
    code, _, err = cli("tasks", "show", "L7_7")
    assert code == 2 and "no task 'L7_7'" in err


def test_tasks_check_on_fixture_suite(cli, kernelbench_dir):
    code, out, _ = cli("tasks", "check", str(kernelbench_dir), "--device", "cpu", "--json")
    assert code == 0
    assert all(r["ok"] for r in json.loads(out))
