"""Technique tags from a solution's source: what it does, for counting techniques against
speedup (the analysis CUDA-L1's paper did by hand). Static patterns, so tags are evidence of
what the code contains, not proof of what ran; the evaluator's provenance says what ran."""

from __future__ import annotations

import re

TECHNIQUES: dict[str, str] = {
    "custom CUDA kernel": r"__global__",
    "Triton kernel": r"@triton\.(jit|autotune)",
    "kernel fusion": r"(?i)\bfus(e|ed|ion|ing)\b|fused_\w+",
    "CUDA graphs": r"CUDAGraph|torch\.cuda\.graph\b|cudaGraph|cudaStreamBeginCapture|make_graphed_callables",
    "algebraic simplification": r"(?i)algebraic|simplif|\bfold(ed|ing)?\b|closed[- ]form|precomput",
    "shared-memory tiling": r"__shared__|extern\s+__shared__|tl\.dot",
    "vectorised access": r"\bfloat4\b|\bfloat2\b|\bint4\b|__half2|reinterpret_cast<\s*(const\s+)?float4|__ldg",
    "warp-level primitives": r"__shfl|__reduce_\w+_sync|cooperative_groups|warpReduce|__ballot_sync",
    "tensor cores": r"\bwmma::|mma\.sync|wgmma|tl\.dot",
    "library call": r"cublas|cudnn|at::(matmul|mm|bmm|conv|linear|addmm)|torch::(matmul|mm|bmm|conv)",
    "torch.compile inside": r"torch\.compile|torch\.jit\.(script|trace)",
    "streams": r"torch\.cuda\.Stream|cudaStreamCreate|getStreamFromPool",
}
_COMPILED = {name: re.compile(p) for name, p in TECHNIQUES.items()}


def tag_techniques(source: str, flags: list[str] | None = None) -> list[str]:
    tags = [name for name, pattern in _COMPILED.items() if pattern.search(source)]
    names = {f.split(":", 1)[0] for f in flags or []}
    if "precision" in names:
        tags.append("precision change")
    if not any(t in tags for t in ("custom CUDA kernel", "Triton kernel")):
        tags.append("PyTorch rewrite")
    return tags
