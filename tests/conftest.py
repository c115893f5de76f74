"""Settings every test shares.

Hypothesis runs without its per-example deadline: a deadline is a timing assertion, and the
suite asserts none (on a loaded 2-core machine a 200 ms deadline fails tests whose code is
right). Slow inputs are found by the fuzz campaign, which records the slowest input of each
target (scripts/fuzz_campaign.py).
"""

from hypothesis import settings

settings.register_profile("agentshark", deadline=None)
settings.load_profile("agentshark")
