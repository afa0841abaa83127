"""Carry the embedded model's GGUF file (98 MB) to the H200 in parts: one device call carries at
most 64 MiB, and a machine kept warm between calls keeps what earlier calls left in ignored
folders. `split` writes each part into its own folder (`.model/part-0`, `.model/part-1`, ...)
with a manifest of SHA-256 digests, here; each call carries one part folder; `join`, there,
puts the file together and checks every digest, or says which part is missing or wrong.

    python3 benchmarks/model_parts.py split --out .model            # here; .model is ignored
    python3 benchmarks/model_parts.py join --parts .model --to /tmp/smollm2.gguf   # there

The file is the package's, byte for byte: nothing is re-encoded.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

PART_BYTES = 47 << 20
"""Two parts for the 98 MB file, each with the repository (about 14 MB) under a call's 64 MiB."""


def split(out: Path, source: Path) -> int:
    data = source.read_bytes()
    parts = [data[i : i + PART_BYTES] for i in range(0, len(data), PART_BYTES)]
    manifest = {
        "name": source.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "parts": [hashlib.sha256(p).hexdigest() for p in parts],
    }
    for i, part in enumerate(parts):
        folder = out / f"part-{i}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "data").write_bytes(part)
        (folder / "manifest.json").write_text(json.dumps(manifest))
    print(f"{source.name}: {len(data)} bytes in {len(parts)} parts under {out}")
    return 0


def join(parts_dir: Path, to: Path) -> int:
    manifests = sorted(parts_dir.glob("part-*/manifest.json"))
    if not manifests:
        print(f"no parts under {parts_dir}: carry the part folders first", file=sys.stderr)
        return 1
    manifest = json.loads(manifests[0].read_text())
    chunks = []
    for i, digest in enumerate(manifest["parts"]):
        part = parts_dir / f"part-{i}" / "data"
        if not part.is_file():
            print(f"part {i} is missing under {parts_dir}: carry it", file=sys.stderr)
            return 1
        chunk = part.read_bytes()
        if hashlib.sha256(chunk).hexdigest() != digest:
            print(
                f"part {i} under {parts_dir} is not the one split: carry it again", file=sys.stderr
            )
            return 1
        chunks.append(chunk)
    data = b"".join(chunks)
    assert hashlib.sha256(data).hexdigest() == manifest["sha256"]
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_bytes(data)
    print(f"{to}: {len(data)} bytes, sha256 {manifest['sha256'][:16]}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--gguf", type=Path, default=None, help="Default: the embedded model's.")
    j = sub.add_parser("join")
    j.add_argument("--parts", type=Path, required=True)
    j.add_argument("--to", type=Path, required=True)
    args = parser.parse_args()
    if args.cmd == "join":
        return join(args.parts, args.to)
    source = args.gguf
    if source is None:
        from cudal1.policy.clients import resolve_local_model

        directory, gguf = resolve_local_model(None)
        source = Path(directory) / str(gguf)
    return split(args.out, source)


if __name__ == "__main__":
    sys.exit(main())
