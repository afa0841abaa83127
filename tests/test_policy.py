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

from .conftest import result_for

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
            "```python\nimport torch\n```\n```python\nclass ModelNew:\n    def forward(self, x):\n        return x\n```",
            "class ModelNew",
            None,
        ),
        ("```python\nclass ModelNew(nn.Module):\n    pass\n```", None, "defines no forward"),
        ("```python\nclass ModelNew(Model):\n    pass\n```", "(Model)", None),  # inherits it
        (
            "Here you go:\n```python\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x",
            "return x",
            None,
        ),
        ("I cannot help with that.", None, "no code block"),
        ("```python\nprint('hi')\n```", None, "no code block defines class ModelNew"),
        ("```python\nclass ModelNew(:\n```", None, "does not parse"),
        (
            "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
            "class ModelNew",
            None,
        ),
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

    db = ExemplarDB(tmp_path / "x.db")
    ref = db.ensure_reference(TASK)
    r = result_for(TASK, 1.87)
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


# --- the compact prompt and its prefilled answers ------------------------------------------

PREFILL = contrastive_prompt(TASK, [], device="cpu", style="compact").prefill
BODY = """
    def __init__(self):
        super().__init__()
        self.act = nn.GELU()

    def forward(self, x):
        return F.gelu(x)
"""


@pytest.mark.parametrize(
    ("continuation", "code_has", "error"),
    [
        (BODY + "```\nThis is faster.", "F.gelu", None),  # the model closed the fence
        (BODY + "\n\nbatch_size = 8\n```", "batch_size = 8", None),  # module code after it
        (BODY + "\nThis version uses", "F.gelu", None),  # trailed into prose, fence open
        (BODY + "\n    def extra(self, y):\n        return y +", "F.gelu", None),  # cut off
        (BODY.replace("return F.gelu(x)", "return F.gelu(x"), None, "does not parse"),
        ("\n    def __init__(self):\n        super().__init__(", None, "does not parse"),
        ("\n    pass\n```", None, "defines no forward"),
        ("\n    def forward(self, x):\n        return x\n```", "return x", None),
    ],
)
def test_parser_on_prefilled_answers(continuation, code_has, error):
    parsed = parse_answer(PREFILL + continuation)
    if error is None:
        assert parsed.ok and code_has in parsed.code, parsed.error
        assert parsed.code.startswith("import torch") and "```" not in parsed.code
        assert "This" not in parsed.code  # prose after the code never enters it
    else:
        assert not parsed.ok and error in parsed.error


def test_a_cut_off_answer_is_shortened_never_extended():
    cut = PREFILL + BODY + "\n    def extra(self, y):\n        return y +"
    parsed = parse_answer(cut)
    assert parsed.ok
    assert cut.startswith("```python\n" + parsed.code.rstrip())  # a start of the model's text
    closed = PREFILL + BODY.replace("return F.gelu(x)", "return F.gelu(x") + "```\n"
    assert not parse_answer(closed).ok  # a closed fence was not cut off: no shortening


def test_compact_prompt_shows_the_class_and_correct_exemplars(tmp_path):

    db = ExemplarDB(tmp_path / "x.db")
    ref = db.ensure_reference(TASK)
    r = result_for(TASK, 1.25)
    fast = db.add(TASK, "class ModelNew(nn.Module):\n    fast = True\n", r)
    prompt = contrastive_prompt(TASK, [ref, fast], device="cpu", style="compact")
    user = prompt.messages[-1]["content"]
    assert "class Model(nn.Module):" in user and "return self.act(x)" in user
    assert "CPU_SIZES" not in user and "get_inputs" not in user and "Memory-bound" not in user
    assert "1.25x as fast" in user and "fast = True" in user
    assert user.count("class Model(") == 1  # the reference exemplar is not shown twice
    assert prompt.exemplar_ids == [ref.id, fast.id]
    assert prompt.prefill.startswith("```python\nimport torch\nimport torch.nn as nn\n")
    assert prompt.prefill.endswith("\n\n\nclass ModelNew(nn.Module):")
    with pytest.raises(Cudal1Error, match="unknown prompt style 'short'"):
        contrastive_prompt(TASK, [], style="short")


