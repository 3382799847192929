"""The offline vLLM engine (``vllm.LLM``) on a GPU: batched generation and scoring.

vLLM is imported only when the backend is built, so the rest of the package runs
without it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from paperlib.backends.base import CAPABILITIES, PROBE_TOOL, Completion, Conversation

NEEDS_VLLM = "the vllm backend needs the vllm package on a CUDA machine: pip install vllm"


class VLLMBackend:
    """``LocalBackend`` on ``vllm.LLM``; ``engine_kwargs`` go to ``LLM`` (dtype, max_model_len, ...).

    ``tensor_parallel_size``: the GPUs one engine splits the model over (vLLM's tensor
    parallelism, for a model larger than one GPU, e.g. Gemma2 27B); it must divide the
    model's attention heads. Ignored with ``llm``, an engine already built.

    ``chat`` renders each conversation with the tokenizer's chat template and generates
    from it, so tool calls come back as the text the model writes. Prompts are sent as
    token ids, the tokenizer's special tokens added only when the text does not already
    start with BOS (a rendered chat template usually does). Prompt ``i`` is sampled with
    ``seed + i``, so that repeated prompts in one batch draw different samples and the
    batch is reproducible.
    """

    name = "vllm"
    capabilities = CAPABILITIES["vllm"]

    def __init__(self, model: str, llm=None, tensor_parallel_size: int = 1, **engine_kwargs):
        try:
            import vllm
        except ImportError:
            raise ImportError(NEEDS_VLLM) from None
        self._vllm = vllm
        self.model = model
        if llm is None:
            llm = vllm.LLM(model=model, tensor_parallel_size=tensor_parallel_size, **engine_kwargs)
        self.llm = llm  # given: a trainer's engine
        self.tokenizer = self.llm.get_tokenizer()
        probe = [{"role": "user", "content": "u"}]
        self.supports_tools = "paperlib_probe_tool" in self.render(probe, tools=[PROBE_TOOL])

    def __repr__(self) -> str:
        return f"VLLMBackend(model={self.model!r})"

    def render(self, conversation: Conversation, *, tools: list[dict] | None = None) -> str:
        return self.tokenizer.apply_chat_template(conversation, tools=tools, tokenize=False, add_generation_prompt=True)

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
        prompts = [self.render(conversation, tools=tools) for conversation in conversations]
        return self.generate(prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, stop=stop)

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Sequence[str] | None = None,
    ) -> list[Completion]:
        stop = list(stop) if stop else None
        params = [
            self._vllm.SamplingParams(temperature=temperature, max_tokens=max_new_tokens, seed=seed + i, stop=stop)
            for i in range(len(prompts))
        ]
        inputs = [{"prompt_token_ids": self.encode(prompt)} for prompt in prompts]
        outputs = self.llm.generate(inputs, params, use_tqdm=False)
        return [
            Completion(
                text=output.outputs[0].text,
                token_ids=list(output.outputs[0].token_ids),
                prompt_tokens=len(output.prompt_token_ids),
                finish_reason=output.outputs[0].finish_reason or "",
            )
            for output in outputs
        ]

    def score(self, prompts: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """Sum of the candidate's token log-probs after the prompt, the pair tokenised as one text."""
        starts, sequences = [], []
        for prompt in prompts:
            start = len(self.encode(prompt))
            for candidate in candidates:
                starts.append(start)
                sequences.append(self.encode(prompt + candidate))
        # prompt_logprobs=0: the log-prob of each prompt position's own token; max_tokens=1 is vLLM's least.
        params = self._vllm.SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=0)
        outputs = self.llm.generate([{"prompt_token_ids": ids} for ids in sequences], params, use_tqdm=False)
        scores = [
            sum(output.prompt_logprobs[j][ids[j]].logprob for j in range(start, len(ids)))
            for start, ids, output in zip(starts, sequences, outputs)
        ]
        return np.array(scores, dtype=float).reshape(len(prompts), len(candidates))

    def encode(self, text: str) -> list[int]:
        bos = self.tokenizer.bos_token
        return self.tokenizer.encode(text, add_special_tokens=not (bos and text.startswith(bos)))
