"""Fine-tuning on the games' own rollouts: GRPO (paper A) with trl and peft, the run directory
shared by trainers (per-step adapters, training log, resume), and checkpoint selection."""
