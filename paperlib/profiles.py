"""One name selects every size knob: ``smoke``, ``cpu`` (the default) or ``paper``.

- smoke: seconds to a few minutes; what CI and the notebook tests run.
- cpu: the whole pipeline on the embedded models on a laptop-class CPU, with the
  papers' episode counts wherever the time allows.
- paper: the papers' models and sizes, on GPUs and API gateways.

Each notebook reads its knobs from here and nowhere else; a knob that differs
from the paper says so in a comment.
"""

from __future__ import annotations

from dataclasses import dataclass

SCRIPTED_POLICIES = ("no_action", "always_think", "random", "left_first", "resource_hierarchy", "waiter")


@dataclass(frozen=True)
class Profile:
    name: str
    # -- paper A, notebook 01: the environment and the reward on scripted policies
    env_policies: tuple[str, ...] = SCRIPTED_POLICIES
    env_ns: tuple[int, ...] = (5, 10, 15)
    env_episodes: int = 30
    # Evaluation rounds per episode: the paper states R = 5 for training only [ours].
    rounds: int = 5
    mode: str = "simultaneous"


PROFILES = {
    "smoke": Profile(name="smoke", env_ns=(5,), env_episodes=4),
    "cpu": Profile(name="cpu"),
    "paper": Profile(name="paper"),
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}") from None
