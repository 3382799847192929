"""Chat completions from any OpenAI-compatible endpoint: a vLLM server, a gateway to frontier models.

The endpoint is configured only by environment variables, so that a key never enters
a notebook parameter, an output cell or a log:

- ``PAPERLIB_OPENAI_BASE_URL`` (else ``OPENAI_BASE_URL``), e.g. ``http://localhost:8000/v1``;
- ``PAPERLIB_OPENAI_API_KEY`` (else ``OPENAI_API_KEY``); a keyless vLLM server needs none.

Requests go through the official ``openai`` client with its own retries switched off
(``max_retries=0``): it owns the wire format and the error types, and this module owns
the one retry policy, so a request is never retried twice over.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import openai

from paperlib.backends.base import CAPABILITIES, Completion, Conversation

log = logging.getLogger(__name__)

# Timeouts and connection errors (APITimeoutError is an APIConnectionError), 429, 5xx.
_RETRYABLE = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)
_MAX_DELAY_S = 60.0


class EndpointError(ValueError):
    """A problem every request would hit (no base URL, a refused key), said in one line."""


class OpenAIBackend:
    """``Backend.chat`` over HTTP, with bounded concurrency, a timeout and retries.

    Native tool calls reach the caller inside ``Completion.text``, so that one text
    parser serves every backend: the message content, then one line per call,
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, the arguments parsed
    from the JSON string the endpoint sends (kept as that raw string when it does
    not parse).

    Up to ``concurrency`` requests are in flight at once; results come back in the
    order of the conversations. Conversation ``i`` is sent ``seed + i``, so that
    repeated conversations in one batch draw different samples and the batch is
    reproducible. Timeouts, connection errors, 429 and 5xx are retried up to
    ``max_retries`` times with exponential back-off (``backoff`` seconds, doubling,
    jittered); other 4xx are not. A request that still fails returns an empty
    completion with ``finish_reason="error:<reason>"`` (``timeout``, ``connection``,
    ``http_<status>``), so a long evaluation goes on and records the failure. A refused
    key (401, 403) or an unknown model or path (404) raises ``EndpointError``, since
    every request would fail.
    """

    name = "openai"
    capabilities = CAPABILITIES["openai"]
    supports_tools = True  # an endpoint takes tools= and renders them itself

    def __init__(
        self,
        model: str,
        *,
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 1.0,
    ):
        base_url = os.environ.get("PAPERLIB_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise EndpointError(
                "set PAPERLIB_OPENAI_BASE_URL (or OPENAI_BASE_URL) to the endpoint, e.g. http://localhost:8000/v1"
            )
        # The client refuses to start without a key; "EMPTY" is vLLM's convention for none.
        api_key = os.environ.get("PAPERLIB_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.model = model
        self.base_url = base_url
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r})"

    def chat(
        self,
        conversations: Sequence[Conversation],
        *,
        tools: list[dict] | None = None,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] | None = None,
    ) -> list[Completion]:
        params = {"model": self.model, "max_tokens": max_new_tokens, "temperature": temperature}
        if tools:
            params["tools"] = [t if "function" in t else {"type": "function", "function": t} for t in tools]
        if stop:
            params["stop"] = list(stop)
        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = [
                pool.submit(self._complete, {**params, "messages": list(conversation), "seed": seed + i})
                for i, conversation in enumerate(conversations)
            ]
            try:
                return [future.result() for future in futures]
            except BaseException:
                pool.shutdown(cancel_futures=True)
                raise

    def _complete(self, request: dict) -> Completion:
        for attempt in itertools.count():
            try:
                return _to_completion(self._client.chat.completions.create(**request))
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                # The server's message can quote part of the key: leave it out.
                raise EndpointError(
                    f"{self.base_url} refused the key (HTTP {exc.status_code}): "
                    "check PAPERLIB_OPENAI_API_KEY (or OPENAI_API_KEY)"
                ) from None
            except openai.NotFoundError:
                raise EndpointError(
                    f"{self.base_url} answered 404 for model {self.model!r}: check the base URL "
                    "(it usually ends in /v1) and the model name (PAPERLIB_MODEL_<NAME> maps a registry name)"
                ) from None
            except (openai.APIConnectionError, openai.APIStatusError) as exc:
                reason = _reason(exc)
                if not isinstance(exc, _RETRYABLE) or attempt == self.max_retries:
                    return Completion(text="", finish_reason=f"error:{reason}")
                delay = min(_MAX_DELAY_S, self.backoff * 2**attempt) * random.uniform(0.5, 1.5)
                retry = f"{attempt + 1}/{self.max_retries}"
                log.warning("%s: %s, retry %s in %.2f s", self.model, reason, retry, delay)
                time.sleep(delay)


def _reason(exc: openai.APIError) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    return f"http_{exc.status_code}"


def _to_completion(response) -> Completion:
    choice = response.choices[0]
    parts = [choice.message.content] if choice.message.content else []
    for call in choice.message.tool_calls or []:
        try:
            arguments = json.loads(call.function.arguments)
        except (TypeError, ValueError):
            arguments = call.function.arguments
        call_json = json.dumps({"name": call.function.name, "arguments": arguments}, ensure_ascii=False)
        parts.append(f"<tool_call>{call_json}</tool_call>")
    return Completion(
        text="\n".join(parts),
        prompt_tokens=response.usage.prompt_tokens if response.usage else 0,
        finish_reason=choice.finish_reason or "",
    )
