"""Game-agnostic LLM decisions: one core over any backend, and traces per seat for trainers."""
