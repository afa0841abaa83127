"""nvcc with its host and device front ends side by side (TRUSTED; stdlib only: it runs in the
candidate's sandbox as the CUDA compiler torch's extension builder calls, `PYTORCH_NVCC`).

    python3 -I -S nvcc_driver.py [--host-prefix DIR | --make-host-prefix DIR] REAL_NVCC NVCC_ARGS...

For one `.cu` file and one GPU architecture nvcc runs, one after another: the host
preprocessor, cudafe++ (the host front end), the device preprocessor, cicc (the device front
end and optimiser), ptxas, fatbinary, and the host compiler on cudafe++'s output with the
fatbinary embedded. cudafe++ and cicc each parse the whole translation unit, torch's headers
included (10.4 s and 12.3 s of a 32.6 s compile of an honest candidate's `.cu` on the
project's CPU machine), and cicc needs only one thing of cudafe++: the module id, a name
cudafe++ writes for it. This driver asks nvcc for its plan (`--dryrun`), has cudafe++ write
the module id from an empty unit first (so the name is in cudafe++'s own format; it differs
from the one nvcc would have used, as nvcc's does between two runs), runs the host chain and
the device chain at once, then the host compile: every tool with the arguments nvcc chose for
it. Whatever else nvcc was asked to do (several architectures, relocatable device code,
preprocessing only, a plan of any other shape) is done by nvcc itself.

The host compile then parses torch's headers a second time: cudafe++'s output starts with
them, rewritten (about 399,000 of 399,100 lines, 7.1-7.5 s of GCC's time on the CPU machine).
That part, the *host prefix*, ends where the output first returns to the `.cu` itself, and it
is the same text for every unit with the same include list and module id. So the module id
here is not drawn at random but fixed by the file's name, and with `--host-prefix DIR` the
host compile reads the prefix from `DIR/<sha256 of its text>.h` when `DIR` holds a
precompiled header of that text (`.h.gch`), made by trusted code (`pch.ensure_host_prefixes`,
through `--make-host-prefix DIR`, which runs the host chain alone and writes no object)
outside any candidate's sandbox, which shows `DIR` read-only. GCC checks that header against
the compile's flags and reads the text instead when it does not fit, so the object is the one
the unsplit file gives either way.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MODULE_ID = "--module_id_file_name"
_GEN_MODULE_ID = "--gen_module_id_file"
_FILTER_DEPENDENCIES = re.compile(r"^-- Filter Dependencies -- > (.+)$")
_LINE_MARKER = re.compile(r'^# \d+ "(.*)"')
_NVCC_ITSELF = {
    f"{dash}{name}"
    for dash in ("-", "--")
    for name in ("time", "keep", "keep-dir", "save-temps", "dryrun", "v", "verbose")
} | {"-M", "-MM", "-MMD", "-MT", "-MP"}
"""Options whose effect is nvcc's own (its timing file, kept intermediates, printed commands)
and dependency lists of any other kind than `-MD -MF FILE` (torch's)."""
_WITH_VALUE = frozenset(
    {"-Xptxas", "-Xcompiler", "-Xlinker", "-Xnvlink", "-Xcudafe", "-Xarchive", "-o", "-MF"}
    | {"--ptxas-options", "--compiler-options", "--linker-options", "-ccbin", "-I", "-D"}
)
"""Options whose next argument is their value, never an option of nvcc's (`-Xptxas -v`)."""


def _leaves_it_to_nvcc(args: list[str]) -> bool:
    """Asked for something only nvcc itself does."""
    values = {i + 1 for i, a in enumerate(args) if a in _WITH_VALUE}
    return any(a.split("=", 1)[0] in _NVCC_ITSELF for i, a in enumerate(args) if i not in values)


@dataclass(frozen=True)
class Plan:
    """nvcc's commands for one compile, split where they can run at once."""

    prelude: list[str]
    """nvcc's variable assignments (PATH, CICC_PATH, ...), which its commands use."""
    module_id: list[str]
    """cudafe++ on an empty unit: writes the module id file both chains read."""
    module_id_file: str
    host: list[str]
    device: list[str]
    final: list[str]
    depfile: str | None = None
    """Where `-MD -MF FILE` asked for the make-style dependency list (torch's build.ninja
    does, for every `.cu`): nvcc writes it in a step of its own, not a command."""
    device_ii: str = ""
    """The device preprocessor's output, whose line markers that list is made of."""
    host_source: str = ""
    """cudafe++'s output, which the host compile (the last of `final`) compiles."""

    def script(self, commands: list[str]) -> str:
        lines = []
        for assignment in self.prelude:  # values as nvcc wrote them, quotes and all
            name, value = assignment.split("=", 1)
            lines.append(f"export {name}={shlex.quote(value)}")
        return "\n".join(["set -e", *lines, *commands])


def _tool(command: str) -> str:
    try:
        first = shlex.split(command)[0]
    except (ValueError, IndexError):
        return ""
    return os.path.basename(first)


def plan(nvcc_dryrun: str, empty_unit: str) -> Plan | None:
    """The parallel plan for nvcc's `--dryrun` output, or None if it is not the one-file,
    one-architecture shape this driver knows. nvcc orders its steps two ways: host
    preprocessor, cudafe++, device preprocessor, cicc; or, asked for dependencies (`-MD`),
    both preprocessors first, then the dependency step, then cudafe++ and cicc."""
    lines = [ln[3:] for ln in nvcc_dryrun.splitlines() if ln.startswith("#$ ")]
    prelude = [ln.rstrip() for ln in lines if _ASSIGNMENT.match(ln)]
    commands = [ln.strip() for ln in lines if not _ASSIGNMENT.match(ln)]
    depfiles = [m.group(1) for c in commands if (m := _FILTER_DEPENDENCIES.match(c))]
    commands = [c for c in commands if not _FILTER_DEPENDENCIES.match(c)]
    tools = [_tool(c) for c in commands]
    if len(commands) < 7 or len(depfiles) > 1 or tools[3:6] != ["cicc", "ptxas", "fatbinary"]:
        return None
    if any(t in {"cudafe++", "cicc", "ptxas", "fatbinary", "nvlink"} for t in tools[6:]):
        return None  # a second architecture, or a device link
    if tools[1] == "cudafe++":  # host preprocessor, cudafe++, device preprocessor
        host_pp, cudafe_at, device_pp = commands[0], 1, commands[2]
    elif tools[2] == "cudafe++" and depfiles:  # both preprocessors, then cudafe++
        device_pp, host_pp, cudafe_at = commands[0], commands[1], 2
    else:
        return None
    if " -E " not in host_pp or " -E " not in device_pp or " -c " not in commands[-1]:
        return None
    if "-D__CUDA_ARCH__=" not in device_pp or "-D__CUDA_ARCH__=" in host_pp:
        return None
    device_args = shlex.split(device_pp)
    if depfiles and "-o" not in device_args:
        return None
    cudafe, cicc = shlex.split(commands[cudafe_at]), shlex.split(commands[3])
    if _GEN_MODULE_ID not in cudafe or _MODULE_ID not in cudafe or _MODULE_ID not in cicc:
        return None
    module_id_file = cudafe[cudafe.index(_MODULE_ID) + 1]
    if cicc[cicc.index(_MODULE_ID) + 1] != module_id_file:
        return None
    # cudafe++ writes the id from an empty unit; its outputs there are thrown away
    scratch = os.path.join(os.path.dirname(module_id_file), "module_id_only")
    first = list(cudafe)
    for option, value in (("--gen_c_file_name", scratch + ".cpp"), ("--stub_file_name", scratch)):
        if option not in first:
            return None
        first[first.index(option) + 1] = value
    first[-1] = empty_unit
    host = [c for c in cudafe if c != _GEN_MODULE_ID]
    final = [c for c in commands[6:] if _tool(c) != "rm"]  # the private directory goes
    host_source = cudafe[cudafe.index("--gen_c_file_name") + 1]
    if not final or host_source not in shlex.split(final[-1]):
        return None
    return Plan(
        prelude=prelude,
        module_id=[shlex.join(first)],
        module_id_file=module_id_file,
        host=[host_pp, shlex.join(host)],
        device=[device_pp, *commands[3:6]],
        final=final,
        depfile=depfiles[0].strip().strip('"') if depfiles else None,
        device_ii=device_args[device_args.index("-o") + 1] if depfiles else "",
        host_source=host_source,
    )


def write_dependencies(device_ii: str, target: str, depfile: str) -> bool:
    """nvcc's dependency list, as nvcc writes it: `TARGET : SOURCE`, then every file the
    device preprocessor read, once each in the order it first read them (its line markers),
    one per line. Byte for byte nvcc's for the honest corpus's torch extensions. False where
    the preprocessor left no line markers to read."""
    files: list[str] = []
    seen: set[str] = set()
    with open(device_ii, errors="surrogateescape") as f:
        for line in f:
            found = _LINE_MARKER.match(line) if line.startswith("# ") else None
            if found and not found.group(1).startswith("<") and found.group(1) not in seen:
                seen.add(found.group(1))
                files.append(found.group(1))
    if not files:
        return False
    source, *headers = files
    lines = [f"{target} : {source}", *(f"    {h}" for h in headers)]
    with open(depfile, "w", errors="surrogateescape") as f:
        f.write(" \\\n".join(lines) + "\n")
    return True


def _run_side_by_side(steps: Plan, chains: list[list[str]]) -> int:
    """Each chain in a shell of its own, all at once; the first failure's exit status."""
    procs = [subprocess.Popen(["bash", "-c", steps.script(chain)]) for chain in chains]
    codes = [p.wait() for p in procs]
    return next((c for c in codes if c), 0)


def split_host_source(text: str) -> tuple[str, str, str] | None:
    """cudafe++'s output as (its first line, the host prefix, the rest): the prefix runs from
    the second line to the first line marker that returns to the main file. None where there
    is no such marker (no code of the unit's own), or no prefix before it."""
    first, sep, body = text.partition("\n")
    main_file = _LINE_MARKER.match(first)
    if not sep or main_file is None:
        return None
    back = re.compile(rf'^# \d+ "{re.escape(main_file.group(1))}"', re.MULTILINE).search(body)
    if back is None or back.start() == 0:
        return None
    return first, body[: back.start()], body[back.start() :]


def prefix_name(prefix: str) -> str:
    """The file name a host prefix is kept under: its text's digest."""
    return hashlib.sha256(prefix.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".h"


def is_prefix_name(name: str) -> bool:
    """Whether `name` has the shape `prefix_name` gives."""
    return re.fullmatch(r"[0-9a-f]{32}\.h", name) is not None


def _read(path: str) -> str:
    with open(path, errors="surrogateescape", newline="") as f:
        return f.read()


def _write(path: str, text: str) -> None:
    with open(path, "w", errors="surrogateescape", newline="") as f:
        f.write(text)


def _behind_prefix(source: str, directory: str, target: str | None) -> None:
    """Have the host compile of `source` include its prefix from `directory` where a
    precompiled header of that exact text is kept there, and say so: in the build's output
    (`USED_PREFIX`) and beside the object `target` (`PREFIX_MARK`), where the evaluator reads
    it back after the build."""
    parts = split_host_source(_read(source))
    if parts is None:
        return
    first, prefix, rest = parts
    header = os.path.join(directory, prefix_name(prefix))
    if os.path.isfile(header + ".gch") and os.path.isfile(header):
        _write(source, f'{first}\n#include "{header}"\n{rest}')
        print(f"{USED_PREFIX}{os.path.basename(header)}", flush=True)
        if target is not None:
            _write(target + PREFIX_MARK, os.path.basename(header))


MADE_PREFIX = "cudal1 host prefix made: "
"""What `--make-host-prefix` prints before the made header's file name (ninja shows a
command's output), so that its maker learns which it is while others are made beside it."""
USED_PREFIX = "cudal1 host prefix used: "
"""What a build whose host compile includes a made prefix prints before the header's file
name: a verbose build's log shows which prefix it matched (one that prints nothing matched
none). GCC still reads the text where the precompiled header does not fit the compile."""
PREFIX_MARK = ".host_prefix"
"""Appended to an object's path: the file naming the prefix its host compile included."""


def _make_prefix(steps: Plan, directory: str) -> int:
    """Write this unit's host prefix into `directory` and precompile it with the host
    compile's own command (TRUSTED callers only: `pch.ensure_host_prefixes`)."""
    parts = split_host_source(_read(steps.host_source))
    if parts is None:
        return 1
    header = os.path.join(directory, prefix_name(parts[1]))
    text, gch = f"{header}.{os.getpid()}.text", f"{header}.{os.getpid()}.gch"
    _write(text, parts[1])
    os.replace(text, header)
    compile_ = shlex.split(steps.final[-1])
    compile_[compile_.index("-o") + 1] = gch
    compile_[compile_.index("-x") + 1] = "c++-header"
    command = [a for a in compile_ if a not in ("-c", steps.host_source)]
    code = _run_side_by_side(steps, [[shlex.join([*command, header])]])
    if code == 0:
        os.replace(gch, header + ".gch")  # GCC never sees half a header
        print(f"{MADE_PREFIX}{os.path.basename(header)}", flush=True)
    return code


def main(argv: list[str]) -> int:
    prefix_dir = make_dir = None
    if argv[:1] == ["--host-prefix"]:
        prefix_dir, argv = argv[1], argv[2:]
    elif argv[:1] == ["--make-host-prefix"]:
        make_dir, argv = argv[1], argv[2:]
    real, args = argv[0], argv[1:]
    if _leaves_it_to_nvcc(args):
        return subprocess.run([real, *args]).returncode
    with tempfile.TemporaryDirectory(prefix="cudal1-nvcc-") as private:
        os.environ["TMPDIR"] = private  # nvcc's intermediate files, this compile's alone
        dry = subprocess.run([real, *args, "--dryrun"], capture_output=True, text=True)
        empty = os.path.join(private, "empty.ii")
        open(empty, "w").close()
        steps = plan(dry.stderr, empty) if dry.returncode == 0 else None
        target = _output(args)
        if steps is None or (steps.depfile is not None and target is None):
            return subprocess.run([real, *args]).returncode
        code = _run_side_by_side(steps, [steps.module_id])
        if code:
            return code
        _as_for_a_real_unit(steps.module_id_file)
        if make_dir is not None:  # the prefix needs cudafe++'s output alone: no object
            code = _run_side_by_side(steps, [steps.host])
            return code or _make_prefix(steps, make_dir)
        code = _run_side_by_side(steps, [steps.host, steps.device])
        if code:
            return code
        listed = (
            steps.depfile is None
            or target is None
            or write_dependencies(steps.device_ii, target, steps.depfile)
        )
        if not listed:
            return subprocess.run([real, *args]).returncode
        if prefix_dir:
            _behind_prefix(steps.host_source, prefix_dir, target)
        return _run_side_by_side(steps, [steps.final])


def _output(args: list[str]) -> str | None:
    """The object nvcc was asked to write (`-o FILE`), as given: the dependency list's target."""
    found = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-o", "--output-file")]
    return found[0] if len(found) == 1 else None


def masked(data: bytes) -> bytes:
    """An object's bytes with the names nvcc varies from build to build blanked: its temporary
    files' (`tmpxft_...`) and the module id (`_PATHHASH_N_NAME_HASH`, wherever a symbol
    carries it). Two builds of one source by nvcc, or by nvcc and this driver, are then equal."""
    data = re.sub(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}", lambda m: b"T" * len(m.group()), data)
    out, pos = bytearray(), 0
    for found in re.finditer(rb"_[0-9a-f]{8}_(\d+)_", data):
        if found.start() < pos:
            continue
        end = found.end() + int(found.group(1))
        if re.fullmatch(rb"_[0-9a-f]{8}", data[end : end + 9]):
            out += data[pos : found.start()] + b"M" * (end + 9 - found.start())
            pos = end + 9
    return bytes(out + data[pos:])


def _as_for_a_real_unit(module_id_file: str) -> None:
    """cudafe++ names an empty unit `_PATHHASH_N_NAME_HASH_PID`, a real one
    `_PATHHASH_N_NAME_HASH`: the id gets the real shape, both hashes fixed by `N_NAME` (the
    unit's file name), so that units of one name and include list share their host prefix (the
    objects match nvcc's but for those sixteen characters). Two extensions with one module id,
    and one mangled kernel name, each run their own kernel in one process
    (`benchmarks/module_id_probe.py` on an H100)."""
    with open(module_id_file) as f:
        found = re.fullmatch(r"_[0-9a-f]{8}_(\d+_\w+)_[0-9a-f]{8}_\d+", f.read().strip())
    if found:
        digest = hashlib.sha256(b"cudal1 module id\0" + found.group(1).encode()).hexdigest()
        with open(module_id_file, "w") as f:
            f.write(f"_{digest[:8]}_{found.group(1)}_{digest[8:16]}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
