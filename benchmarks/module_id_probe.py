"""Can two CUDA extensions that share nvcc's module id live in one process? (Needs a GPU.)

The host compile of a `.cu` could start from a precompiled prefix shared by every build with the
same include list (`benchmarks/results/2026-12-06-cpu/summary.md`: 7.1-7.5 s became 2.4-2.7 s),
but only if those builds share one module id: two lines of the prefix name a namespace after
it. nvcc draws the id anew for every build, and so does the evaluator's driver. This probe
builds extensions through the driver with one fixed id (a wrapper replaces the driver's random
choice), the hardest case first: two extensions whose kernels have the same name in an
anonymous namespace (so the same mangled symbol, host and device) but different bodies, each
loaded into the same process. Each must compute its own result, whichever was loaded first
and whichever ran last. A control pair built with the driver's own random ids runs the same
checks.

    PYTHONPATH=src:. python3 benchmarks/module_id_probe.py --out DIR

Writes DIR/module_id_probe.json; prints one line per check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch.utils.cpp_extension import load_inline

from cudal1.evaluate import nvcc_driver

FIXED_ID = "_0123abcd_7_cuda_cu_89abcdef"
"""A module id in the shape the driver gives a real unit (`_PATHHASH_N_NAME_HASH`)."""
KERNEL = r"""
namespace {
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = FACTOR * x[i];
}
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
WRAPPER = """
import runpy, sys
driver = runpy.run_path({driver!r}, run_name="module_id_probe")
def fixed(path):
    with open(path, "w") as f:
        f.write({fixed!r})
driver["main"].__globals__["_as_for_a_real_unit"] = fixed
sys.exit(driver["main"](sys.argv[1:]))
"""


def build(name: str, factor: float, nvcc: str, root: Path) -> tuple[Any, str | None]:
    """Extension `name` whose kernel multiplies by `factor`, built through `nvcc` (a command);
    the module id found in its `.cu` object."""
    os.environ["PYTORCH_NVCC"] = nvcc
    (root / name).mkdir()
    module = load_inline(
        name=name,
        cpp_sources="torch::Tensor run(torch::Tensor x);",
        cuda_sources=f"#define FACTOR {factor}f\n" + KERNEL,
        functions=["run"],
        build_directory=str(root / name),
        verbose=False,
    )
    objects = list((root / name).glob("*.cuda.o"))
    found = re.search(rb"_[0-9a-f]{8}_7_cuda_cu_[0-9a-f]{8}", objects[0].read_bytes())
    return module, found.group().decode() if found else None


def check(label: str, modules: dict[str, tuple[Any, float]]) -> list[dict[str, Any]]:
    """Each module's result against its factor, then again in the reverse order."""
    x = torch.randn(1 << 20, device="cuda")
    rows = []
    for order in (list(modules), list(reversed(modules))):
        for name in order:
            module, factor = modules[name]
            y = module.run(x)
            torch.cuda.synchronize()
            error = (y - factor * x).abs().max().item()
            rows.append({"pair": label, "module": name, "factor": factor, "max_error": error})
            print(f"{label:6s} {name:18s} x{factor}: max error {error:.3g}", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("module_id_probe: needs a CUDA device")
    from cudal1.evaluate.evaluator import real_nvcc

    real = real_nvcc()
    if real is None:
        raise SystemExit("module_id_probe: no CUDA toolkit found for torch")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wrapper = root / "fixed_id_driver.py"
        wrapper.write_text(WRAPPER.format(driver=nvcc_driver.__file__, fixed=FIXED_ID))
        drivers = {
            "fixed": shlex.join([sys.executable, "-I", "-S", str(wrapper), real]),
            "random": shlex.join([sys.executable, "-I", "-S", nvcc_driver.__file__, real]),
        }
        report: dict[str, Any] = {"fixed_id": FIXED_ID, "ids": {}, "rows": []}
        for label, command in drivers.items():
            modules = {}
            for name, factor in ((f"{label}_twice", 2.0), (f"{label}_thrice", 3.0)):
                module, found = build(name, factor, command, root)
                modules[name] = (module, factor)
                report["ids"][name] = found
            report["rows"] += check(label, modules)
    report["ids_shared"] = {
        label: len({i for n, i in report["ids"].items() if n.startswith(label)}) == 1
        for label in drivers
    }
    report["all_correct"] = all(r["max_error"] == 0.0 for r in report["rows"])
    (args.out / "module_id_probe.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"ids: {report['ids']}")
    print(f"one id per pair: {report['ids_shared']}; every result its own: {report['all_correct']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
