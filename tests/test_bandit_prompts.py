"""The verbal layer: prompt structure, history lines, budgets and names."""

import pytest

from paperlib.bandits.env import BanditSpec
from paperlib.bandits.prompts import MAX_NEW_TOKENS, QUESTION, build_prompt, history_lines, prompt_name


def test_prompt_is_instructions_then_history_then_the_question():
    spec = BanditSpec(5)
    prompt = build_prompt(spec, [0, 2], [0.531, -0.1], "cot")
    parts = prompt.split("\n\n")
    assert parts[0].startswith("You are in a room with 5 buttons labeled blue, green, red, yellow, orange.")
    assert "ACTION=X" in parts[1] and "Think briefly" in parts[1]
    assert parts[2].splitlines()[1:] == ["Step=1 Action=blue Reward=0.53", "Step=2 Action=red Reward=-0.10"]
    assert parts[-1] == QUESTION == "What do you predict next?"


def test_styles_and_variants():
    button, continuous = BanditSpec(3), BanditSpec(3, variant="continuous", family="bernoulli")
    assert "Output only ACTION=X" in build_prompt(button, [], [], "no_cot")
    assert "Think briefly" not in build_prompt(button, [], [], "no_cot")
    kd = build_prompt(button, [1], [0.4], "knowing_doing")
    assert "<ucb_values></ucb_values>" in kd and "sqrt(0.5 * ln(t) / n(a))" in kd and "infinite" in kd
    text = build_prompt(continuous, [2], [1.0], "cot")
    assert "3 arms, numbered 0, 1, 2" in text and "Bernoulli" in text and "Step=1 Action=2 Reward=1" in text
    assert "You have not played yet." in build_prompt(button, [], [], "cot")
    with pytest.raises(ValueError, match="unknown prompt style"):
        build_prompt(button, [], [], "react")


def test_history_lines_name_every_arm_by_its_label():
    spec = BanditSpec(20)
    assert history_lines(spec, [19, 10], [0.0, 1.0]) == [
        "Step=1 Action=violet Reward=0.00",
        "Step=2 Action=gray Reward=1.00",
    ]


def test_budgets_and_names():
    assert MAX_NEW_TOKENS == {"cot": 256, "no_cot": 16, "knowing_doing": 2048}
    assert prompt_name("button", "cot") == "bandit-v2/button/cot"


def test_a_prompt_extends_the_previous_one_up_to_its_last_history_line():
    # what lets an instance's KV cache carry over from one step to the next
    spec = BanditSpec(5)
    before, after = build_prompt(spec, [0, 2], [0.5, 0.1]), build_prompt(spec, [0, 2, 1], [0.5, 0.1, 0.7])
    kept = before[: before.index("Step=2 Action=red Reward=0.10") + len("Step=2 Action=red Reward=0.10")]
    assert after.startswith(kept + "\nStep=3 Action=green Reward=0.70")
