"""The fuzz campaign's committed seeds, each run through its target: the corpus the
campaign starts from is crash-free, and every target has seeds to start from.

The campaign itself (scripts/fuzz_campaign.py) runs outside CI; its findings are regression
tests in the mirrored test modules (tests/apis/test_*_fuzz.py, tests/http/test_h1_fuzz.py).
"""

from __future__ import annotations

import pytest

from tests.fuzz.mutate import Mutator
from tests.fuzz.seeds import SEEDS, load
from tests.fuzz.targets import TARGETS


def test_every_target_has_seeds_and_only_targets_have_seeds() -> None:
    folders = sorted(p.name for p in SEEDS.iterdir() if p.is_dir())
    assert folders == sorted(TARGETS)
    total = sum(p.stat().st_size for p in SEEDS.rglob("*") if p.is_file())
    assert total < 40_000 * len(TARGETS)  # the seeds stay small: they are committed


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seeds_run_through_their_target(name: str) -> None:
    target = TARGETS[name]
    seeds = load(name)
    assert seeds, f"no seeds for {name}: run `python scripts/fuzz_campaign.py seeds`"
    outputs = 0
    for seed in seeds:
        assert len(seed) == target.parts
        outputs += len(target.run(seed))
    assert outputs > 0, f"the seeds of {name} produce nothing: they exercise nothing"


def test_mutations_are_reproducible_from_the_seed() -> None:
    import random

    data, other = b'{"a":[1,2,{"b":"c"}]}', b"GET / HTTP/1.1\r\n\r\n"
    runs = []
    for _ in range(2):
        mutator = Mutator(random.Random("s:0"))
        runs.append([mutator.mutate(data, other) for _ in range(50)])
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 25  # and they do mutate


def test_json_mutations_stay_near_the_input_size() -> None:
    """A string repeated at each step of one mutation reached gigabytes (fuzz campaign: slices
    that spent 17 s of CPU outside the target, and orjson.dumps segfaulting out of memory)."""
    import random

    import orjson

    from tests.fuzz.mutate import MAX_GROWTH

    repeated = 0
    for i in range(300):
        mutator = Mutator(random.Random(f"grow:{i}"))
        for old in ("ab", "x" * 3000, "z" * 20_000):
            new = mutator._value(old)
            if isinstance(new, str) and len(new) > len(old):
                repeated += 1
                assert len(new) <= max(2 * len(old), len(old) + MAX_GROWTH)
    assert repeated > 50  # strings are still repeated
    data = orjson.dumps({"a": {"b": ["x" * 3000]}, "c": "y" * 10})
    for i in range(300):
        tree = Mutator(random.Random(f"tree:{i}")).json(data)
        assert tree is not None and len(tree) <= 8 * (len(data) + MAX_GROWTH)
