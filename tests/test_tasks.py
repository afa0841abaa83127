import json
from pathlib import Path

import pytest
import torch

from cudal1.errors import Cudal1Error
from cudal1.tasks import (
    TaskError,
    default_split,
    load_suite,
    load_task_file,
    read_cudal1_solutions,
)

from .conftest import CUDAL1_RELEASE, RELU_TASK


def test_bundled_suite_has_three_levels_and_a_heldout_quarter():
    suite = load_suite("bundled")
    assert len(suite.tasks) >= 40
    by_level = {lv: [t for t in suite.tasks if t.level == lv] for lv in (1, 2, 3)}
    assert len(by_level[1]) >= 20 and len(by_level[2]) >= 14 and len(by_level[3]) >= 6
    for tasks in by_level.values():
        held = sum(t.split == "heldout" for t in tasks)
        assert 0.15 <= held / len(tasks) <= 0.4, (held, len(tasks))
    assert len({t.id for t in suite.tasks}) == len(suite.tasks)
    assert len({t.hash for t in suite.tasks}) == len(suite.tasks)


def test_bundled_tasks_define_cpu_sizes_smaller_than_full():
    for task in load_suite("bundled").tasks:
        tm = task.load("full")
        assert tm.cpu_sizes, f"{task.id} has no CPU_SIZES"
        for name, value in tm.cpu_sizes.items():
            assert value <= tm.full_sizes[name], (task.id, name)


def test_cpu_profile_overrides_module_sizes():
    task = load_suite("bundled").get("L1_1")
    assert task.load("cpu").sizes["N"] < task.load("full").sizes["N"]
    x = task.load("cpu").make_inputs(0)
    assert x[0].shape[0] == task.load("cpu").sizes["N"]


def test_hash_is_stable_and_tracks_content(kernelbench_dir):
    a = load_suite(str(kernelbench_dir)).get("L1_1")
    b = load_suite(str(kernelbench_dir)).get("L1_1")
    c = load_suite(str(kernelbench_dir)).get("L1_2")
    assert a.hash == b.hash != c.hash
    assert len(a.hash) == 16


def test_kernelbench_directory(kernelbench_dir):
    suite = load_suite(str(kernelbench_dir))
    assert [t.id for t in suite.tasks] == ["L1_1", "L1_2", "L2_7"]
    assert suite.get("Relu_scale").id == "L1_1"
    assert suite.get("L2_7").name == "Linear_tanh"
    assert {t.split for t in suite.tasks} <= {"train", "heldout"}
    assert all(t.split == default_split(t.id) for t in suite.tasks)


def test_kernelbench_directory_split_file(kernelbench_dir):
    (kernelbench_dir / "suite.toml").write_text('heldout = ["L1_2"]\n')
    suite = load_suite(str(kernelbench_dir))
    assert [t.split for t in suite.tasks] == ["train", "heldout", "train"]


def test_cudal1_file_loads_tasks_without_running_candidates(cudal1_file):
    suite = load_suite(str(cudal1_file))
    assert [t.id for t in suite.tasks] == ["L1_1", "L1_2", "L2_7"]
    assert suite.tasks[0].origin.endswith("release.jsonl:1")
    solutions = read_cudal1_solutions(cudal1_file)
    assert solutions["L1_2"] is None and solutions["L2_7"] is None
    assert "class ModelNew" in solutions["L1_1"]
    assert not (cudal1_file.parent / "candidate_ran").exists()


def test_same_problem_same_id_and_split_across_formats(kernelbench_dir, cudal1_file):
    kb = {t.id: t.split for t in load_suite(str(kernelbench_dir)).tasks}
    cl = {t.id: t.split for t in load_suite(str(cudal1_file)).tasks}
    assert kb == cl


@pytest.mark.skipif(not CUDAL1_RELEASE.exists(), reason="CUDA-L1 release not present")
def test_real_cudal1_release_all_250_tasks():
    suite = load_suite(str(CUDAL1_RELEASE))
    assert len(suite.tasks) == 250
    assert {t.level for t in suite.tasks} == {1, 2, 3}
    assert 40 <= len(suite.split("heldout")) <= 85
    solutions = read_cudal1_solutions(CUDAL1_RELEASE)
    assert len(solutions) == 250
    assert sum(v is not None for v in solutions.values()) > 200


def _write(tmp_path: Path, text: str, name: str = "1_Bad.py") -> Path:
    folder = tmp_path / "level1"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("def broken(:\n", "line 1: syntax error"),
        (
            "import torch\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n",
            "missing Model",
        ),
        (RELU_TASK + "\nraise RuntimeError('boom')\n", "raises while loading: RuntimeError: boom"),
        (
            RELU_TASK.replace("class Model(nn.Module)", "class Model"),
            "derived from torch.nn.Module",
        ),
        (RELU_TASK + "\nCPU_SIZES = {'nope': 3}\n", "CPU_SIZES names 'nope'"),
    ],
)
def test_bad_task_files_name_file_and_problem(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(TaskError) as info:
        load_suite(str(tmp_path))
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_bad_jsonl_line_reports_line_number(tmp_path):
    path = tmp_path / "r.jsonl"
    good = json.dumps({"level_id": 1, "task_id": 1, "ref_code": RELU_TASK})
    path.write_text(good + "\n\n{not json\n")
    with pytest.raises(Cudal1Error, match=r"r.jsonl:3: not valid JSON"):
        load_suite(str(path))
    path.write_text(json.dumps({"level_id": 1, "ref_code": RELU_TASK}) + "\n")
    with pytest.raises(Cudal1Error, match=r"r.jsonl:1: needs integer `level_id` and `task_id`"):
        load_suite(str(path))


def test_missing_suite_and_unknown_task(kernelbench_dir):
    with pytest.raises(Cudal1Error, match="does not exist"):
        load_suite("/no/such/dir")
    with pytest.raises(Cudal1Error, match=r"no task 'L9_9'.*L1_1"):
        load_suite(str(kernelbench_dir)).get("L9_9")


def test_single_task_file(tmp_path):
    path = _write(tmp_path, RELU_TASK, "5_Relu.py")
    task = load_task_file(path)
    assert (task.id, task.level, task.name) == ("L1_5", 1, "Relu")
    tm = task.load()
    model = tm.make_model(0)
    (x,) = tm.make_inputs(0)
    assert torch.allclose(model(x), torch.relu(x) * 2 + 0.5)
