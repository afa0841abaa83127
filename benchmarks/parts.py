"""Move a file larger than a device call allows, in parts. A call carries at most 64 MiB of
working tree to the H200 (the repository is about 8 MB of it, and 11 MB more with the learning
curve's two trained arms' committed states) and brings back at most 8 files of 16 MiB each: the
embedded model's GGUF file (98 MB) goes there in three parts (38, 38 and 18 MiB) carried by
consecutive calls to a machine kept warm, the last beside TRL's wheels (3 MB), and a
learning-curve arm's state comes back in 15 MiB parts (one, since its adapter is on q and v
only: 5.4 MB).

`split` writes NAME.part-0, NAME.part-1, ... and NAME.manifest.json (SHA-256 digests of each
part and of the whole) into one folder, flat, so each part can be carried or fetched on its own;
`join` puts the file together and checks every digest, or says which part is missing or wrong.

    python3 benchmarks/parts.py split --out .model                    # the embedded model, here
    python3 benchmarks/parts.py join --parts .model --to /tmp/smollm2.gguf   # there

The file is the original, byte for byte: nothing is re-encoded.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

CARRY_PART_MIB = 38
"""Parts going to the device: one, with the repository, under a call's 64 MiB; the last, with
the wheels too."""
FETCH_PART_MIB = 15
"""Parts coming back: under the 16 MiB a file that comes back may have."""


class PartsError(Exception):
    """A part is missing or not the one split (the message says which)."""


def split(source: Path, out: Path, part_mib: int = CARRY_PART_MIB) -> list[Path]:
    """`source` in parts of at most `part_mib` MiB under `out`, with their manifest."""
    data = source.read_bytes()
    size = part_mib << 20
    chunks = [data[i : i + size] for i in range(0, len(data), size)] or [b""]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i, chunk in enumerate(chunks):
        path = out / f"{source.name}.part-{i}"
        path.write_bytes(chunk)
        written.append(path)
    manifest = {
        "name": source.name,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "parts": [hashlib.sha256(c).hexdigest() for c in chunks],
    }
    (out / f"{source.name}.manifest.json").write_text(json.dumps(manifest))
    return written


def manifests(parts: Path) -> list[Path]:
    return sorted(parts.glob("*.manifest.json"))


def join(manifest_path: Path, to: Path) -> Path:
    """The file the manifest describes, from the parts beside it, written to `to`."""
    manifest = json.loads(manifest_path.read_text())
    folder = manifest_path.parent
    chunks = []
    for i, digest in enumerate(manifest["parts"]):
        part = folder / f"{manifest['name']}.part-{i}"
        if not part.is_file():
            raise PartsError(f"part {i} of {manifest['name']} is missing under {folder}: carry it")
        chunk = part.read_bytes()
        if hashlib.sha256(chunk).hexdigest() != digest:
            raise PartsError(
                f"part {i} of {manifest['name']} under {folder} is not the one split: carry it again"
            )
        chunks.append(chunk)
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        raise PartsError(f"the parts of {manifest['name']} do not make the file split")
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_bytes(data)
    return to


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("split")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--file", type=Path, default=None, help="Default: the embedded model's GGUF.")
    s.add_argument("--part-mib", type=int, default=CARRY_PART_MIB)
    j = sub.add_parser("join")
    j.add_argument("--parts", type=Path, required=True)
    j.add_argument("--to", type=Path, required=True)
    args = parser.parse_args()
    if args.cmd == "join":
        found = manifests(args.parts)
        if len(found) != 1:
            why = f"{args.parts} holds {len(found)} manifests, not one: carry one file's parts"
            print(why, file=sys.stderr)
            return 1
        try:
            to = join(found[0], args.to)
        except PartsError as e:
            print(e, file=sys.stderr)
            return 1
        print(f"{to}: {to.stat().st_size} bytes, every part checked")
        return 0
    source = args.file
    if source is None:
        from cudal1.policy.clients import resolve_local_model

        directory, gguf = resolve_local_model(None)
        source = Path(directory) / str(gguf)
    written = split(source, args.out, args.part_mib)
    print(f"{source.name}: {source.stat().st_size} bytes in {len(written)} parts under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
