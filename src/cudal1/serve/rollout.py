"""Training against the environment from another machine: an OpenEnv client that carries the
token, and TRL's `rollout_func` with its reward.

The dataset names tasks (`task_dataset`: the prompt column holds task ids); the environment
writes the prompts. For each GRPO group TRL hands `rollout_func` the same task id G times;
`EnvRollouts` then

1. resets one episode for the group, which draws the exemplars and returns the prompt and their
   ids;
2. generates G completions of that prompt with the trainer's own generation path (transformers,
   or vLLM when the trainer uses it);
3. runs one episode per completion, reset with the group's exemplar ids (so each sees the exact
   prompt that was answered, however the database grew meanwhile) and stepped with the
   completion, all at once: the server's queue spreads them over its evaluators;
4. returns token ids for TRL's loss, and per completion the environment's speedup and verdict,
   which TRL passes to the reward function as extra columns.

`EnvRollouts.reward` shapes those speedups exactly as the in-process reward does
(`train.reward.RewardShaper`: running normalisation, failures -k, clip to +-k).

TRL 1.16 gives `rollout_func` no public way to generate with the trainer's model, so step 2
calls the two private methods its own default rollout calls (`_tokenize_prompts`,
`_generate_single_turn`); they are the seam to check when upgrading TRL.
"""

from __future__ import annotations

import asyncio
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from websockets.asyncio.client import connect as ws_connect

from cudal1.errors import Cudal1Error
from cudal1.serve.env import KernelAction, KernelObservation, KernelState
from cudal1.train.reward import RewardShaper, ShapingConfig, fill_unmeasured


class KernelEnvClient(EnvClient[KernelAction, KernelObservation, KernelState]):
    """OpenEnv's WebSocket client for the environment at `URL/openenv`, sending the server's
    token with the handshake (OpenEnv's own `connect` sends no headers)."""

    def __init__(self, base_url: str, token: str, *, message_timeout_s: float = 3600.0) -> None:
        """`message_timeout_s`: longest wait for one answer; a step waits for an evaluation."""
        super().__init__(base_url, message_timeout_s=message_timeout_s)
        self.token = token

    async def connect(self) -> KernelEnvClient:
        if self._ws is None:
            try:
                self._ws = await ws_connect(
                    self._ws_url,
                    open_timeout=self._connect_timeout,
                    max_size=self._max_message_size,
                    additional_headers={"Authorization": f"Bearer {self.token}"},
                )
            except Exception as e:
                raise ConnectionError(f"cannot open {self._ws_url}: {e}") from e
        return self

    async def disconnect(self) -> None:
        """Ask the server to end the session and let it close the socket: OpenEnv's server
        closes after a close message, and logs a traceback when the client closed first."""
        if self._ws is not None:
            try:
                await self._send({"type": "close"})
                await asyncio.wait_for(self._ws.wait_closed(), self._connect_timeout)
            finally:
                await self._ws.close()
                self._ws = None

    def _step_payload(self, action: KernelAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[KernelObservation]:
        observation = KernelObservation(
            **payload.get("observation", {}),
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )
        return StepResult(observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> KernelState:
        return KernelState(**payload)


def task_dataset(task_ids: list[str]) -> Any:
    """The training dataset of an environment run: one row per task, the id as its prompt."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": list(task_ids)})


class EnvRollouts:
    """`GRPOTrainer(rollout_func=rollouts, reward_funcs=[rollouts.reward], ...)`."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        shaping: ShapingConfig | None = None,
        sessions: int = 32,
    ) -> None:
        """`url`: the environment, `http://HOST:PORT/openenv`. `sessions`: episodes open at
        once (the server caps them at its `env_sessions`)."""
        self.url, self.token, self.sessions = url, token, sessions
        self.shaper = RewardShaper(shaping or ShapingConfig())

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        g = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        groups = [prompts[i : i + g] for i in range(0, len(prompts), g)]
        if any(len(set(map(str, group))) != 1 or len(group) != g for group in groups):
            raise Cudal1Error(
                "rollout_func expects each task id G times in a row (TRL's GRPO sampler); "
                "build the dataset with task_dataset()"
            )
        firsts = asyncio.run(self._gather([self._episode(str(group[0])) for group in groups]))
        messages = [first.prompt for first in firsts for _ in range(g)]
        prompt_ids, _, _ = trainer._tokenize_prompts(messages)
        completion_ids, logprobs = trainer._generate_single_turn(prompt_ids, None, {}, g)
        texts = trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        steps = [
            self._episode(first.task_id, first, text)
            for first, chunk in zip(firsts, _chunks(texts, g), strict=True)
            for text in chunk
        ]
        observed = asyncio.run(self._gather(steps))
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": logprobs,
            "env_speedup": [o.speedup for o in observed],
            "env_status": [o.status for o in observed],
        }

    async def _gather(self, episodes: list[Any]) -> list[KernelObservation]:
        limit = asyncio.Semaphore(self.sessions)

        async def bounded(episode: Any) -> KernelObservation:
            async with limit:
                return await episode

        return list(await asyncio.gather(*(bounded(e) for e in episodes)))

    async def _episode(
        self, task_id: str, first: KernelObservation | None = None, answer: str | None = None
    ) -> KernelObservation:
        """A reset (with `first`'s exemplars when given), then one step when `answer` is."""
        async with KernelEnvClient(self.url, self.token) as env:
            pinned = {"exemplar_ids": first.exemplar_ids} if first else {}
            reset = (await env.reset(task_id=task_id, **pinned)).observation
            if first is not None and reset.prompt != first.prompt:
                raise Cudal1Error(f"{task_id}: the same exemplars gave a different prompt")
            if answer is None:
                return reset
            return (await env.step(KernelAction(answer=answer))).observation

    def reward(
        self,
        prompts: list[Any],
        completions: list[Any],
        env_speedup: list[float | None],
        env_status: list[str],
        **_: Any,
    ) -> list[float]:
        """The environment's speedups (None for a failure), shaped as the in-process reward; a
        correct answer left unmeasured (`ok`, no speedup) takes its group's mean, as there."""
        unmeasured = [
            st == "ok" and sp is None for sp, st in zip(env_speedup, env_status, strict=True)
        ]
        shaped = iter(
            self.shaper.shape([sp for sp, u in zip(env_speedup, unmeasured, strict=True) if not u])
        )
        rewards = [None if u else next(shaped) for u in unmeasured]
        return fill_unmeasured(rewards, [str(p) for p in prompts])


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
