import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from cudal1.errors import Cudal1Error
from cudal1.exemplars import ExemplarDB
from cudal1.policy import (
    OpenAIPolicy,
    PolicyExhausted,
    ReplayPolicy,
    contrastive_prompt,
    make_policy,
    parse_answer,
)
from cudal1.tasks import load_suite

TASK = load_suite("bundled", validate=False).get("L1_20")

GOOD = """## Performance analysis
Implementation 2 fuses the two passes, so it reads x once.

### Algorithm design
A single elementwise kernel.

## Code
```python
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)
```
That should be faster.
"""


@pytest.mark.parametrize(
    ("text", "code_has", "error"),
    [
        (GOOD, "functional.gelu", None),
        (GOOD.replace("```python", "```"), "functional.gelu", None),
        (GOOD.replace("```python", "~~~py").replace("```", "~~~"), "functional.gelu", None),
        (
            "```python\nimport torch\n```\n```python\nclass ModelNew:\n    pass\n```",
            "class ModelNew",
            None,
        ),
        (
            "Here you go:\n```python\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x",
            "return x",
            None,
        ),
        ("I cannot help with that.", None, "no code block"),
        ("```python\nprint('hi')\n```", None, "no code block defines class ModelNew"),
        ("```python\nclass ModelNew(:\n```", None, "does not parse"),
        ("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n", "class ModelNew", None),
    ],
)
def test_parser(text, code_has, error):
    parsed = parse_answer(text)
    if error is None:
        assert parsed.ok and code_has in parsed.code, parsed.error
    else:
        assert not parsed.ok and error in parsed.error


def test_parser_sections():
    parsed = parse_answer(GOOD)
    assert parsed.analysis.startswith("Implementation 2 fuses")
    assert parsed.design == "A single elementwise kernel."


def test_prompt_shows_exemplars_with_scores(tmp_path):
    from cudal1.evaluate.result import EvalResult

    db = ExemplarDB(tmp_path / "x.db")
    ref = db.ensure_reference(TASK)
    r = EvalResult(
        status="ok",
        task_id=TASK.id,
        task_hash=TASK.hash,
        candidate_hash="h",
        device="cpu",
        policy="any",
        tolerance_mode="calibrated",
        speedup=1.87,
    )
    fast = db.add(TASK, "class ModelNew:\n    fast = True\n", r)
    prompt = contrastive_prompt(TASK, [ref, fast], device="cpu")
    user = prompt.messages[-1]["content"]
    assert "speedup 1.87" in user and "fast = True" in user and "speedup 1.00" in user
    assert TASK.source.strip()[:40] in user
    assert "## Performance analysis" in user and "## Algorithm design" in user
    assert prompt.exemplar_ids == [ref.id, fast.id]
    assert "None yet" in contrastive_prompt(TASK, [], device="cpu").messages[-1]["content"]


def test_replay_policy_orders_per_task(tmp_path):
    path = tmp_path / "r.jsonl"
    rows = [
        {"response": "a1", "task": "L1_20"},
        {"response": "b1", "task": "L2_1"},
        {"response": "a2", "task": "L1_20"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    policy = ReplayPolicy(path)
    prompt = contrastive_prompt(TASK, [], device="cpu")
    assert [c.text for c in asyncio.run(policy.complete(prompt, 5))] == ["a1", "a2"]
    with pytest.raises(PolicyExhausted):
        asyncio.run(policy.complete(prompt, 1))
    path.write_text('{"response": "x"}\nnot json\n')
    with pytest.raises(Cudal1Error, match=r"r.jsonl:2"):
        ReplayPolicy(path)


class _FakeOpenAI(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible chat endpoint (the one stand-in the standards allow)."""

    calls = 0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls += 1
        if type(self).calls == 1:  # first request fails: the client must retry
            self.send_response(503)
            self.end_headers()
            return
        answer = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": GOOD},
                }
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_openai_policy_against_local_server():
    server = HTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        policy = make_policy(url, "tiny")
        assert isinstance(policy, OpenAIPolicy)
        policy.client = policy.client.with_options(max_retries=2)
        out = asyncio.run(policy.complete(contrastive_prompt(TASK, [], device="cpu"), 2))
        assert [parse_answer(c.text).ok for c in out] == [True, True]
        assert policy.usage.requests == 2 and policy.usage.completion_tokens == 14
    finally:
        server.shutdown()


def test_unreachable_endpoint_is_a_clear_error():
    policy = make_policy("http://127.0.0.1:9/v1", "m")
    policy.client = policy.client.with_options(max_retries=0, timeout=2)
    with pytest.raises(Cudal1Error, match="unreachable"):
        asyncio.run(policy.complete(contrastive_prompt(TASK, [], device="cpu"), 1))


def test_make_policy_errors():
    with pytest.raises(Cudal1Error, match="needs --model"):
        make_policy("http://x/v1")
    with pytest.raises(Cudal1Error, match="unknown --llm"):
        make_policy("gpt")
