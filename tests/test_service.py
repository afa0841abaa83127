"""Both evaluation backends pass the same tests: verdicts, faults that cost one candidate only,
no lost or duplicated results. Ray runs on a loopback cluster."""

import pytest

from cudal1.evaluate import EvalConfig
from cudal1.evaluate.service import make_evaluator
from cudal1.tasks import load_suite

GELU = load_suite("bundled", validate=False).get("L1_20")
CONFIG = EvalConfig(
    device="cpu", trials=2, timing_budget_s=0.1, min_pairs=7, max_pairs=14, run_timeout_s=20
)
HONEST = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.nn.functional.gelu(x)\n"
CRASH = HONEST.replace(
    "return torch", "import faulthandler\n        faulthandler._sigsegv()\n        return torch"
)
# a hang that sleeps: these tests are about the service answering every request; a hang
# that spins would hold one of CI's two cores until its timeout (test_evaluator's does)
HANG = HONEST.replace("return torch", "import time\n        time.sleep(3600)\n        return torch")
WRONG = HONEST.replace("gelu(x)", "gelu(x) + 1e-3")


@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace="cudal1")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module", params=["local", "ray"])
def evaluator(request):
    if request.param == "ray":
        request.getfixturevalue("ray_session")
    ev = make_evaluator(request.param, CONFIG, jobs=2)
    yield ev
    ev.close()


@pytest.mark.slow
def test_mixed_batch_every_result_once(evaluator):
    sources = {
        "honest": HONEST,
        "crash": CRASH,
        "hang": HANG,
        "wrong": WRONG,
        "honest2": HONEST + "\n# 2\n",
    }
    futures = {name: evaluator.submit(GELU, src) for name, src in sources.items()}
    results = {name: f.result(timeout=600) for name, f in futures.items()}
    expected = {
        "honest": "ok",
        "honest2": "ok",
        "crash": "runtime_error",
        "hang": "timeout",
        "wrong": "incorrect",
    }
    for name, status in expected.items():
        r = results[name]
        assert r.status == status, f"{name}: {r.status} {r.reasons}\n{r.log_tail}"
    assert len({r.candidate_hash for r in results.values()}) == len(sources)


@pytest.mark.slow
def test_cache_and_fresh(evaluator):
    twins = [evaluator.submit(GELU, HONEST + "\n# twins\n") for _ in range(2)]
    a, b = (f.result(timeout=600) for f in twins)  # submitted together, evaluated once
    assert sorted([a.cached, b.cached]) == [False, True] and a.phase_seconds == b.phase_seconds
    first = evaluator(GELU, HONEST + "\n# cache\n")
    again = evaluator(GELU, HONEST + "\n# cache\n")
    assert again.phase_seconds == first.phase_seconds  # served from the cache
    assert again.cached and not first.cached
    fresh = evaluator.submit(GELU, HONEST + "\n# cache\n", fresh=True).result()
    assert fresh.status == "ok" and fresh.phase_seconds != first.phase_seconds
    assert not fresh.cached


@pytest.mark.slow
def test_ray_actor_death_costs_one_candidate(ray_session):
    import time

    from cudal1.evaluate.ray_backend import RayEvaluator

    ev = RayEvaluator(CONFIG, actors=1, jobs=1, group="death")
    pending = ev.submit(GELU, HANG + "\n# killed\n")
    time.sleep(8)
    ray_session.kill(ev.actors[0], no_restart=False)
    lost = pending.result(timeout=120)
    # Exactly one verdict, never lost: the actor's process saw its candidate worker die
    # (runtime_error), Ray reported the actor's death (runtime_error), or the call was sent
    # again to the restarted actor, where this hanging candidate timed out.
    assert lost.status in ("runtime_error", "timeout"), lost.reasons
    deadline = time.monotonic() + 120
    while True:  # Ray restarts it; calls fail fast while it is restarting
        try:
            ray_session.get(ev.actors[0].ping.remote(), timeout=30)
            break
        except ray_session.exceptions.RayActorError:
            assert time.monotonic() < deadline, "the actor was not restarted"
            time.sleep(1)
    after = ev(GELU, HONEST + "\n# after restart\n")  # and it serves again
    assert after.status == "ok", after.reasons
    ev.close()


def test_gpus_are_named_as_cuda_visible_devices_names_them(monkeypatch):
    """A subset of a host's GPUs (as a scheduler hands them out): the pool's workers each see
    one of them, and the device lock is named after the physical GPU, so two runs on
    different subsets still take turns on a GPU they share."""
    from cudal1.errors import Cudal1Error
    from cudal1.evaluate.pool import LocalEvaluator, visible_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5,7")
    assert visible_gpus(2) == ["3", "5"] and visible_gpus() == ["3", "5", "7"]
    with pytest.raises(Cudal1Error, match="4 GPUs asked for and 3 visible"):
        visible_gpus(4)
    cuda = EvalConfig(device="cuda")
    assert cuda.lock_path("5").endswith("cuda5.lock") and cuda.lock_path().endswith("cuda3.lock")
    with pytest.raises(Cudal1Error, match="--gpus needs --device cuda"):
        LocalEvaluator(CONFIG, gpus=2)


def test_a_pool_bound_to_a_gpu_gives_its_workers_that_gpu_alone(tmp_path):
    """The evaluation records the GPU its pool was given, and the worker sees only that one."""
    from cudal1.evaluate.evaluator import evaluate
    from cudal1.evaluate.pool import WorkerPool

    probe = HONEST.replace(
        "class ModelNew",
        "import os\nassert os.environ['CUDA_VISIBLE_DEVICES'] == '1'\n\n\nclass ModelNew",
    )
    pool = WorkerPool("cpu", size=1, gpu="1")
    try:
        result = evaluate(GELU, probe, CONFIG, workers=pool)
    finally:
        pool.close()
    assert result.status == "ok", result.reasons
    assert result.env["visible_gpu"] == "1"
