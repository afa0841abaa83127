"""Moving files through the device tool's limits: a file split into parts is joined byte for
byte, a wrong or missing part is named, and a learning-curve arm's state packs and unpacks."""

from __future__ import annotations

import os

from tests.scripts import script


def test_parts_join_to_the_file_split_or_name_the_bad_part(tmp_path):
    source = tmp_path / "blob.bin"
    source.write_bytes(os.urandom((5 << 20) // 2))  # 2.5 MiB: three parts of 1 MiB
    parts = tmp_path / "parts"
    done = script(
        "parts.py", "split", "--file", str(source), "--out", str(parts), "--part-mib", "1"
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in parts.iterdir()) == [
        "blob.bin.manifest.json", "blob.bin.part-0", "blob.bin.part-1", "blob.bin.part-2",
    ]  # fmt: skip
    joined = tmp_path / "joined.bin"
    done = script("parts.py", "join", "--parts", str(parts), "--to", str(joined))
    assert done.returncode == 0 and joined.read_bytes() == source.read_bytes()

    middle = parts / "blob.bin.part-1"
    middle.write_bytes(middle.read_bytes()[:-1] + b"\0")
    again = tmp_path / "again.bin"
    done = script("parts.py", "join", "--parts", str(parts), "--to", str(again))
    assert done.returncode == 1 and "part 1 of blob.bin" in done.stderr
    assert "not the one split" in done.stderr and not again.exists()
    middle.unlink()
    done = script("parts.py", "join", "--parts", str(parts), "--to", str(again))
    assert done.returncode == 1 and "part 1 of blob.bin is missing" in done.stderr


def test_an_arm_state_packs_and_unpacks_without_its_final_model(tmp_path):
    arm = tmp_path / "state" / "plain"
    checkpoint = arm / "run" / "checkpoints" / "checkpoint-25"
    checkpoint.mkdir(parents=True)
    (checkpoint / "optimizer.pt").write_bytes(os.urandom(3 << 20))
    (checkpoint / "adapter_model.safetensors").write_bytes(os.urandom(1 << 20))
    (checkpoint / "tokenizer.json").write_text("{}")  # the model's: resuming reads that one
    (arm / "run" / "final").mkdir()
    (arm / "run" / "final" / "adapter_model.safetensors").write_bytes(b"x" * 100)
    (arm / "metrics.jsonl").write_text('{"step": 25}\n')
    (arm / "run" / "models" / "tiny").mkdir(parents=True)  # a model in the run keeps its own
    (arm / "run" / "models" / "tiny" / "tokenizer.json").write_text('{"model": 1}')
    out = tmp_path / "out"
    common = ["--arm", "plain", "--no-run"]
    done = script(
        "learning_curve.py", "--state", str(tmp_path / "state"), *common, "--pack", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert all(p.stat().st_size <= 16 << 20 for p in out.iterdir())

    fresh = tmp_path / "fresh"
    done = script("learning_curve.py", "--state", str(fresh), *common, "--unpack", str(out))
    assert done.returncode == 0, done.stderr
    assert "plain: state unpacked at step 25" in done.stdout
    for path in arm.rglob("*"):
        copy = fresh / "plain" / path.relative_to(arm)
        if "final" in path.parts or path == checkpoint / "tokenizer.json":
            assert not copy.exists()
        elif path.is_file():
            assert copy.read_bytes() == path.read_bytes()

    (fresh / "plain" / "metrics.jsonl").write_text('{"step": 26}\n')  # a warm machine's own
    done = script("learning_curve.py", "--state", str(fresh), *common, "--unpack", str(out))
    assert done.returncode == 0 and "the packed one is left" in done.stdout
    assert (fresh / "plain" / "metrics.jsonl").read_text() == '{"step": 26}\n'

    part = next(out.glob("*.part-0"))
    part.write_bytes(b"not the archive")
    done = script(
        "learning_curve.py", "--state", str(tmp_path / "x"), *common, "--unpack", str(out)
    )
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "not the one split" in done.stderr and not (tmp_path / "x").exists()