def test_replay_continues_a_prefill_and_openai_refuses_one(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"response": BODY + "```"}) + "\n")
    prompt = contrastive_prompt(TASK, [], device="cpu", style="compact")
    (c,) = asyncio.run(ReplayPolicy(path).complete(prompt, 1))
    assert c.text == prompt.prefill + BODY + "```" and c.prefilled == len(prompt.prefill)
    assert parse_answer(c.text).ok
    policy = OpenAIPolicy("http://127.0.0.1:9/v1", "m", max_retries=0)
    with pytest.raises(Cudal1Error, match="--prompt paper"):
        asyncio.run(policy.complete(prompt, 1))


@pytest.mark.slow
def test_local_policy_continues_the_prefill_with_seeded_samples(tmp_path):
    """A tiny random model (built offline) through LocalPolicy: the answer starts with the
    prefill, the same seed and prompt give the same answer, asking again gives a new one, and
    before a forward is written the code can neither be closed nor end."""
    from cudal1.policy import LocalPolicy
    from cudal1.train.tiny import build_tiny

    path = str(build_tiny(tmp_path / "tiny"))
    prompt = contrastive_prompt(TASK, [], device="cpu", style="compact")

    def policy():
        return LocalPolicy(path, max_new_tokens=12, temperature=1.0)

    first = policy()
    a = asyncio.run(first.complete(prompt, 2))
    again = asyncio.run(first.complete(prompt, 2))
    fresh = asyncio.run(policy().complete(prompt, 2))
    assert all(c.text.startswith(prompt.prefill) and c.prefilled == len(prompt.prefill) for c in a)
    assert all(c.completion_tokens == 12 for c in a)  # no end of text before forward
    assert all("`" not in c.text[c.prefilled :] for c in a + again + fresh)  # nor a fence
    assert [c.text for c in fresh] == [c.text for c in a]  # deterministic per prompt and call
    assert [c.text for c in again] != [c.text for c in a]  # a retry draws new samples
    assert first.usage.requests == 4


class _Vocab:
    """A handful of tokens as a tokenizer would decode them (newlines joined to indents, as
    SmolLM2's are)."""

    tokens = ("```", "\n", "\n   ", " def", "def", "\ndef", "    ", "x", " return", "<end>")
    eos_token_id = pad_token_id = tokens.index("<end>")

    def __len__(self):
        return len(self.tokens)

    def decode(self, ids):
        return "".join("" if i == self.eos_token_id else self.tokens[i] for i in ids)


def test_class_grammar_keeps_the_shape_of_the_class():
    from cudal1.policy.guided import ClassGrammar, TokenShapes, looping

    tok = _Vocab()
    grammar = ClassGrammar(tok, 0, PREFILL, TokenShapes.of(tok))

    def banned(after, free=False):
        mask = grammar.banned(PREFILL + after, free)
        return {t for t, b in zip(tok.tokens, mask.tolist(), strict=True) if b}

    # right after `class ModelNew(nn.Module):` nothing may end the code or leave the class
    assert banned("") == {"```", "<end>", "\ndef"}
    # after `def __init__(self):` the body must be deeper than 4 spaces
    init = "\n    def __init__(self):\n"
    assert banned(init) >= {"x", "def", "```"} and "    " not in banned(init)
    assert "x" in banned(init + "    ") and " return" not in banned(init + "    ")
    # no deeper than the line before without a colon, unless inside open brackets
    body = init + "        x = 1\n        "
    assert " return" in banned(body) and "x" not in banned(body)
    assert " return" not in banned(init + "        x = f(1,\n        ")
    # once forward has returned, the model may close the code or write at column 0
    done = init + "        pass\n\n    def forward(self, x):\n        return x\n"
    assert banned(done, free=True) == set()
    assert looping(["a", "b"] * 3) and looping(["x"] + ["y"] * 3) and not looping(["a", "b"] * 2)
