"""Text generation: local transformers (``hf``), OpenAI-compatible HTTP (``openai``), offline vLLM (``vllm``).

Each backend module is imported only when built, so this package imports nothing heavy.
"""

from paperlib.backends.base import CAPABILITIES

BACKENDS = tuple(CAPABILITIES)  # hf, openai, vllm


def make_backend(kind: str, model: str, **options):
    """Build a backend for a registered model name (or hub id): ``hf``, ``openai`` or ``vllm``.

    ``openai`` sends the gateway's model name (``paperlib.models.gateway_model``);
    ``vllm`` loads the model's hub id. ``options`` go to the backend's constructor, e.g.
    ``make_backend("vllm", "gemma2-27b", tensor_parallel_size=2)`` splits one engine over two GPUs.
    """
    from paperlib.models import gateway_model, resolve

    if kind == "hf":
        from paperlib.backends.hf import HFBackend

        return HFBackend(model, **options)
    if kind == "openai":
        from paperlib.backends.openai_backend import OpenAIBackend

        return OpenAIBackend(gateway_model(model), **options)
    if kind == "vllm":
        from paperlib.backends.vllm_backend import VLLMBackend

        return VLLMBackend(resolve(model).source, **options)
    raise ValueError(f"unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}")
