"""Paper B's bandit prompts: task instructions, output instructions, history, question.

The paper gives the structure (its experimental setup): task instructions, output instructions, the
history as lines ``Step=i Action=X Reward=r``, then "What do you predict next?"; with
CoT the model thinks briefly and answers ``ACTION=X``, without CoT it outputs only
``ACTION=X``; the knowing-doing study asks for UCB values inside ``<ucb_values>``
tags. Every sentence below is our wording **[ours]**: the paper prints none of it.

A prompt is named ``bandit-v2/<variant>/<style>`` (``prompt_name``); change the
wording only under a new ``VERSION`` so old rollouts stay attributable. v2 dropped
the step count from the history header (v1: "History (t of T steps played):"), so
that a prompt is the previous step's prompt up to its last history line and an
instance's KV cache carries over from step to step (``paperlib.backends.hf``, streams).

Two exploration mechanisms (``paperlib.bandits.exploration``) change the history part
of the same prompts: context randomisation shows its lines in another order
(``build_prompt(order=)``), context summary shows per-arm counts and means instead
(``summary_lines``); self-correction adds a second user message after the model's
answer (``revision_request``). Their wording is ours as well.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from paperlib.bandits.baselines import UCB_ALPHA
from paperlib.bandits.env import BanditSpec

VERSION = "bandit-v2"
STYLES = ("cot", "no_cot", "knowing_doing")
# Generation budgets from the paper (its experimental setup).
MAX_NEW_TOKENS = {"cot": 256, "no_cot": 16, "knowing_doing": 2048}
ACTION_PREFIX = "ACTION="  # what a scorer puts before each arm name (frequency bias)
QUESTION = "What do you predict next?"

# [ours] The variant's nouns: (singular, verb, verb in the past).
_WORDS = {"button": ("button", "press", "pressed"), "continuous": ("arm", "choose", "chosen")}


def _check_style(style: str) -> None:
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {', '.join(STYLES)}")


def prompt_name(variant: str, style: str) -> str:
    _check_style(style)
    return f"{VERSION}/{variant}/{style}"


def format_reward(reward: float, family: str) -> str:
    """Gaussian rewards to two decimals, Bernoulli rewards as 0 or 1 [ours]."""
    return f"{reward:.0f}" if family == "bernoulli" else f"{reward:.2f}"


def history_lines(spec: BanditSpec, actions: Sequence[int], rewards: Sequence[float]) -> list[str]:
    """``Step=i Action=X Reward=r`` for one instance's past, steps numbered from 1."""
    names = spec.names
    return [
        f"Step={i} Action={names[a]} Reward={format_reward(r, spec.family)}"
        for i, (a, r) in enumerate(zip(np.asarray(actions, int), rewards), start=1)
    ]


def task_instructions(spec: BanditSpec) -> str:
    # [ours], after BanditBench's button and arm descriptions
    noun, verb, _ = _WORDS[spec.variant]
    names = ", ".join(spec.names)
    dist = "Bernoulli" if spec.family == "bernoulli" else "Gaussian"
    if spec.variant == "button":
        setting = f"You are in a room with {spec.k} buttons labeled {names}."
    else:
        setting = f"You are playing a game with {spec.k} arms, numbered {names}."
    return (
        f"{setting} Each {noun} gives rewards from a {dist} distribution with a fixed but unknown "
        f"mean, and the means of different {noun}s may differ. You have {spec.horizon} steps; at each "
        f"step you {verb} one {noun} and receive a reward drawn from its distribution. Your goal is to "
        f"maximize the total reward over the {spec.horizon} steps."
    )


def output_instructions(spec: BanditSpec, style: str) -> str:
    # [ours]
    noun, verb, verbed = _WORDS[spec.variant]
    choices = f"where X is one of: {', '.join(spec.names)}"
    if style == "no_cot":
        return f"Output only ACTION=X, {choices}. Do not write anything else."
    answer = f"Then give your answer on the last line as ACTION=X, {choices}."
    if style == "cot":
        return f"Think briefly about which {noun} to {verb} next. {answer}"
    return (
        f"Before acting, write down the UCB (upper confidence bound) rule: "
        f"UCB(a) = mean(a) + sqrt({UCB_ALPHA} * ln(t) / n(a)), where mean(a) is the average reward of "
        f"{noun} a so far, n(a) is how often it was {verbed} and t is the number of steps played; a {noun} "
        f"never {verbed} has an infinite UCB value. Compute the UCB value of every {noun} and list them "
        f"inside <ucb_values></ucb_values> tags, one per line as name: value (write inf for an infinite "
        f"value). Choose the {noun} with the highest UCB value. {answer}"
    )


def summary_lines(spec: BanditSpec, actions: Sequence[int], rewards: Sequence[float]) -> list[str]:
    """Per arm, in arm order, how often it was played and its mean reward so far (context
    summary) [ours]: ``blue: pressed 2 times, mean reward 0.35``, ``green: pressed 0 times``."""
    _, _, verbed = _WORDS[spec.variant]
    actions, rewards = np.asarray(actions, int), np.asarray(rewards, float)
    lines = []
    for a, name in enumerate(spec.names):
        played = actions == a
        n = int(played.sum())
        mean = f", mean reward {rewards[played].mean():.2f}" if n else ""
        lines.append(f"{name}: {verbed} {n} time{'' if n == 1 else 's'}{mean}")
    return lines


def revision_request(spec: BanditSpec, style: str) -> str:
    """Self-correction's second user message, after the model's first answer [ours]; the
    answer format of the no-CoT prompt without CoT, of the CoT prompt otherwise."""
    _check_style(style)
    noun, verb, _ = _WORDS[spec.variant]
    return (
        f"Check your answer against the history and correct it if another {noun} is better to {verb} next. "
        + output_instructions(spec, "no_cot" if style == "no_cot" else "cot")
    )


def build_prompt(
    spec: BanditSpec,
    actions: Sequence[int],
    rewards: Sequence[float],
    style: str = "cot",
    *,
    order: Sequence[int] | None = None,
    summary: bool = False,
) -> str:
    """The user message for one instance after ``len(actions)`` steps. ``order``: the history
    lines in this order (context randomisation); ``summary``: ``summary_lines`` in their
    place (context summary)."""
    _check_style(style)
    if summary:
        noun, _, _ = _WORDS[spec.variant]
        header, lines = f"Summary of the steps played (one line per {noun}):", summary_lines(spec, actions, rewards)
    else:
        header, lines = "History (one line per step played):", history_lines(spec, actions, rewards)
        lines = lines if order is None else [lines[i] for i in order]
    past = "\n".join([header, *lines]) if len(actions) else "You have not played yet."
    return "\n\n".join([task_instructions(spec), output_instructions(spec, style), past, QUESTION])
