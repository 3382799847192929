"""A local backend whose outputs the test fixes: drives the decision core with no model."""

import numpy as np

from paperlib.backends.base import Capabilities, Completion


class ScriptedBackend:
    """A local backend whose outputs are fixed by the test: ``texts`` to generate in order,
    ``scores[prompt]`` per scored prompt; it records every call."""

    name = "scripted"
    model = "scripted"
    supports_tools = False

    def __init__(self, texts=(), scores=None, capabilities=Capabilities(True, True, True, True)):
        self.texts, self.scores, self.capabilities = list(texts), {} if scores is None else scores, capabilities
        self.calls = []
        self.tokenizer = lambda text, add_special_tokens=False: {"input_ids": [ord(c) for c in text]}

    def render(self, conversation, *, tools=None):
        return "|".join(m["content"] for m in conversation) + ">"

    def encode(self, text):
        return [ord(c) for c in text]

    def generate(self, prompts, **options):
        self.calls.append(("generate", list(prompts), options))
        out = [self.texts.pop(0) for _ in prompts]
        return [
            Completion(t, [ord(c) for c in t], len(p), "stop", [-0.5] * len(t) if options.get("logprobs") else None)
            for t, p in zip(out, prompts)
        ]

    def chat(self, conversations, **options):
        self.calls.append(("chat", list(conversations), options))
        return [Completion(self.texts.pop(0), [], 0, "stop") for _ in conversations]

    def score(self, prompts, candidates, streams=None):
        self.calls.append(("score", list(prompts), {"candidates": list(candidates), "streams": streams}))
        return np.array([self.scores[p] for p in prompts])

    def forget(self, streams):
        self.calls.append(("forget", list(streams), {}))
