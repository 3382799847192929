"""Text generation: local transformers (``hf``), OpenAI-compatible HTTP (``openai``), offline vLLM (``vllm``)."""
