"""Static analysis of a candidate's source: flags recorded on every result.

Runs in the trusted parent on the candidate's text (never executing it). It reads code, never
prose: Python through its AST (comments are not in it; docstrings, other bare string
statements and code under `if __name__ == "__main__":`, which the harness never runs, are left
out); C++/CUDA sources (the strings that reach `load_inline` and friends, or that look like
C++) with their comments and string literals removed. Static checks are a cheap first layer
and never sufficient on their own: each hack class they flag is also caught, or made harmless,
by a dynamic check, the process structure or the OS sandbox.

A flag is `name` or `name:detail`, the detail naming what the code does and where. `REJECT_ANY`
lists what no honest candidate does; it rejects under every policy. The others are evidence
that policies, dynamic checks and reports use: global backend flags become measured
conditions, precision changes are judged by the tolerance, file writes fail by OS permission
outside the sandbox's writable directories, a tensor subclass returned as the output is refused
by the plain-type check, and ctypes (CUDA-L1's L2_57 reads a `__constant__` symbol's address
with it) can do nothing a compiled extension cannot: what it writes is judged like theirs.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

REJECT_ANY = frozenset(
    {
        "introspection",  # frames, gc, inspect, /proc paths: reading the caller's or harness's state
        "patching",  # assigning attributes of torch/time/triton/builtins/harness modules
        "l2_persistence",  # pinning data in L2 so the harness's flush misses it
        "exit_call",  # os._exit/sys.exit before checks
        "processes",  # fork/subprocess/system: work outside the measured process
        "harness_access",  # importing cudal1 (the evaluator) from the candidate
        "hooks",  # signal handlers, atexit, sys.settrace/setprofile
        "obfuscation",  # imports and attribute writes by computed names, eval/exec of strings
        "thread_count",  # torch's thread count changed: timing gives each process one thread
    }
)
"""Flags that reject whatever the policy."""

REJECT_KERNEL = frozenset({"precision", "try_fallback", "reference_call", "numpy"})
"""Flags that also reject under policy `kernel` (a strict track: own kernels, full precision)."""

_PROTECTED_MODULES = ("torch", "time", "triton", "builtins", "numpy", "cudal1", "sys", "os", "gc")

_IMPORT_FLAGS = {
    "threading": "threads",
    "_thread": "threads",
    "concurrent": "threads",
    "multiprocessing": "processes",
    "subprocess": "processes",
    "ctypes": "ctypes",
    "cffi": "ctypes",
    "gc": "introspection",
    "inspect": "introspection",
    "signal": "hooks",
    "atexit": "hooks",
    "cudal1": "harness_access",
    "socket": "network",
    "numpy": "numpy",
    "shutil": "file_io",
    "tempfile": "file_io",
    "urllib": "network",
    "requests": "network",
}

_CALL_FLAGS = {
    # dotted call name (after alias resolution) -> flag
    "os._exit": "exit_call",
    "sys.exit": "exit_call",
    "exit": "exit_call",
    "quit": "exit_call",
    "os.abort": "exit_call",
    "os.kill": "processes",
    "os.fork": "processes",
    "os.forkpty": "processes",
    "os.system": "processes",
    "os.popen": "processes",
    "sys._getframe": "introspection",
    "sys.settrace": "hooks",
    "sys.setprofile": "hooks",
    "sys.addaudithook": "hooks",
    "importlib.reload": "patching",
    "os.write": "file_io",
    "os.dup": "file_io",
    "os.dup2": "file_io",
    "os.fdopen": "file_io",
    "os.putenv": "env_write",
    "os.environ.update": "env_write",
    "os.environ.setdefault": "env_write",
    "torch.set_float32_matmul_precision": "global_flags",
    "torch.use_deterministic_algorithms": "global_flags",
    "torch.set_num_threads": "thread_count",
    "torch.set_num_interop_threads": "thread_count",
    "torch.set_default_dtype": "global_flags",
    "torch.set_flush_denormal": "global_flags",
    "torch._C._set_cublas_allow_tf32": "global_flags",
    "torch.cuda.set_per_process_memory_fraction": "global_flags",
    "torch.cuda.Stream": "stream",
    "torch.cuda.stream": "stream",
    "torch.cuda.ExternalStream": "stream",
    "torch.cuda.set_stream": "stream",
    "torch.Stream": "stream",
    "torch.cuda.CUDAGraph": "cuda_graphs",
    "torch.cuda.graph": "cuda_graphs",
    "torch.cuda.make_graphed_callables": "cuda_graphs",
    "torch.compile": "torch_compile",
    "torch.jit.script": "torch_compile",
    "torch.jit.trace": "torch_compile",
    "torch.autocast": "precision",
    "torch.cuda.amp.autocast": "precision",
    "torch.amp.autocast": "precision",
    "torch.Tensor._make_subclass": "tensor_subclass",
    "functools.lru_cache": "caching",
    "functools.cache": "caching",
    "lru_cache": "caching",
    "id": "caching",
    "setattr": "setattr",
    "eval": "obfuscation",
    "exec": "obfuscation",
    "compile": "obfuscation",
    "os.makedirs": "file_io",
    "os.mkdir": "file_io",
    "os.remove": "file_io",
    "os.rename": "file_io",
    "os.symlink": "file_io",
    "torch.save": "file_io",
}
_FILE_METHODS = frozenset(
    {
        "write_text",
        "write_bytes",
        "mkdir",
        "touch",
        "unlink",
        "rename",
        "symlink_to",
        "rmdir",
        "writelines",
    }
)
_DISPATCH_INTERNALS = re.compile(
    r"(?i)dispatch|_DisableTorch|_DisableFuncTorch|_ExcludeDispatchKeyGuard|_set_mode"
)
_COMPILER_CONFIGS = ("torch._inductor.config.", "torch._dynamo.config.", "torch._functorch.config.")
"""Settings of torch.compile: a user sets them in their own program; they change how the
candidate's compiled code is built, not the eager reference."""

