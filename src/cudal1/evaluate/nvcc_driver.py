"""nvcc with its host and device front ends side by side (TRUSTED; stdlib only: it runs in the
candidate's sandbox as the CUDA compiler torch's extension builder calls, `PYTORCH_NVCC`).

    python3 -I -S nvcc_driver.py REAL_NVCC NVCC_ARGS...

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
"""

from __future__ import annotations

import os
import re
import secrets
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
    return Plan(
        prelude=prelude,
        module_id=[shlex.join(first)],
        module_id_file=module_id_file,
        host=[host_pp, shlex.join(host)],
        device=[device_pp, *commands[3:6]],
        final=[c for c in commands[6:] if _tool(c) != "rm"],  # the private directory goes
        depfile=depfiles[0].strip().strip('"') if depfiles else None,
        device_ii=device_args[device_args.index("-o") + 1] if depfiles else "",
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


def main(argv: list[str]) -> int:
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
    `_PATHHASH_N_NAME_HASH`: the id gets the real shape, its content hash drawn at random (so
    the objects match nvcc's but for those eight characters)."""
    with open(module_id_file) as f:
        found = re.fullmatch(r"(_[0-9a-f]{8}_\d+_\w+_)[0-9a-f]{8}_\d+", f.read().strip())
    if found:
        with open(module_id_file, "w") as f:
            f.write(found.group(1) + secrets.token_hex(4))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
