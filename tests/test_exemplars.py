import math
import multiprocessing as mp
import random

import pytest

from cudal1.exemplars import BucketSampler, ExemplarDB, IslandSampler, UniformSampler
from cudal1.tasks import load_suite

from .conftest import result_for

TASK = load_suite("bundled", validate=False).get("L1_20")


def _result(speedup, status="ok"):
    return result_for(TASK, speedup, status)


def _db(tmp_path, speedups):
    db = ExemplarDB(tmp_path / "ex.db")
    db.ensure_reference(TASK)
    for i, s in enumerate(speedups):
        db.add(TASK, f"# candidate {i}\nclass ModelNew: pass\n", _result(s), source="test")
    return db


def test_reference_first_and_dedup(tmp_path):
    db = _db(tmp_path, [1.5, 2.0])
    ex = db.exemplars(TASK.id)
    assert ex[0].is_reference and ex[0].speedup == 1.0
    again = db.add(TASK, "# candidate 0\nclass ModelNew: pass\n", _result(9.0))
    assert again.id == ex[1].id and again.speedup == 1.5  # known code keeps its first row
    assert db.count(TASK.id) == 3
    db.add(TASK, "broken", None)
    assert len(db.exemplars(TASK.id, correct_only=True)) == 3
    assert db.best(TASK.id).speedup == 2.0


def test_a_correct_but_unmeasured_candidate_is_no_exemplar(tmp_path):
    """Its timing disturbed by other work, it has no speedup to show the model or rank by."""
    db = _db(tmp_path, [1.5])
    row = db.add(TASK, "# disturbed\nclass ModelNew: pass\n", _result(None))
    assert row.status == "ok" and row.speedup is None
    assert [e.speedup for e in db.exemplars(TASK.id, correct_only=True)] == [1.0, 1.5]
    assert db.count(TASK.id) == 3


def test_export_import_roundtrip(tmp_path):
    db = _db(tmp_path, [1.1, 1.3])
    n = db.export_jsonl(tmp_path / "out.jsonl")
    other = ExemplarDB(tmp_path / "other.db")
    assert other.import_jsonl(tmp_path / "out.jsonl") == n == 3
    assert [e.speedup for e in other.exemplars(TASK.id)] == [1.0, 1.1, 1.3]
    assert other.import_jsonl(tmp_path / "out.jsonl") == 0


def _writer(path, k):
    db = ExemplarDB(path)
    for i in range(25):
        db.add(TASK, f"# w{k} c{i}\nclass ModelNew: pass\n", _result(1.0 + i / 100))


def test_concurrent_writers(tmp_path):
    path = tmp_path / "shared.db"
    ExemplarDB(path).ensure_reference(TASK)
    procs = [mp.get_context("spawn").Process(target=_writer, args=(path, k)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert ExemplarDB(path).count(TASK.id) == 1 + 4 * 25


def test_bucket_choice_frequencies_follow_the_softmax(tmp_path):
    db = _db(tmp_path, [1.0, 1.25, 1.5, 1.75, 2.0, 2.0001])
    candidates = db.exemplars(TASK.id, correct_only=True)
    sampler = BucketSampler(n=1, tau=0.5, buckets=5)
    bins = sampler.bins(candidates)
    probs = sampler.bucket_probabilities(bins)
    means = [sum(e.speedup for e in b) / len(b) for b in bins]
    centre = sum(means) / len(means)
    expected = [math.exp((m - centre) / 0.5) for m in means]
    assert probs == pytest.approx([w / sum(expected) for w in expected])
    rng = random.Random(0)
    counts = [0] * len(bins)
    trials = 20000
    for _ in range(trials):
        (e,) = sampler.sample(candidates, rng)
        counts[next(i for i, b in enumerate(bins) if e in b)] += 1
    for c, p in zip(counts, probs, strict=True):
        assert abs(c / trials - p) < 0.015


def test_bucket_sampler_distinct_buckets_deterministic_and_sorted(tmp_path):
    db = _db(tmp_path, [1.1, 1.2, 2.5, 2.6, 4.0])
    candidates = db.exemplars(TASK.id, correct_only=True)
    sampler = BucketSampler(n=2, tau=1.0)
    a = [e.id for e in sampler.sample(candidates, random.Random(7))]
    b = [e.id for e in sampler.sample(candidates, random.Random(7))]
    assert a == b
    for seed in range(50):
        picked = sampler.sample(candidates, random.Random(seed))
        bins = sampler.bins(candidates)
        where = {next(i for i, bn in enumerate(bins) if e in bn) for e in picked}
        assert len(where) == 2  # two distinct buckets
        assert picked[0].speedup <= picked[1].speedup  # slowest first


def test_fewer_candidates_than_n(tmp_path):
    db = _db(tmp_path, [])
    only_ref = db.exemplars(TASK.id, correct_only=True)
    for sampler in (BucketSampler(n=2), UniformSampler(n=2), IslandSampler(n=2)):
        picked = sampler.sample(only_ref, random.Random(0))
        assert [e.is_reference for e in picked] == [True]


def test_uniform_sampler_ignores_incorrect(tmp_path):
    db = _db(tmp_path, [1.5])
    db.add(TASK, "bad\nclass ModelNew: pass\n", _result(None, "incorrect"))
    picked = UniformSampler(n=5).sample(db.exemplars(TASK.id), random.Random(0))
    assert len(picked) == 2 and all(e.correct for e in picked)


def test_island_sampler_assigns_and_resets(tmp_path):
    db = _db(tmp_path, [1.1, 1.2, 1.3, 1.4, 3.0, 3.1, 0.9, 0.8])
    sampler = IslandSampler(n=2, islands=4, reset_every=3)
    rng = random.Random(0)
    cands = db.exemplars(TASK.id, correct_only=True)
    sampler.assign(db, cands, rng)
    cands = db.exemplars(TASK.id, correct_only=True)
    assert all(e.island is not None for e in cands)
    for _ in range(3):
        picked = sampler.sample(cands, rng)
        islands = {e.island for e in picked} - {-1}
        assert len(islands) <= 1  # one island per prompt
    assert sampler.maybe_reset(db, cands, rng)
