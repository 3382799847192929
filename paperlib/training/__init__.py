"""Fine-tuning on a game's own rollouts, for any game: this package imports no game and no report.

- ``settings.py``: the settings base both trainers share (model, seed, LoRA, optimiser,
  sampling, micro-batch), its checks, the settings table, building a run from a profile's recipe.
- ``grpo/``: GRPO with trl's ``GRPOTrainer`` (paper A); ``grpo/trainer.py``, its subclass,
  loads trl only when a trainer is built.
- ``rlft/``: paper B's RLFT: ``objective.py`` (rewards, advantages, PPO's loss, a value head),
  ``loop.py`` (the trainer and its loop).
- ``checkpoints.py`` (run directories, per-step adapters, resume), ``selection.py``
  (checkpoint selection), ``shared_prefix.py`` (scoring rows that share a prompt prefix once),
  ``held_out.py`` (held-out play of a run's adapters), ``compare.py`` (adapters against the
  base model), ``precision.py`` (bfloat16 autocast where the hardware multiplies it),
  ``bench.py`` (seconds per step, ``paperlib bench``).

A game plugs in from its own folder by subclassing a trainer's settings: the protocol each
trainer calls is written in ``grpo/__init__.py`` and ``rlft/loop.py``
(``paperlib.philosophers.training``, ``paperlib.bandits.training``,
``paperlib.tictactoe.training``)."""
