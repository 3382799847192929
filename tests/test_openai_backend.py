"""OpenAIBackend against a scripted local server, through the same HTTP path a real endpoint takes."""

from __future__ import annotations

import logging
import socket
import sys
import time

import pytest
from fake_openai_server import FakeOpenAIServer

from paperlib.backends.openai_backend import EndpointError, OpenAIBackend

KEY = "sk-test-SECRET-0123456789"
TOOLS = [{"name": "eat", "description": "Eat.", "parameters": {"type": "object", "properties": {}}}]


@pytest.fixture
def server(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAIServer() as fake:
        monkeypatch.setenv("PAPERLIB_OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("PAPERLIB_OPENAI_API_KEY", KEY)
        yield fake


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_request_carries_the_settings_and_content_comes_back(server):
    backend = OpenAIBackend("fake-model")
    [completion] = backend.chat(
        [user("you hold no fork")], tools=TOOLS, max_new_tokens=7, temperature=0.5, seed=3, stop=["\n"]
    )
    assert completion.text == "you hold no fork"
    assert (completion.finish_reason, completion.prompt_tokens) == ("stop", 4)
    [body] = server.requests
    assert body["model"] == "fake-model"
    assert (body["max_tokens"], body["temperature"], body["seed"], body["stop"]) == (7, 0.5, 3, ["\n"])
    assert body["tools"] == [{"type": "function", "function": TOOLS[0]}]
    assert server.authorizations == [f"Bearer {KEY}"]


def test_tool_calls_come_back_serialised_in_the_text(server):
    calls = [{"name": "eat", "arguments": {"fork": "left"}}, {"name": "think", "arguments": "{not json"}]
    server.script({"content": "I am hungry.", "tool_calls": calls})
    [completion] = OpenAIBackend("m").chat([user("act")], tools=TOOLS)
    assert completion.text == (
        'I am hungry.\n<tool_call>{"name": "eat", "arguments": {"fork": "left"}}</tool_call>\n'
        '<tool_call>{"name": "think", "arguments": "{not json"}</tool_call>'
    )
    assert completion.finish_reason == "tool_calls"


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_errors_are_retried_until_success(server, status, caplog):
    server.script({"status": status}, {"status": status}, {"content": "ok"})
    [completion] = OpenAIBackend("m", max_retries=2, backoff=0.01).chat([user("go")])
    assert completion.text == "ok"
    assert len(server.requests) == 3
    ours = [r.levelno for r in caplog.records if r.name == "paperlib.backends.openai_backend"]
    assert ours == [logging.WARNING] * 2


def test_exhausted_retries_end_as_a_recorded_error(server):
    server.script({"status": 500})
    completions = OpenAIBackend("m", max_retries=1, backoff=0.01).chat([user("go")])
    assert [(c.text, c.finish_reason) for c in completions] == [("", "error:http_500")]
    assert len(server.requests) == 2


def test_other_client_errors_are_recorded_without_retry(server):
    server.script({"status": 400})
    [completion] = OpenAIBackend("m", max_retries=3, backoff=0.01).chat([user("go")])
    assert completion.finish_reason == "error:http_400"
    assert len(server.requests) == 1


def test_timeout_ends_as_a_recorded_error_after_the_retries(server):
    server.script({"delay": 1.5})
    started = time.monotonic()
    [completion] = OpenAIBackend("m", timeout=0.2, max_retries=2, backoff=0.01).chat([user("go")])
    assert (completion.text, completion.finish_reason) == ("", "error:timeout")
    assert len(server.requests) == 3
    assert time.monotonic() - started < 1.5


def test_connection_error_is_recorded(monkeypatch):
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("PAPERLIB_OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    [completion] = OpenAIBackend("m", max_retries=1, backoff=0.01).chat([user("go")])
    assert completion.finish_reason == "error:connection"


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_raises_one_line(server, status):
    server.script({"status": status})
    with pytest.raises(EndpointError) as error:
        OpenAIBackend("m").chat([user("go")] * 3)
    message = str(error.value)
    assert "\n" not in message and f"HTTP {status}" in message and "PAPERLIB_OPENAI_API_KEY" in message
    assert KEY not in message


def test_unknown_model_raises_one_line_without_retry(server):
    server.script({"status": 404})
    with pytest.raises(EndpointError) as error:
        OpenAIBackend("no-such-model", max_retries=3, backoff=0.01).chat([user("go")])
    message = str(error.value)
    assert "\n" not in message and "404" in message and "'no-such-model'" in message
    assert len(server.requests) == 1


def test_concurrency_is_bounded_and_order_kept(server):
    n = 24

    # Earlier conversations answer later, so arrival order differs from input order.
    def respond(body):
        i = int(body["messages"][-1]["content"])
        return {"content": f"re {i}", "delay": 0.005 * (n - i)}

    server.respond = respond
    completions = OpenAIBackend("m", concurrency=4).chat([user(str(i)) for i in range(n)], seed=10)
    assert [c.text for c in completions] == [f"re {i}" for i in range(n)]
    assert server.max_active == 4
    seeds = sorted((int(body["messages"][-1]["content"]), body["seed"]) for body in server.requests)
    assert seeds == [(i, 10 + i) for i in range(n)]


def test_key_never_shows_in_repr_str_or_logs(server, caplog):
    caplog.set_level(logging.DEBUG)  # the openai client's and httpx's debug logs too
    server.script({"status": 500}, {"content": "ok"}, {"status": 401})
    backend = OpenAIBackend("m", max_retries=1, backoff=0.01)
    assert backend.chat([user("go")])[0].text == "ok"
    with pytest.raises(EndpointError) as error:
        backend.chat([user("go")])
    assert any(r.levelno == logging.WARNING for r in caplog.records)
    for text in (repr(backend), str(backend), caplog.text, str(error.value)):
        assert KEY not in text


@pytest.mark.parametrize("prefix", ["PAPERLIB_", ""])
def test_missing_base_url_is_one_line_naming_the_variable(monkeypatch, prefix):
    for name in ("PAPERLIB_OPENAI_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(f"{prefix}OPENAI_API_KEY", KEY)
    with pytest.raises(EndpointError, match="PAPERLIB_OPENAI_BASE_URL") as error:
        OpenAIBackend("m")
    assert "\n" not in str(error.value)


def test_falls_back_to_the_standard_openai_variables(server, monkeypatch):
    for name in ("PAPERLIB_OPENAI_BASE_URL", "PAPERLIB_OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    assert OpenAIBackend("m").chat([user("hi")])[0].text == "hi"
    assert server.authorizations == ["Bearer sk-other"]


def test_vllm_backend_without_vllm_says_how_to_install(monkeypatch):
    from paperlib.backends.vllm_backend import VLLMBackend

    monkeypatch.setitem(sys.modules, "vllm", None)  # as if not installed, wherever this runs
    with pytest.raises(ImportError) as error:
        VLLMBackend("Qwen/Qwen3-8B")
    assert str(error.value) == "the vllm backend needs the vllm package on a CUDA machine: pip install vllm"


def test_make_backend_passes_the_tensor_parallel_size_to_the_vllm_engine(monkeypatch):
    from types import SimpleNamespace

    from paperlib.backends import make_backend
    from paperlib.models import resolve

    engines = []

    class Tokenizer:
        def apply_chat_template(self, conversation, tools=None, tokenize=False, add_generation_prompt=True):
            return "".join(m["content"] for m in conversation)

    def llm(**kwargs):
        engines.append(kwargs)
        return SimpleNamespace(get_tokenizer=Tokenizer)

    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(LLM=llm))  # the engine's arguments, without a GPU
    make_backend("vllm", "gemma2-27b", tensor_parallel_size=2, max_model_len=4096)
    make_backend("vllm", "gemma2-2b")
    source = resolve("gemma2-27b").source
    assert engines == [
        {"model": source, "tensor_parallel_size": 2, "max_model_len": 4096},
        {"model": resolve("gemma2-2b").source, "tensor_parallel_size": 1},
    ]


def test_the_paper_profile_splits_the_27b_over_two_gpus_and_nothing_else():
    from paperlib.profiles import get_profile

    paper = get_profile("paper")
    assert paper.backend_options("vllm", "gemma2-27b") == {"tensor_parallel_size": 2}
    assert paper.backend_options("vllm", "gemma2-9b") == {} and paper.backend_options("hf", "gemma2-27b") == {}