_NAME_CALLS = ("getattr", "setattr", "delattr", "hasattr")
_IMPORT_CALLS = ("__import__", "importlib.import_module")
_SENSITIVE_MODULES = frozenset(
    {
        *("sys", "os", "builtins", "__builtins__", "gc", "inspect", "ctypes", "importlib"),
        *("time", "threading", "_thread", "subprocess", "multiprocessing", "signal", "atexit"),
        "cudal1",
    }
)
"""Modules whose attributes, reached by a name the code computes, are how a candidate hides
introspection, exits and patching from a reader (`getattr(sys, "_get" + "frame")`)."""

_ATTR_FLAGS = {
    "f_back": "introspection",
    "f_locals": "introspection",
    "f_globals": "introspection",
    "gi_frame": "introspection",
    "tb_frame": "introspection",
    "__globals__": "introspection",
    "__closure__": "introspection",
    "_make_subclass": "tensor_subclass",
    "as_subclass": "tensor_subclass",
    "__torch_function__": "tensor_subclass",
    "__torch_dispatch__": "tensor_subclass",
    "half": "precision",
    "bfloat16": "precision",
    "float16": "precision",
    "float8_e4m3fn": "precision",
    "float8_e5m2": "precision",
    "allow_tf32": "precision",
    "allow_fp16_reduced_precision_reduction": "precision",
    "allow_bf16_reduced_precision_reduction": "precision",
    "data_ptr": "caching",
    "__subclasses__": "introspection",
    "__mro__": "introspection",
    "__bases__": "introspection",
    "modules": "sys_modules",  # resolved in visit_Attribute: only sys.modules counts
    "_python_dispatch": "introspection",
    "_disable_current_modes": "introspection",
    "_get_current_dispatch_mode": "introspection",
    "_unset_dispatch_mode": "introspection",
}

