"""The evaluation service on loopback: a real `cudal1 serve --http` process (uvicorn, FastAPI,
the CPU evaluator, bundled tasks) and real clients. Auth, limits and malformed input; sixteen
concurrent requests, hacks and honest ones, crash and hang included, each with its verdict; a
client that hangs up; the OpenEnv environment and TRL's rollout_func over it; the training
reward from the service; a full queue, retries, and SIGTERM with requests in flight."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cudal1.client import ServiceClient, ServiceError
from cudal1.errors import Cudal1Error
from cudal1.exemplars import ExemplarDB
from cudal1.serve.admission import Admission

from .conftest import RELU_TASK
from .corpus import load_cases

pytestmark = pytest.mark.xdist_group("serve")  # one worker runs them all, on one shared server

EVAL_SETS = [
    "eval.trials=2",
    "eval.timing_budget_s=0.1",
    "eval.min_pairs=7",
    "eval.max_pairs=14",
    "eval.timed_samples_checked=2",
    "eval.run_timeout_s=30",  # a hang costs this; worker start-up under load counts too
]
HEAD = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
HONEST = HEAD + "    def forward(self, x):\n        return torch.nn.functional.gelu(x)\n"
CRASH = HONEST.replace(
    "return torch", "import faulthandler\n        faulthandler._sigsegv()\n        return torch"
)
# a hang that sleeps: these tests are about the service answering every request; a hang
# that spins would hold one of CI's two cores until its timeout (test_evaluator's does)
HANG = HONEST.replace("return torch", "import time\n        time.sleep(3600)\n        return torch")
SLOW = (  # slow to build (1 s in the constructor), then honest
    "import time\n\n" + HEAD + "    def __init__(self):\n        super().__init__()\n"
    "        time.sleep(1)\n\n" + HONEST.removeprefix(HEAD)
)


def answer(code: str) -> str:
    return f"## Performance analysis\nfused\n\n## Code\n```python\n{code}```\n"


@dataclass
class Server:
    url: str
    token: str
    proc: subprocess.Popen
    log: Path
    db: Path

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}

    def log_tail(self) -> str:
        return self.log.read_text()[-3000:]


def start_server(tmp: Path, *extra: str) -> Server:
    tmp.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "t0ken-" + os.urandom(12).hex()
    (tmp / "token").write_text(token + "\n")
    log = tmp / "server.log"
    args = ["--http", f"127.0.0.1:{port}", "--token-file", str(tmp / "token"), "--device", "cpu"]
    args += [x for s in [*EVAL_SETS, f"serve.db={tmp / 'exemplars.db'}"] for x in ("--set", s)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cudal1", "serve", *args, *extra],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    server = Server(f"http://127.0.0.1:{port}", token, proc, log, tmp / "exemplars.db")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert proc.poll() is None, server.log_tail()
        try:
            if httpx.get(server.url + "/v1/health", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise AssertionError("the server did not come up:\n" + server.log_tail())


def stop(server: Server) -> int:
    server.proc.send_signal(signal.SIGTERM)
    try:
        return server.proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        raise


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = start_server(tmp_path_factory.mktemp("serve"), "--jobs", "2", "--max-queue", "32")
    yield s
    assert stop(s) == 0, s.log_tail()
    log = s.log.read_text()
    assert "Exception in ASGI application" not in log and '" 500' not in log, s.log_tail()


def wait_idle(server: Server) -> dict:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        health = httpx.get(server.url + "/v1/health").json()
        if health["running"] == 0 and health["queue_length"] == 0:
            return health
        time.sleep(0.2)
    raise AssertionError("evaluations did not finish")


def test_serve_command_refuses_bad_arguments_in_one_line(cli, tmp_path):
    short = tmp_path / "short"
    short.write_text("abc\n")
    bad = {
        ("--http", "127.0.0.1:8000"): "needs --token-file",
        ("--http", "127.0.0.1:8000", "--token-file", str(short)): "holds 3 characters",
        ("--http", "127.0.0.1:8000", "--token-file", str(tmp_path / "none")): "token file",
        ("--http", "localhost:http", "--token-file", str(short)): "give HOST:PORT",
        ("--http", "8000", "--token-file", str(short), "--set", "x.y=1"): "serve or eval",
        (
            "--max-queue",
            "3",
        ): "belong to --http",
    }
    for args, expected in bad.items():
        code, _, err = cli("serve", *args)
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, (args, err)


def test_turned_away_requests_keep_their_place_in_line():
    now = [0.0]
    line = Admission(jobs=1, max_queue=1, grace_s=30, clock=lambda: now[0])
    assert line.admit() is None  # runs
    line.running = 1
    assert line.admit() is None  # waits
    line.waiting = 1
    first, wait = line.admit()  # full: a ticket
    second, later = line.admit()
    assert (first, second) == (0, 1) and 1 <= wait < later
    assert line.admit(first) is not None  # still full: the same place kept
    assert list(line.tickets) == [first, second]
    line.waiting = 0  # a seat frees: it is the oldest ticket's
    assert line.admit()[0] == 2  # a newcomer does not take it
    assert line.admit(second) is not None  # nor does a younger ticket
    assert line.admit(first) is None
    now[0] += 600 + 31  # the others never came back: their tickets lapse
    assert line.admit() is None and not line.tickets


def test_client_retries_an_unreachable_server_then_says_so():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there

    async def attempt():
        async with ServiceClient(f"http://127.0.0.1:{port}", "x" * 16, retry_for_s=1.5) as c:
            try:
                await c.evaluate("L1_20", HONEST)
            finally:
                assert c.retried >= 1

    with pytest.raises(ServiceError, match=r"ConnectError.*still after"):
        asyncio.run(attempt())


def test_health_needs_no_token_and_everything_else_does(server):
    health = httpx.get(server.url + "/v1/health").json()
    assert health["device"] == "cpu" and health["pool_size"] == 2
    assert health["queue_length"] == 0 and health["version"]
    body = {"task": "L1_20", "source": HONEST}
    for headers in ({}, server.headers("wrong-token-0123456789"), {"Authorization": "Basic eA=="}):
        r = httpx.post(server.url + "/v1/evaluate", json=body, headers=headers)
        assert r.status_code == 401 and "token" in r.json()["detail"]
        assert r.headers["WWW-Authenticate"] == "Bearer"
    r = httpx.post(server.url + "/openenv/reset", json={})
    assert r.status_code == 401
    from cudal1.serve.rollout import KernelEnvClient

    async def handshake() -> None:
        async with KernelEnvClient(server.url + "/openenv", "wrong-token-0123456789") as env:
            await env.reset()

    with pytest.raises(ConnectionError, match="403"):
        asyncio.run(handshake())


def test_limits_and_malformed_requests_get_one_clear_line(server):
    def post(**kw):  # the broken task is refused only after the judge ran it: give it time
        return httpx.post(server.url + "/v1/evaluate", headers=server.headers(), timeout=120, **kw)

    big = json.dumps({"task": "L1_20", "source": "#" * (1 << 20)})
    assert post(content=big).status_code == 413

    def chunks():  # no Content-Length: the limit must hold on the streamed body too
        for _ in range(40):
            yield b"x" * 65536

    assert post(content=chunks()).status_code == 413
    cases = {
        b"{not json": "not valid JSON",
        b"[1, 2]": "JSON object",
        b'{"task": "L1_20"}': "field 'source'",
        b'{"task": "L1_20", "source": "x", "sorce": 1}': "unknown field(s) 'sorce'",
        b'{"task": "L1_20", "source": "x", "policy": "fast"}': "field 'policy'",
        b'{"task": "L1_20", "source": "x", "tolerance": 1}': "field 'tolerance'",
        b'{"task": "L1_20", "source": "x", "fresh": "yes"}': "field 'fresh'",
        b'{"task": "L9_99", "source": "x"}': "field 'task': no task 'L9_99'",
        b'{"task": "L1_20", "source": ["x"]}': "field 'source'",
        json.dumps({"task": "import torch\nx = 1\n", "source": "x"}).encode(): "field 'task'",
    }
    for body, expected in cases.items():
        r = post(content=body)
        assert r.status_code == 400, (body, r.text)
        assert expected in r.json()["detail"], (body, r.text)
    broken = RELU_TASK.replace("batch_size = 64", "batch_size = 64 // 0")  # fails in the judge
    r = post(json={"task": broken, "source": HONEST, "task_id": "relu_broken"})
    assert r.status_code == 400 and "field 'task'" in r.json()["detail"], r.text


@pytest.mark.slow
def test_sixteen_concurrent_requests_each_get_their_verdict(server):
    honest = {c.file: c for c in load_cases("honest", "cpu")}
    redteam = {c.file: c for c in load_cases("redteam", "cpu")}
    cases = [
        honest[f]
        for f in (
            "softmax_via_logsumexp.py",
            "log_softmax_via_logsumexp.py",
            "cross_entropy_lse_gather.py",
            "layernorm_var_mean_addcmul.py",
            "gemm_bias_relu_addmm.py",
            "gemm_residual_addmm.py",
        )
    ] + [
        redteam[f]
        for f in (
            "patch_perf_counter.py",
            "patch_allclose.py",
            "steal_expected_gc.py",
            "lazy_tensor_subclass.py",
            "inplace_returns_input.py",
            "mutate_input_zero.py",
            "zeros_softmax.py",  # tolerance kernelbench
            "try_fallback_kernel_policy.py",  # policy kernel
        )
    ]
    assert all(c.static for c in cases)

    async def run_all():
        async with ServiceClient(server.url, server.token) as client:
            jobs = [
                client.evaluate(c.task, c.source, policy=c.policy, tolerance=c.tolerance)
                for c in cases
            ]
            jobs += [client.evaluate("L1_20", CRASH), client.evaluate("L1_20", HANG)]
            return await asyncio.gather(*jobs)

    *results, crashed, hung = asyncio.run(run_all())
    for case, result in zip(cases, results, strict=True):
        assert result.status in case.status, (case.file, result.status, result.reasons)
        assert case.flag_found(result.flags), (case.file, result.flags)
        assert (result.policy, result.tolerance_mode) == (case.policy, case.tolerance)
    assert crashed.status == "runtime_error" and hung.status == "timeout"
    assert wait_idle(server)["running"] == 0


@pytest.mark.slow
def test_a_client_that_hangs_up_costs_nothing_but_its_answer(server):
    source = SLOW + "# hung up on\n"
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            server.url + "/v1/evaluate",
            json={"task": "L1_20", "source": source},
            headers=server.headers(),
            timeout=httpx.Timeout(10, read=1.0),
        )
    assert httpx.get(server.url + "/v1/health").status_code == 200
    wait_idle(server)  # the evaluation ran to its end and gave its slot back

    async def again():
        async with ServiceClient(server.url, server.token) as client:
            return await client.evaluate("L1_20", source)

    result = asyncio.run(again())
    assert result.status == "ok" and result.cached  # the abandoned evaluation's work was kept


@pytest.mark.slow
def test_openenv_episode_rewards_the_honest_answer_only(server):
    from cudal1.serve.env import KernelAction
    from cudal1.serve.rollout import KernelEnvClient

    hack = (Path(__file__).parent / "redteam" / "candidates" / "patch_allclose.py").read_text()

    async def episode():
        async with KernelEnvClient(server.url + "/openenv", server.token) as env:
            first = (await env.reset(task_id="L1_20", attempts=3)).observation
            steps = [
                await env.step(KernelAction(answer=a))
                for a in (answer(HONEST + "# env\n"), answer(hack), "no code at all")
            ]
            with pytest.raises(RuntimeError, match="episode is done"):
                await env.step(KernelAction(answer="again"))
            later = (await env.reset(task_id="L1_20")).observation
            return first, steps, later

    first, (honest, hacked, unparsed), later = asyncio.run(episode())
    assert first.task_id == "L1_20" and "class Model" in first.prompt[-1]["content"]
    assert len(first.exemplar_ids) == 1  # only the reference is known yet
    measured = honest.observation.speedup is not None
    if measured:
        assert honest.observation.status == "ok" and honest.reward == honest.observation.speedup > 0
    else:  # a busy host disturbed every timing: correct, no speedup, no reward either way
        assert honest.observation.status == "ok" and honest.reward is None
        assert {f.split(":")[0] for f in honest.observation.flags} & {"host_shared", "gpu_shared"}
    assert honest.observation.result["task_id"] == "L1_20" and not honest.done
    assert hacked.observation.status == "rejected" and hacked.reward == 0.0
    assert any(f.startswith("patching") for f in hacked.observation.flags)
    assert unparsed.observation.status == "unparsed" and unparsed.reward == 0.0 and unparsed.done
    assert "no code block" in unparsed.observation.feedback
    assert len(later.exemplar_ids) == (2 if measured else 1)  # the honest answer, if measured
    assert len(ExemplarDB(server.db).exemplars("L1_20")) >= 4
    r = httpx.post(
        server.url + "/openenv/step",
        json={"action": {"answer": "x"}},
        headers=server.headers(),
    )
    assert r.status_code == 400 and "step before reset" in r.json()["detail"]


def test_rollout_reward_gives_unmeasured_answers_their_groups_mean():
    """A correct answer whose timing was disturbed teaches nothing: it takes its group's mean
    reward (advantage about zero), where a failure takes the lowest."""
    from cudal1.serve.rollout import EnvRollouts

    rollouts = EnvRollouts("http://127.0.0.1:1/openenv", "t")
    rewards = rollouts.reward(
        prompts=["a", "a", "b", "b"],
        completions=["", "", "", ""],
        env_speedup=[2.0, None, None, 1.5],
        env_status=["ok", "ok", "rejected", "ok"],
    )
    assert rewards[1] == rewards[0]
    assert rewards[2] < min(rewards[0], rewards[3])


@pytest.mark.slow
def test_trl_grpo_takes_rollouts_and_rewards_from_the_environment(server, tmp_path):
    pytest.importorskip("trl")
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from cudal1.serve.rollout import EnvRollouts, task_dataset
    from cudal1.train.tiny import TINY, resolve_model

    before = len(ExemplarDB(server.db).exemplars("L1_11"))
    model = resolve_model(TINY, tmp_path / "models")
    rollouts = EnvRollouts(server.url + "/openenv", server.token)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[rollouts.reward],
        args=GRPOConfig(
            output_dir=str(tmp_path / "out"),
            max_steps=2,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=16,
            use_cpu=True,
            report_to=[],
            logging_steps=1,
            save_strategy="no",
        ),
        train_dataset=task_dataset(["L1_11"]),
        processing_class=AutoTokenizer.from_pretrained(model),
        rollout_func=rollouts,
    )
    trainer.train()
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "rewards/reward/mean" in h]
    assert len(logged) == 2 and all(-1.5 <= h["rewards/reward/mean"] <= 1.5 for h in logged)
    rows = ExemplarDB(server.db).exemplars("L1_11")
    assert len(rows) > before and rows[-1].source == "openenv"  # every rollout was stepped


@pytest.mark.slow
def test_training_reward_comes_from_the_service(server, tmp_path, cli, monkeypatch):
    from cudal1.evaluate import EvalConfig
    from cudal1.tasks import load_suite
    from cudal1.train.common import evaluator_for
    from cudal1.train.config import RunConfig
    from cudal1.train.reward import CudaL1Reward

    token_file = tmp_path / "token"
    token_file.write_text(server.token)
    run = RunConfig(
        out=tmp_path, eval_backend="http", eval_url=server.url, eval_token_file=token_file
    )
    evaluator = evaluator_for(run, EvalConfig(device="cpu"))
    task = load_suite("bundled", validate=False).get("L1_20")
    reward = CudaL1Reward({task.id: task}, ExemplarDB(tmp_path / "x.db"), evaluator)
    completions = [answer(HONEST + "# reward\n"), "no code"]
    shaped = asyncio.run(
        reward([[]] * 2, completions, task_id=[task.id] * 2, exemplar_ids=["[]"] * 2)
    )
    assert reward.history[0]["statuses"] == {"ok": 1, "unparsed": 1}
    if reward.history[0]["metrics"]["reward/unmeasured"]:
        # a busy host disturbed every timing: correct but unmeasured, the answer takes its
        # group's mean (here the failure's) and teaches nothing
        assert shaped == [-1.5, -1.5]
    else:
        assert shaped[1] == -1.5 < shaped[0]
    with pytest.raises(Cudal1Error, match="evaluates on 'cpu'"):
        evaluator_for(run, EvalConfig(device="cuda"))
    from cudal1.optimize import ReviewThresholds
    from cudal1.train import verl
    from cudal1.train.config import GRPOStageConfig
    from cudal1.train.reward import ShapingConfig

    run.tasks = ["L1_20"]
    files = verl.write_inputs(
        run, GRPOStageConfig(), EvalConfig(device="cpu"), ShapingConfig(), ReviewThresholds()
    )
    monkeypatch.setenv(verl.CONFIG_ENV, str(files["config"]))
    verl._Context._instance = None
    try:  # verl's compute_score, its evaluator the service
        assert verl.compute_score("cudal1", "no code", "L1_20") == -1.5
        assert -1.5 < verl.compute_score("cudal1", completions[0], "L1_20") <= 1.5
    finally:
        verl._Context._instance = None
    code, _, err = cli(
        *("train", "grpo", "--backend", "trl", "--model", "tiny-random", "--device", "cpu"),
        *("--steps", "1", "--out", str(tmp_path / "grpo")),
        *("--set", 'run.tasks=["L1_20"]', "--set", "grpo.num_generations=2"),
        *("--set", "grpo.max_completion_length=16", "--set", "run.eval_backend=http"),
        *("--set", f"run.eval_url={server.url}", "--set", f"run.eval_token_file={token_file}"),
    )
    assert code == 0, err
    assert json.loads((tmp_path / "grpo" / "grpo.json").read_text())["steps"] == 1


@pytest.mark.slow
@pytest.mark.xdist_group("serve_sigterm")  # its own server: may run beside the others
def test_full_queue_retries_and_sigterm_answer_every_request(tmp_path):
    # a ticket lapses 2 s after its Retry-After here (30 s by default)
    server = start_server(
        tmp_path, "--jobs", "1", "--max-queue", "1", "--set", "serve.ticket_grace_s=2"
    )
    try:
        queued = asyncio.run(_full_queue_then_retry(server))
        assert [r.status for r in queued] == ["ok", "ok", "ok"]
        # the ticket of the request that never came back holds a seat until it lapses
        asyncio.run(_until(server, tickets=0))
        in_flight = asyncio.run(_sigterm_with_requests_in_flight(server))
        assert [r.status_code for r in in_flight] == [200, 200]
        assert [r.json()["status"] for r in in_flight] == ["ok", "ok"]
        assert server.proc.returncode == 0, server.log_tail()
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.url + "/v1/health")
    finally:
        if server.proc.poll() is None:
            server.proc.kill()


async def _until(server: Server, **expected: int) -> None:
    """Poll /v1/health until its fields have the expected values."""
    async with httpx.AsyncClient() as http:
        for _ in range(3000):
            health = (await http.get(server.url + "/v1/health")).json()
            if all(health[k] == v for k, v in expected.items()):
                return
            await asyncio.sleep(0.1)
    raise AssertionError(f"health never showed {expected}")


async def _full_queue_then_retry(server: Server):
    async with ServiceClient(server.url, server.token, max_wait_s=1.0) as client:
        first = asyncio.create_task(client.evaluate("L1_20", SLOW + "# 1\n"))
        second = asyncio.create_task(client.evaluate("L1_20", SLOW + "# 2\n"))
        await _until(server, running=1, queue_length=1)
        async with httpx.AsyncClient() as http:
            r = await http.post(
                server.url + "/v1/evaluate",
                json={"task": "L1_20", "source": HONEST},
                headers=server.headers(),
            )
        assert r.status_code == 503 and "queue is full" in r.json()["detail"]
        assert int(r.headers["Retry-After"]) >= 1 and int(r.headers["Cudal1-Ticket"]) >= 0
        # 503s, retried until admitted
        third, timing = await client.evaluate_timed("L1_20", SLOW + "# 3\n")
        assert client.retried >= 1 and set(timing) == {"queue", "evaluate"}
        assert timing["evaluate"] >= third.phase_seconds["total"]
        return [await first, await second, third]


async def _sigterm_with_requests_in_flight(server: Server):
    async with httpx.AsyncClient(headers=server.headers(), timeout=300) as http:
        sent = [
            asyncio.create_task(
                http.post(
                    server.url + "/v1/evaluate", json={"task": "L1_20", "source": SLOW + f"# {i}\n"}
                )
            )
            for i in (4, 5)
        ]
        await _until(server, running=1, queue_length=1)
        server.proc.send_signal(signal.SIGTERM)
        answers = await asyncio.gather(*sent)
    await asyncio.to_thread(server.proc.wait, 120)
    return answers
