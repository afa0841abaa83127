"""A candidate's build on its way from a compile node to the GPU that measures it (TRUSTED).

A compile node runs the candidate's build in the sandboxed builder, exactly as the GPU box
would, then packs the candidate's build directory (the objects, the `.so`, ninja's log and
files: everything that lets the candidate's own `load_inline` find its build up to date) into
one archive, named by its SHA-256. The archive travels by value; the digest travels separately,
through the process that routes the candidate, and the GPU side unpacks only an archive whose
bytes hash to that digest, of the candidate it evaluates, below a size limit, with links and
paths kept inside the candidate's build directory. An archive swapped or altered on the way is
refused, never loaded.

The build directory is at the same path on every node (`EvalConfig.build_root` / candidate
hash), so ninja's absolute paths match and the candidate's load does not build again. A node
whose paths differ still gets a correct result: the candidate then builds again where it is
measured, which costs time and nothing else.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from cudal1.evaluate.harness import BUILD_LOCK_NAME

TIMES_NAME = ".cudal1-mtimes.json"


class ArtefactRefused(Exception):
    """The archive does not match what the evaluator was told to expect."""


@dataclass(frozen=True)
class BuildReceipt:
    """What the router passes on: small, and from a trusted process (the compile node's
    evaluator, not the candidate)."""

    candidate_hash: str
    digest: str
    size: int
    compile_s: float
    node: str


def pack(build_dir: Path, max_bytes: int) -> tuple[bytes, str]:
    """The build directory as a gzip'd tar (PAX, so sub-second times survive: ninja compares
    them) and its SHA-256. A build over `max_bytes` is the candidate's to answer for."""
    ours = {build_dir / BUILD_LOCK_NAME, build_dir / TIMES_NAME}
    paths = [p for p in sorted(build_dir.rglob("*")) if p not in ours]
    total = sum(p.lstat().st_size for p in paths)
    if total > max_bytes:
        raise ArtefactRefused(f"the build left {total} bytes, over the {max_bytes} limit")
    # tar keeps times as floats, off by up to a microsecond; ninja's deps log holds each
    # object's time to the nanosecond and builds again when the object looks newer
    times = {
        str(p.relative_to(build_dir)): p.lstat().st_mtime_ns
        for p in paths
        if p.is_file() and not p.is_symlink()
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT, compresslevel=1) as tar:
        for path in paths:
            tar.add(path, arcname=str(path.relative_to(build_dir)), recursive=False)
        listing = json.dumps(times).encode()
        info = tarfile.TarInfo(TIMES_NAME)
        info.size = len(listing)
        tar.addfile(info, io.BytesIO(listing))
    blob = buf.getvalue()
    return blob, hashlib.sha256(blob).hexdigest()


def unpack(blob: bytes, receipt: BuildReceipt, build_dir: Path, max_bytes: int) -> None:
    """Replace `build_dir`'s contents with the archive, after checking it against `receipt`.
    The caller holds the build lock of `build_dir`, whose name is the candidate's hash."""
    if build_dir.name != receipt.candidate_hash:
        raise ArtefactRefused(
            f"build of candidate {receipt.candidate_hash[:12]} offered for {build_dir.name[:12]}"
        )
    if len(blob) != receipt.size or len(blob) > max_bytes:
        raise ArtefactRefused(
            f"build archive is {len(blob)} bytes (receipt {receipt.size}, limit {max_bytes})"
        )
    digest = hashlib.sha256(blob).hexdigest()
    if digest != receipt.digest:
        raise ArtefactRefused(f"build archive hashes to {digest[:12]}, not {receipt.digest[:12]}")
    clear(build_dir)
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            unpacked = sum(m.size for m in tar.getmembers())
            if unpacked > max_bytes:
                raise ArtefactRefused(
                    f"build archive unpacks to {unpacked} bytes, over {max_bytes}"
                )
            tar.extractall(build_dir, filter="data")  # no absolute paths, no links leaving it
        _restore_times(build_dir)
    except (tarfile.TarError, OSError, ValueError) as e:
        clear(build_dir)
        raise ArtefactRefused(f"build archive does not unpack: {e}") from None


def _restore_times(build_dir: Path) -> None:
    """Each file's modification time to the nanosecond, as it was on the compile node."""
    listing = build_dir / TIMES_NAME
    if not listing.is_file():
        return
    times = json.loads(listing.read_text())
    listing.unlink()
    root = build_dir.resolve()
    for name, mtime_ns in times.items():
        path = build_dir / name
        if path.is_symlink() or not path.resolve().is_relative_to(root) or not path.is_file():
            continue
        os.utime(path, ns=(int(mtime_ns), int(mtime_ns)), follow_symlinks=False)


def clear(build_dir: Path) -> None:
    """Empty a build directory whose lock the caller holds (the lock file stays)."""
    for entry in build_dir.iterdir():
        if entry.name != BUILD_LOCK_NAME:
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