_CPP_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (flag, re.compile(pattern))
    for flag, pattern in [
        (
            "l2_persistence",
            r"accessPolicyWindow|cudaLimitPersistingL2CacheSize|hitRatio|"
            r"cudaAccessPropertyPersisting|ResetPersistingL2Cache",
        ),
        (
            "stream",
            r"cudaStreamCreate|getStreamFromPool|cublasSetStream|cudnnSetStream|"
            r"cudaStreamNonBlocking|cudaStreamPerThread|cudaStreamLegacy",
        ),
        ("threads", r"std::thread|pthread_create|std::async|std::jthread"),
        ("processes", r"\bfork\s*\(|\bsystem\s*\(|\bpopen\s*\(|\bexecv|\bptrace\s*\("),
        ("introspection", r"\bdlsym\s*\(|\bdlopen\s*\(|process_vm_"),
        ("file_io", r"\bfopen\s*\(|std::ofstream|\bfwrite\s*\("),
        (
            "precision",
            r"__half\b|half2|__nv_bfloat16|__float2half|__float2bfloat16|\bwmma::|"
            r"mma\.sync|wgmma|__nv_fp8|at::Half|at::BFloat16|kHalf|kBFloat16|"
            r"CUBLAS_COMPUTE_32F_FAST|CUBLAS_TENSOR_OP_MATH|CUBLAS_TF32_TENSOR_OP_MATH",
        ),
        (
            "fast_math",
            r"use_fast_math|__expf|__logf|__sinf|__cosf|__powf|__fdividef|__frcp|"
            r"__fsqrt_r|__tanf",
        ),
        (
            "global_flags",
            r"cudaDeviceSetLimit|cudaDeviceSetCacheConfig|cudaDeviceSetSharedMemConfig|"
            r"cublasSetMathMode|cudaSetDeviceFlags",
        ),
        ("cuda_graphs", r"cudaGraph|cudaStreamBeginCapture"),
        ("tensor_cores", r"\bwmma::|mma\.sync|wgmma|\bmma\b"),
        ("cuda_kernel", r"__global__"),
    ]
]
"""Patterns over C++/CUDA code with its comments and string literals removed."""

_LOOKS_LIKE_CPP = re.compile(
    r"#\s*include\b|__global__|__device__|\btorch::|\bat::Tensor|PYBIND11_MODULE|"
    r"TORCH_LIBRARY|extern\s+\"C\"|\bcuda[A-Z]\w*\s*\("
)
_BUILD_CALLS = ("load_inline", "cpp_extension.load", "RawKernel", "RawModule", "jiterator")
"""Calls that compile their string arguments as C++/CUDA."""


def strip_cpp(code: str) -> str:
    """C/C++ code without comments and without the contents of string and character
    literals (kept as empty quotes), line structure preserved."""
    out: list[str] = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            i = n if j < 0 else j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            end = n if j < 0 else j + 2
            out.append("\n" * code.count("\n", i, end) or " ")
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and code[j] != c and code[j] != "\n":
                j += 2 if code[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s+)?"
_KERNEL_NAME = re.compile(
    rf"__global__\s+{_BOUNDS}(?:static\s+)?(?:inline\s+)?void\s+{_BOUNDS}(\w+)\s*\("
)
"""A `__global__` function's name, with `__launch_bounds__` before or after `void`."""


@dataclass
class StaticReport:
    flags: list[str] = field(default_factory=list)
    """Sorted, de-duplicated `name:detail` strings."""
    defines_model_new: bool = False
    syntax_error: str | None = None
    kernel_names: list[str] = field(default_factory=list)
    """Names of `__global__` functions and `@triton.jit` functions: the candidate's own kernels."""

    @property
    def names(self) -> set[str]:
        return {f.split(":", 1)[0] for f in self.flags}


def analyze(source: str) -> StaticReport:
    """Flags for a candidate's source. Never raises on bad code: a syntax error is reported."""
    report = StaticReport()
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        report.syntax_error = f"line {e.lineno}: {e.msg}"
        return report
    tree = _without_main_block(tree)
    visitor = _Visitor(_prose(tree))
    visitor.bind_constants(tree)
    visitor.visit(tree)
    flags = set(visitor.flags)
    report.defines_model_new = visitor.defines_model_new

    cpp = "\n".join(strip_cpp(text) for text in visitor.cpp_sources())
    for flag, pattern in _CPP_PATTERNS:
        m = pattern.search(cpp)
        if m:
            flags.add(f"{flag}:{m.group(0)} (in C++/CUDA source)")
    kernels = _KERNEL_NAME.findall(cpp)
    report.kernel_names = sorted(set(kernels) | visitor.triton_kernels)
    if visitor.triton_kernels:
        flags.add("triton_kernel")
    report.flags = sorted(flags)
    return report


