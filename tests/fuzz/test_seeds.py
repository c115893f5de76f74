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
    assert total < 600_000  # the seeds stay small: they are committed


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
