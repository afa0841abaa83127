"""`cudal1 optimize` on the H200 with the replay policy: a level-1 and a level-2 bundled task,
three rounds each, real CUDA and Triton candidates from the honest corpus as the replayed answers
(slow PyTorch first, then custom kernels), plus one broken answer per task.

    PYTHONPATH=src:. python3 benchmarks/optimize_h200.py --out $OUT [--tasks L1_20,L2_1]

Writes OUT/optimize-TASK/{report.md,summary.json,best.py} and prints the reports.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HONEST = Path(__file__).resolve().parents[1] / "tests" / "honest" / "candidates"

PLANS = {
    "L1_20": [
        ["honest_torch_gelu", "no code at all"],
        ["cuda_gelu_erff_vec4.py"],
        ["triton_gelu_erf.py"],
    ],
    "L2_1": [
        ["gemm_bias_relu_addmm.py", "no code at all"],
        ["cuda_gemm_bias_relu_epilogue.py"],
        ["triton_gemm_bias_relu_ieee.py"],
    ],
}
TORCH_GELU = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.nn.functional.gelu(x)\n"


def answer(item: str) -> str:
    if item == "no code at all":
        return "I would fuse everything into one kernel, but here is only the idea."
    code = TORCH_GELU if item == "honest_torch_gelu" else (HONEST / item).read_text()
    return (
        f"## Performance analysis\nReplayed answer: {item}.\n\n## Algorithm design\nSee the code.\n\n"
        f"## Code\n```python\n{code}\n```\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tasks", default=",".join(PLANS), help="comma-separated subset")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for task in args.tasks.split(","):
        rounds = PLANS[task]
        out = args.out / f"optimize-{task}"
        t0 = time.perf_counter()
        for r, answers in enumerate(rounds):  # one invocation per round: also exercises resume
            replay = args.out / f"replay-{task}-round{r}.jsonl"
            replay.write_text(
                "".join(json.dumps({"response": answer(a), "task": task}) + "\n" for a in answers)
            )
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "cudal1",
                    "optimize",
                    task,
                    "--llm",
                    f"replay:{replay}",
                    "--rounds",
                    str(r + 1),
                    "--samples",
                    str(len(answers)),
                    "--device",
                    "cuda",
                    "--out",
                    str(out),
                ],
                check=True,
            )
        summary = json.loads((out / "summary.json").read_text())
        print(f"== {task}: {time.perf_counter() - t0:.0f} s")
        print((out / "report.md").read_text())
        print(json.dumps(summary["rounds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
