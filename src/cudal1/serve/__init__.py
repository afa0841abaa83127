"""The reward as a service: the evaluator behind an authenticated HTTP API (`app.py`), with an
OpenEnv environment (`env.py`) and TRL's `rollout_func` over it (`rollout.py`).

The service box sits above `train` (it serves train's reward and prompts); only `cli` imports
it. Its client, `cudal1.client`, sits beside `evaluate`, so trainers can use it.
"""