def _without_main_block(tree: ast.Module) -> ast.Module:
    """The module without `if __name__ == "__main__":` blocks: the harness imports the
    candidate as a module, so that code never runs."""

    def is_main_guard(node: ast.stmt) -> bool:
        test = node.test if isinstance(node, ast.If) else None
        return (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__"
        )

    tree.body = [node for node in tree.body if not is_main_guard(node)]
    return tree


def _prose(tree: ast.AST) -> set[int]:
    """ids of string constants that are statements of their own (docstrings, notes)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, (ast.Constant, ast.JoinedStr))
        and (not isinstance(node.value, ast.Constant) or isinstance(node.value.value, str))
    }


_PATH_CALL = re.compile(
    r"^(open|io\.open|os\.|pathlib\.|Path$|numpy\.|torch\.load$|torch\.from_file$|mmap\.)"
)
"""Calls whose string arguments are file paths (for `/proc/...`)."""


class _Visitor(ast.NodeVisitor):
    def __init__(self, prose: set[int]) -> None:
        self.flags: set[str] = set()
        self.aliases: dict[str, str] = {}
        self.prose = prose
        self.strings: dict[int, str] = {}
        """Every string constant that is not prose (f-strings joined), by node id."""
        self.assigned: dict[str, set[int]] = {}
        """name -> string constants and names its assigned values contain."""
        self.assigned_names: dict[str, set[str]] = {}
        self.built: set[int] = set()
        """String constants passed to a build call (`load_inline`, ...)."""
        self.built_names: set[str] = set()
        self.defines_model_new = False
        self.triton_kernels: set[str] = set()
        self._class_stack: list[str] = []
        self.constants: dict[str, str] = {}
        """Names bound once to a string the code spells out (see `_fold`)."""

    def bind_constants(self, tree: ast.AST) -> None:
        bound: dict[str, list[ast.AST]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    pairs: list[tuple[ast.AST, ast.AST]] = [(target, node.value)]
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        pairs = list(zip(target.elts, node.value.elts, strict=False))
                    for t, v in pairs:
                        if isinstance(t, ast.Name):
                            bound.setdefault(t.id, []).append(v)
        for _ in range(3):  # names bound to names bound to strings
            for name, values in bound.items():
                folded = {self._fold(v) for v in values}
                if len(values) == 1 and None not in folded:
                    self.constants[name] = folded.pop()  # type: ignore[assignment]

    def cpp_sources(self) -> list[str]:
        """The strings compiled as C++/CUDA: passed to a build call, directly or through
        names, or looking like C++ wherever they are."""
        names, frontier = set(), set(self.built_names)
        while frontier:
            name = frontier.pop()
            names.add(name)
            frontier |= self.assigned_names.get(name, set()) - names
        ids = set(self.built).union(*(self.assigned.get(n, set()) for n in names))
        return [
            text for key, text in self.strings.items() if key in ids or _LOOKS_LIKE_CPP.search(text)
        ]

    # names -------------------------------------------------------------------------------
    def _dotted(self, node: ast.AST) -> str | None:
        """`a.b.c` with the root alias resolved (`F.relu` -> `torch.nn.functional.relu`)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
            return ".".join(reversed(parts))
        if isinstance(node, ast.Call):
            inner = self._dotted(node.func)
            if inner:
                parts.append(inner + "()")
                return ".".join(reversed(parts))
        return None

    def _flag(self, name: str, node: ast.AST, what: str) -> None:
        self.flags.add(f"{name}:{what} (line {getattr(node, 'lineno', '?')})")

    # imports -----------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.aliases[(a.asname or a.name).split(".")[0]] = (
                a.name if a.asname else a.name.split(".")[0]
            )
            self._check_import(a.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._check_import(module, node)
        for part in [*module.split("."), *(a.name for a in node.names)]:
            if _ATTR_FLAGS.get(part) == "introspection":
                self._flag("introspection", node, f"from {module} import ...")
        for a in node.names:
            self.aliases[a.asname or a.name] = f"{module}.{a.name}"
            self._check_import(f"{module}.{a.name}", node)

    def _check_import(self, name: str, node: ast.AST) -> None:
        root = name.split(".")[0]
        if root in _IMPORT_FLAGS:
            self._flag(_IMPORT_FLAGS[root], node, f"import {name}")

    # definitions -------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = [self._dotted(b) or "" for b in node.bases]
        if node.name == "ModelNew":
            self.defines_model_new = True
            if "Model" in bases:
                self._flag("reference_call", node, "ModelNew derives from the reference Model")
        if any(b in ("torch.Tensor", "Tensor", "torch._C.TensorBase") for b in bases):
            self._flag("tensor_subclass", node, f"class {node.name}(torch.Tensor)")
        self._class_stack.append(node.name)
        self.generic_visit(node)
        self._class_stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            name = self._dotted(target) or ""
            if name.startswith("triton.") and name.split(".")[-1] in ("jit", "autotune"):
                self.triton_kernels.add(node.name)
            if name.endswith(("lru_cache", "functools.cache")):
                self._flag("caching", node, f"@{name}")
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self._flag("tensor_subclass", node, node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    # statements --------------------------------------------------------------------------
    def visit_Try(self, node: ast.Try) -> None:
        for handler in node.handlers:
            if any(isinstance(n, (ast.Call, ast.Return)) for n in ast.walk(handler)):
                self._flag("try_fallback", node, "try/except with a fallback path")
                break
        self.generic_visit(node)

    visit_TryStar = visit_Try  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_store(t, node)
            if isinstance(t, ast.Name):
                self.assigned.setdefault(t.id, set()).update(_string_ids(node.value))
                self.assigned_names.setdefault(t.id, set()).update(_names(node.value))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_store(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_store(node.target, node)
        self.generic_visit(node)

    def _check_store(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Subscript):
            name = self._dotted(target.value) or ""
            if name == "os.environ":
                self._flag("env_write", node, "os.environ[...] =")
            elif name.startswith(("builtins", "__builtins__", "sys.modules")) or name.endswith(
                ("__dict__", "vars()")
            ):
                self._flag("patching", node, f"{name}[...] =")
            return
        if not isinstance(target, ast.Attribute):
            return
        name = self._dotted(target) or ""
        root = name.split(".")[0]
        if name.startswith(_COMPILER_CONFIGS):  # how torch.compile compiles the candidate
            self._flag("global_flags", node, f"{name} =")
        elif name.startswith("torch.backends.") or name.startswith("torch.cuda.matmul"):
            self._flag("global_flags", node, f"{name} =")
            if "tf32" in name or "reduced_precision" in name:
                self._flag("precision", node, f"{name} =")
        elif root in _PROTECTED_MODULES or root == "__builtins__":
            self._flag("patching", node, f"{name} =")

    # expressions -------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        name = self._dotted(node.func) or ""
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if name.endswith(_BUILD_CALLS):
            for arg in arguments:
                self.built |= _string_ids(arg)
                self.built_names |= _names(arg)
        if name in ("triton.language.dot", "tl.dot") and not _full_precision_dot(node):
            self._flag("precision", node, 'tl.dot without input_precision="ieee" (TF32 on fp32)')
        if _PATH_CALL.match(name) and any(
            isinstance(a, ast.Constant) and str(a.value).startswith("/proc/") for a in arguments
        ):
            self._flag("introspection", node, f"{name}('/proc/...')")
        if name in _NAME_CALLS and len(node.args) > 1:
            self._check_named_access(name, node)
        if name in _IMPORT_CALLS and node.args:
            module = self._fold(node.args[0])
            if module is None:
                self._flag("obfuscation", node, f"{name} with a module name computed at run time")
            else:
                self._check_import(module, node)
        attr = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if attr in _FILE_METHODS or (attr == "write" and name.split(".")[0] not in ("self", "sys")):
            self._flag("file_io", node, f".{attr}(...)")
        if name.endswith(".open") and any(
            isinstance(a, ast.Constant) and any(c in str(a.value) for c in "wax+")
            for a in node.args
        ):
            self._flag("file_io", node, f"{name}(write mode)")
        flag = _CALL_FLAGS.get(name)
        if flag and flag != "setattr":
            self._flag(flag, node, name)
        if name in ("open", "builtins.open", "io.open", "pathlib.Path.write_text"):
            mode = node.args[1] if len(node.args) > 1 else None
            mode = next((k.value for k in node.keywords if k.arg == "mode"), mode)
            if isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+"):
                self._flag("file_io", node, f"open(..., {mode.value!r})")
            elif mode is not None and not isinstance(mode, ast.Constant):
                self._flag("file_io", node, "open() with a mode computed at run time")
        if name.endswith((".write_text", ".write_bytes")):
            self._flag("file_io", node, name)
        if name.endswith(".to") or name.endswith(".type"):
            for arg in node.args:
                n = self._dotted(arg) or ""
                if n.split(".")[-1] in ("half", "float16", "bfloat16"):
                    self._flag("precision", node, f"{name}({n})")
        if (
            (
                name in ("Model", "super().forward")
                or (name.endswith(".forward") and name.startswith("super()"))
            )
            and self._class_stack
            and self._class_stack[-1] == "ModelNew"
        ):
            self._flag("reference_call", node, f"{name}(...) inside ModelNew")
        if name.endswith("load_inline") or name.endswith("cpp_extension.load"):
            for kw in node.keywords:
                if kw.arg in ("extra_cuda_cflags", "extra_cflags") and "fast_math" in ast.dump(kw):
                    self._flag("fast_math", node, "--use_fast_math")
        self.generic_visit(node)

    def _fold(self, node: ast.AST) -> str | None:
        """The string an expression always evaluates to (constants, `+`, f-strings without
        holes, names bound once to such), or None."""
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._fold(node.left), self._fold(node.right)
            return None if left is None or right is None else left + right
        if isinstance(node, ast.JoinedStr) and all(
            isinstance(v, ast.Constant) for v in node.values
        ):
            return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        return None

    def _check_named_access(self, call: str, node: ast.Call) -> None:
        """getattr/setattr/delattr/hasattr: a name the code spells out is checked as if written
        as an attribute; a computed one on a sensitive module hides what it reaches."""
        target = self._dotted(node.args[0]) or ""
        root = target.split(".")[0]
        attr = self._fold(node.args[1])
        if attr is None:
            if root in _SENSITIVE_MODULES or target.startswith("torch._C"):
                self._flag("obfuscation", node, f"{call}({target}, <name computed at run time>)")
            elif call in ("setattr", "delattr") and root in _PROTECTED_MODULES:
                self._flag("patching", node, f"{call}({target}, <name computed at run time>)")
            return
        dotted = f"{target}.{attr}" if target else attr
        if call in ("setattr", "delattr") and root in _PROTECTED_MODULES:
            self._flag("patching", node, f"{call}({target}, {attr!r})")
        flag = _CALL_FLAGS.get(dotted) or _ATTR_FLAGS.get(attr)
        if flag and flag not in ("setattr", "sys_modules"):
            self._flag(flag, node, f"{call}({target}, {attr!r})")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        flag = _ATTR_FLAGS.get(node.attr)
        if flag == "sys_modules":
            if self._dotted(node) == "sys.modules":
                self._flag("introspection", node, "sys.modules")
        elif flag:
            self._flag(flag, node, f".{node.attr}")
        dotted = self._dotted(node) or ""
        if dotted.startswith("torch._C.") and _DISPATCH_INTERNALS.search(node.attr):
            # torch._C._nn.relu and friends are honest shortcuts; the dispatch-mode machinery
            # is how a candidate hides its ops from the harness's op log.
            self._flag("introspection", node, f"torch._C dispatch internals ({node.attr})")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.prose:
            self.strings[id(node)] = node.value
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        """An f-string is one string: its constant parts joined (the holes left empty)."""
        if id(node) not in self.prose:
            self.strings[id(node)] = "".join(
                str(v.value) for v in node.values if isinstance(v, ast.Constant)
            )
        for v in node.values:
            if not isinstance(v, ast.Constant):
                self.visit(v)


def _string_ids(node: ast.AST) -> set[int]:
    return {
        id(n)
        for n in ast.walk(node)
        if (isinstance(n, ast.Constant) and isinstance(n.value, str))
        or isinstance(n, ast.JoinedStr)
    }


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _full_precision_dot(node: ast.Call) -> bool:
    """`tl.dot(..., input_precision="ieee")` or `allow_tf32=False`: fp32 inputs stay fp32."""
    for k in node.keywords:
        if k.arg == "input_precision" and isinstance(k.value, ast.Constant):
            return k.value.value == "ieee"
        if k.arg == "allow_tf32" and isinstance(k.value, ast.Constant):
            return k.value.value is False
    return False
