"""Compiling off the GPU box: a build actor (CPU only, sandboxed builder) builds the candidate,
the archive travels to the evaluation actor, which loads it only when it hashes to the digest
the router passed on. Ray runs on a loopback cluster; the "GPU" actor measures on the CPU."""

import dataclasses
import hashlib
import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from cudal1.evaluate import EvalConfig, artefact
from cudal1.evaluate.artefact import ArtefactRefused, BuildReceipt
from cudal1.tasks import load_suite, source_hash

GELU = load_suite("bundled", validate=False).get("L1_20")
CPP_GELU = (
    Path(__file__).parent / "honest" / "candidates" / "build_in_own_directory.py"
).read_text()
BROKEN_CPP = CPP_GELU.replace(  # the compiler stops at once (no header parsed): a quick failure
    'functions=["gelu"],', 'functions=["gelu"], extra_cflags=["-fno-such-option"],'
)


def _tar(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def _receipt(blob: bytes, candidate: str = "c" * 64) -> BuildReceipt:
    return BuildReceipt(candidate, hashlib.sha256(blob).hexdigest(), len(blob), 1.0, "node")


def test_an_archive_is_unpacked_only_when_it_is_the_one_announced(tmp_path):
    built = tmp_path / "built" / ("c" * 64)
    (built / "torch_extensions" / "ext").mkdir(parents=True)
    (built / "torch_extensions" / "ext" / "ext.so").write_bytes(b"\x7fELF" + bytes(100))
    os.utime(built / "torch_extensions" / "ext" / "ext.so", ns=(1, 1_700_000_000_123_456_789))
    (built / ".cudal1-build.lock").touch()
    blob, digest = artefact.pack(built, max_bytes=1 << 20)
    receipt = BuildReceipt("c" * 64, digest, len(blob), 2.0, "node")

    target = tmp_path / "gpu" / ("c" * 64)
    target.mkdir(parents=True)
    (target / "stale").write_text("from an earlier build")
    artefact.unpack(blob, receipt, target, max_bytes=1 << 20)
    so = target / "torch_extensions" / "ext" / "ext.so"
    assert so.read_bytes()[:4] == b"\x7fELF"
    assert not (target / "stale").exists()  # the build is exactly the archive
    # to the nanosecond: ninja's deps log rebuilds an object that looks newer than it was
    assert so.stat().st_mtime_ns == (built / so.relative_to(target)).stat().st_mtime_ns

    swapped = _tar({"torch_extensions/ext/ext.so": b"planted"})
    refusals = {
        "hashes to": (swapped, dataclasses.replace(receipt, size=len(swapped)), target),
        "receipt": (swapped, receipt, target),
        "offered for": (blob, receipt, tmp_path / "gpu" / ("d" * 64)),
        "limit": (blob, receipt, target, 10),
    }
    for expected, (data, rec, where, *limit) in refusals.items():
        where.mkdir(exist_ok=True)
        with pytest.raises(ArtefactRefused, match=expected):
            artefact.unpack(data, rec, where, max_bytes=limit[0] if limit else 1 << 20)
    assert (target / "torch_extensions" / "ext" / "ext.so").read_bytes()[:4] == b"\x7fELF"

    # An archive that hashes right but reaches outside its directory (a compile node that was
    # itself subverted) unpacks nothing there.
    for escaping in (_tar({"../escaped": b"x"}), _tar({}, links={"out": "/etc"})):
        with pytest.raises(ArtefactRefused, match="does not unpack"):
            artefact.unpack(escaping, _receipt(escaping), target, max_bytes=1 << 20)
        assert not (tmp_path / "gpu" / "escaped").exists()
        assert [p.name for p in target.iterdir()] == []
    bomb = _tar({"big": bytes(4 << 20)})  # compresses to a few KiB
    with pytest.raises(ArtefactRefused, match="unpacks to"):
        artefact.unpack(bomb, _receipt(bomb), target, max_bytes=1 << 20)
    with pytest.raises(ArtefactRefused, match="over the"):
        artefact.pack(built, max_bytes=10)


@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, namespace="cudal1")
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_build_actor_builds_and_the_evaluation_actor_loads_that_build(ray_session, tmp_path):
    from cudal1.evaluate.evaluator import evaluate
    from cudal1.evaluate.ray_backend import RayEvaluator

    config = EvalConfig(
        device="cpu",
        trials=2,
        timing_budget_s=0.1,
        min_pairs=7,
        max_pairs=14,
        run_timeout_s=60,
        build_root=tmp_path / "builds",
    )
    with RayEvaluator(config, actors=1, jobs=1, builders=1, builder_cpus=1) as ev:
        futures = {
            "cpp": ev.submit(GELU, CPP_GELU),
            "broken": ev.submit(GELU, BROKEN_CPP),
            "static": ev.submit(GELU, "import atexit\n" + CPP_GELU),
        }
        results = {name: f.result(timeout=900) for name, f in futures.items()}
        builder_node = ray_session.get(ev.builders[0].ping.remote())
        # measured again (as a suspicious win is): the build actor's kept archive, not a rebuild
        remeasured = ev.submit(GELU, CPP_GELU, fresh=True).result(timeout=900)

    ok = results["cpp"]
    assert ok.status == "ok", ok.reasons
    assert ok.env["built_on"] == builder_node and ok.phase_seconds["compile"] > 0
    # The evaluation actor's candidate process found the build up to date: ninja's log (which
    # came in the archive) names each target once, so nothing was built again where it ran.
    build_dir = config.build_root / source_hash(CPP_GELU)
    (log,) = build_dir.rglob(".ninja_log")
    targets = [line.split("\t")[3] for line in log.read_text().splitlines()[1:]]
    assert targets and len(targets) == len(set(targets)), targets
    assert remeasured.status == "ok" and not remeasured.cached
    assert remeasured.env["build_sha256"] == ok.env["build_sha256"]

    broken = results["broken"]  # settled on the build actor: no evaluation actor involved
    assert broken.status == "compile_error" and "built_on" not in broken.env
    assert "load" not in broken.phase_seconds
    assert results["static"].status == "rejected"
    assert not (config.build_root / source_hash(BROKEN_CPP)).exists() or not any(
        (config.build_root / source_hash(BROKEN_CPP)).rglob("*.so")
    )

    # An archive altered on the way: refused, set aside, and the candidate built where it is
    # measured (here a no-op: the good build is in place); the planted file never lands.
    receipt = BuildReceipt(
        ok.candidate_hash, hashlib.sha256(b"x").hexdigest(), 0, 1.0, builder_node
    )
    planted = _tar({"torch_extensions/planted.txt": b"swapped on the way"})
    receipt = dataclasses.replace(receipt, size=len(planted))
    again = evaluate(GELU, CPP_GELU, config, prebuilt=(receipt, planted))
    assert again.status == "ok", again.reasons
    assert any(f.startswith("build_refused:") for f in again.flags), again.flags
    assert "built_on" not in again.env
    assert not (build_dir / "torch_extensions" / "planted.txt").exists()


