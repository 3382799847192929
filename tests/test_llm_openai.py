"""The LLM philosopher over the openai backend, against a loopback OpenAI-compatible server:
the same code path (HTTP, native tool calls, retries) a real endpoint takes."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import FakeOpenAIServer

from paperlib.data import RolloutStore
from paperlib.philosophers.env import TOOLS
from paperlib.philosophers.episode import run_episodes
from paperlib.philosophers.evaluate import evaluate
from paperlib.philosophers.llm import make_llm_policy
from paperlib.philosophers.prompts import TOOL_SCHEMAS


@pytest.fixture
def server(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PAPERLIB_MODEL_GPT_5_4"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAIServer() as fake:
        monkeypatch.setenv("PAPERLIB_OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("PAPERLIB_OPENAI_API_KEY", "sk-test-key")
        yield fake


def observation(body) -> tuple[int, bool, bool]:
    """(philosopher, holds left, holds right) from the user message the agent sent."""
    text = body["messages"][-1]["content"]
    philosopher = int(text.split("You are philosopher ")[1].split(".")[0])
    return philosopher, "left fork is in your hand" in text, "right fork is in your hand" in text


def left_first(body) -> dict:
    """A server-side scripted model: left fork, right fork, eat; answers with native tool calls."""
    _, left, right = observation(body)
    name = "eat" if left and right else ("pick_up_right" if left else "pick_up_left")
    return {"content": None, "tool_calls": [{"name": name, "arguments": {}}]}


def policy(**options):
    return make_llm_policy("gpt-5.4", backend="openai", backend_options=options.pop("backend_options", {}), **options)


def test_native_tool_calls_drive_the_episode(server):
    server.respond = left_first
    episodes, steps = run_episodes(policy(temperature=0.0), n=3, rounds=3, seeds=[0])
    body = server.requests[0]
    assert body["model"] == "gpt-5.4" and body["stop"] == ["</tool_call>"] and body["temperature"] == 0.0
    assert [t["function"]["name"] for t in body["tools"]] == list(TOOLS) and body["tools"] == TOOL_SCHEMAS
    assert "Tools:" not in body["messages"][0]["content"]  # native tools: no plain-text listing
    assert len(server.requests) == 3  # one request per philosopher; the deadlock ends the episode after round 1
    # everyone takes their left fork in round 1: the classic deadlock
    assert steps.loc[steps["turn"] == 1, "action"].eq("pick_up_left").all()
    assert episodes["deadlock"].iloc[0] and episodes["deadlock_round"].iloc[0] == 1
    assert steps["raw_completion"].iloc[0] == '<tool_call>{"name": "pick_up_left", "arguments": {}}</tool_call>'
    assert (steps["finish_reason"] == "tool_calls").all() and (steps["completion_ids"].map(len) == 0).all()
    assert steps["prompt_tokens"].gt(0).all()


def test_a_timeout_and_a_500_reach_the_step_rows_as_no_action(server):
    def respond(body):
        philosopher, _, _ = observation(body)
        return [{"delay": 1.0}, {"status": 500}, {"tool_calls": [{"name": "think", "arguments": {}}]}][philosopher]

    server.respond = respond
    agent = policy(backend_options={"timeout": 0.2, "max_retries": 1, "backoff": 0.01})
    episodes, steps = run_episodes(agent, n=3, rounds=1, seeds=[0])
    rows = steps.set_index("seat")
    assert rows.loc[0, ["action", "finish_reason", "raw_completion"]].tolist() == ["none", "error:timeout", ""]
    assert rows.loc[1, ["action", "finish_reason", "raw_completion"]].tolist() == ["none", "error:http_500", ""]
    assert rows.loc[2, "action"] == "think"
    assert episodes[["no_actions", "actions_total", "think_actions"]].iloc[0].tolist() == [2, 1, 1]
    assert len(server.requests) == 2 + 2 + 1  # each failure retried once


def test_evaluate_over_http_resumes_from_the_store(server, tmp_path):
    server.respond = left_first
    store = RolloutStore(tmp_path / "run")
    evaluate("gpt-5.4", [3], 2, rounds=2, store=store, progress=False, backend="openai")
    sent = len(server.requests)
    episodes, steps = evaluate("gpt-5.4", [3], 2, rounds=2, store=store, progress=False, backend="openai")
    assert len(server.requests) == sent and len(episodes) == 2  # nothing redone
    assert (episodes["backend"] == "openai").all() and (episodes["decision"] == "free").all()
    assert set(json.loads(json.dumps(steps["prompt_version"].unique().tolist()))) == {"options-v1"}


def test_constrained_over_http_is_refused_in_one_line(server):
    with pytest.raises(ValueError, match="cannot") as error:
        policy(decision="constrained")
    assert "\n" not in str(error.value)
    assert not server.requests
