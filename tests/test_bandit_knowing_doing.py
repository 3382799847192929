"""The knowing-doing matrix validated on a scripted agent whose rationales and actions are known."""

import numpy as np
import pytest

from paperlib.bandits.env import BanditSpec
from paperlib.bandits.metrics import classify_action, knowing_doing, knowing_doing_matrix, ucb_values
from paperlib.bandits.runner import run_bandit
from paperlib.bandits.scripted import ScriptedKnowingDoingAgent


@pytest.fixture(scope="module")
def scripted_steps():
    spec = BanditSpec(5, horizon=30)
    _, steps = run_bandit(ScriptedKnowingDoingAgent(p_correct=0.7, mix=(0.3, 0.5, 0.2)), spec, 12, seed=3)
    return spec, steps


def test_the_matrix_of_the_texts_is_the_matrix_of_the_intentions(scripted_steps):
    spec, steps = scripted_steps
    computed = knowing_doing_matrix(knowing_doing(steps, spec.names))
    intended = knowing_doing_matrix(
        steps.assign(rationale_correct=steps["intended_rationale"] == "correct", action_class=steps["intended_class"])
    )
    np.testing.assert_allclose(computed.to_numpy(), intended.to_numpy(), atol=1e-9)
    assert computed.to_numpy().sum() == pytest.approx(100.0)
    # every cell the paper reports is exercised, so no cell is right by being empty
    assert (computed.to_numpy() > 0).all(), computed


def test_each_intention_is_what_the_judge_finds_step_by_step(scripted_steps):
    spec, steps = scripted_steps
    judged = knowing_doing(steps, spec.names)
    assert (judged["action_class"] == judged["intended_class"]).all()
    assert (judged["rationale_correct"] == (judged["intended_rationale"] == "correct")).all()
    # and the judge itself against ucb_values directly, on the first instance
    rows = judged[judged["episode"] == 0]
    counts, sums = np.zeros(5), np.zeros(5)
    for t, (action, reward, cls) in enumerate(zip(rows["action"], rows["reward"], rows["action_class"])):
        means = np.divide(sums, counts, out=np.zeros(5), where=counts > 0)
        values = ucb_values(counts, means, t)
        assert (cls == "optimal") == (values[action] == values.max())
        assert cls == classify_action(counts, means, action, t)
        counts[action] += 1
        sums[action] += reward


def test_bad_scripted_settings_fail():
    with pytest.raises(ValueError, match="p_correct"):
        ScriptedKnowingDoingAgent(p_correct=1.5)