@pytest.mark.slow
def test_the_precompiled_binding_header_gives_the_same_object(tmp_path):
    """GCC takes torch/extension.h from the evaluator's precompiled header (found through
    CPATH, ahead of torch's -isystem directories) and the object is the one it would have
    built from the header: the build stays the candidate's own."""
    import subprocess

    from cudal1.evaluate import pch
    from cudal1.evaluate.evaluator import _build_env

    flags = pch.binding_flags()
    if shutil.which("c++") is None or flags is None:
        pytest.skip("needs GCC and torch's extension builder")
    unbuilt = EvalConfig(device="cpu", build_root=tmp_path / "builds", precompiled_headers=True)
    assert pch.include_dir(unbuilt.pch_root) is None and "CPATH" not in _build_env(
        unbuilt, tmp_path, tmp_path / "b"
    )
    # the machine's own directory, which the suite's session fixture builds (or is building)
    config = EvalConfig(device="cpu", precompiled_headers=True)
    headers = pch.ensure(config.pch_root, variants={"default": ()})
    assert headers is not None and headers == pch.include_dir(config.pch_root)
    gch = headers / "torch" / "extension.h.gch" / "default.gch"
    assert gch.stat().st_mtime_ns == pch.torch_header().stat().st_mtime_ns
    env = _build_env(config, tmp_path, tmp_path / "b")
    assert env["CPATH"].split(os.pathsep)[0] == str(headers)
    off = dataclasses.replace(config, precompiled_headers=False)
    assert "CPATH" not in _build_env(off, tmp_path, tmp_path / "b")

    main = tmp_path / "main.cpp"  # what load_inline writes for a one-function extension
    main.write_text(
        "#include <torch/extension.h>\n"
        "#include <torch/extension.h>\n"  # the candidate's own include, after load_inline's
        "torch::Tensor add_one(torch::Tensor x) { return x + 1; }\n"
        'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_one", &add_one); }\n'
    )
    plain_env = {k: v for k, v in os.environ.items() if k != "CPATH"}

    def compile_main(extra_env: dict[str, str], out: Path) -> str:
        command = ["c++", "-DTORCH_EXTENSION_NAME=probe_ext", *flags, "-H", "-c", str(main)]
        done = subprocess.run(
            [*command, "-o", str(out)],
            env={**plain_env, **extra_env},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stderr

    used = compile_main({"CPATH": env["CPATH"]}, tmp_path / "with.o")
    assert f"! {gch}" in used.splitlines()
    plain = compile_main({}, tmp_path / "without.o")
    assert not any(line.startswith("! ") for line in plain.splitlines())
    assert (tmp_path / "with.o").read_bytes() == (tmp_path / "without.o").read_bytes()


def test_a_reinstalled_header_is_precompiled_again_only_when_it_changed(tmp_path):
    """A torch reinstalled at the same path with the same version dates its header anew. The
    precompiled headers built from the old one are offered on `CPATH` no more; the next
    `ensure` dates them as the new header where every file GCC read for them is the same (the
    same inode: not rebuilt), and builds them again where one differs (a small header stands
    in for torch's: GCC precompiles it in a moment)."""
    from cudal1.evaluate import pch

    if shutil.which("c++") is None or pch.binding_flags() is None:
        pytest.skip("needs GCC and torch's extension builder")
    header = tmp_path / "installed" / "extension.h"
    header.parent.mkdir()
    header.write_text("inline int installed_probe() { return 1; }\n")
    root = tmp_path / "pch"
    variants = {"default": (), "O3": ("-O3",)}

    def reinstall(text: str) -> None:
        header.write_text(text)
        os.utime(header, ns=(header.stat().st_mtime_ns + 10**9,) * 2)
        assert pch.include_dir(root, header) is None

    directory = pch.ensure(root, variants=variants, header=header)
    assert directory is not None and pch.include_dir(root, header) == directory
    gch = directory / "torch" / "extension.h.gch"
    assert {v.name for v in gch.glob("*")} == {"default.gch", "O3.gch"}
    for name in variants:  # held, so a rebuilt one cannot reuse the inode
        os.link(gch / f"{name}.gch", tmp_path / name)

    reinstall(header.read_text())
    assert pch.ensure(root, variants=variants, header=header) == directory
    assert pch.include_dir(root, header) == directory
    for name in variants:
        kept = gch / f"{name}.gch"
        assert kept.stat().st_mtime_ns == header.stat().st_mtime_ns
        assert kept.stat().st_ino == (tmp_path / name).stat().st_ino

    reinstall("inline int installed_probe() { return 2; }\n")
    assert pch.ensure(root, variants=variants, header=header) == directory
    assert pch.include_dir(root, header) == directory
    for name in variants:
        rebuilt = gch / f"{name}.gch"
        assert rebuilt.stat().st_mtime_ns == header.stat().st_mtime_ns
        assert rebuilt.stat().st_ino != (tmp_path / name).stat().st_ino
        assert rebuilt.read_bytes() != (tmp_path / name).read_bytes()


def test_a_build_actor_makes_the_host_prefixes_once_for_each_architecture(tmp_path, monkeypatch):
    """The GPUs' architectures reach a CPU build actor with each build, not when it starts: the
    first build for an architecture starts making its host prefixes (in the background, once),
    a build with no architecture or a torch without CUDA starts nothing."""
    from cudal1.evaluate import evaluator, pch, ray_backend

    made: list[tuple[Path, str, str]] = []
    monkeypatch.setattr(pch, "ensure_in_background", lambda *args, **kwargs: None)
    monkeypatch.setattr(pch, "ensure_host_prefixes", lambda *args: made.append(args))
    config = EvalConfig(device="cuda", build_root=tmp_path / "builds")
    actor = ray_backend.BuildActor(config.to_dict())
    monkeypatch.setattr(evaluator, "real_nvcc", lambda: None)
    assert actor.host_prefixes("9.0") is None and not made
    monkeypatch.setattr(evaluator, "real_nvcc", lambda: "/toolkit/bin/nvcc")
    started = [actor.host_prefixes(arch) for arch in ("9.0", "9.0", "8.0", None)]
    for thread in started:
        if thread is not None:
            thread.join()
    assert [t is not None for t in started] == [True, False, True, False]
    nvcc = "/toolkit/bin/nvcc"
    assert made == [(config.pch_root, nvcc, "9.0"), (config.pch_root, nvcc, "8.0")]
