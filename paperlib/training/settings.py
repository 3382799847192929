"""The settings every training run has, whichever trainer and game: one frozen dataclass base.

:class:`TrainerSettings` holds what GRPO (``paperlib.training.grpo``) and RLFT
(``paperlib.training.rlft.loop``) share: the model, the run's seed and profile label, the
LoRA adapter, the optimiser's learning rate and gradient clip, PPO's clip and the KL
weight, sampling (temperature, new tokens), decisions per forward and backward pass and
shared-prefix scoring. A trainer's subclass adds its own fields and checks, and a game's
subclass of that adds the game's (``philosophers.training``, ``bandits.training``,
``tictactoe.training``). Each level's :meth:`~TrainerSettings.check` refuses what it
knows, in one line, before any model loads, and calls the level above; each level's
:meth:`~TrainerSettings.sources` says where its values come from, and
:func:`settings_table` shows them all.

A run is built from its profile (:meth:`TrainerSettings.from_recipe`): the profile names the
fields its recipe changes from the paper's defaults (``paperlib.profiles``), the caller may
override some, and the result is checked. The run directory records :meth:`config` and
gives it back (:meth:`TrainerSettings.of_run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

import pandas as pd

from paperlib.training.precision import PRECISIONS


def at_least_one(values: Mapping[str, int]) -> None:
    """Refuse, in one line, the first of ``values`` (name -> value) below 1."""
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


@dataclass(frozen=True)
class TrainerSettings:
    """One training run's shared settings; a trainer's and a game's subclasses add theirs. Each
    trainer sets the paper's defaults for its model, gradient clip, new tokens and KL weight."""

    model: str
    seed: int = 0  # the run's seed: LoRA initialisation, what is played, sampling
    profile: str = "custom"  # a label: the profile whose recipe this run started from
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    learning_rate: float = 2.5e-4
    max_grad_norm: float = 1.0
    micro_batch: int = 0  # decisions (rows) per forward and backward pass; 0: the whole batch
    shared_prefix: bool = True
    precision: str = "auto"  # the training passes' (paperlib.training.precision); rollouts stay float32
    temperature: float = 1.0  # sampling, in training
    max_new_tokens: int = 256
    epsilon: float = 0.2  # PPO's clip
    beta: float = 0.0  # the weight of the KL penalty to the model without its adapter

    # -- what a trainer or a game says about itself (not fields)
    progress = ()  # the log columns the progress bar shows

    @property
    def batch_size(self) -> int:
        """Decisions the backend generates at once while the run plays (its ``max_batch``)."""
        raise NotImplementedError

    @property
    def shape(self) -> str:
        """What one step (update) plays, in words (the benchmark's report)."""
        raise NotImplementedError

    def labels(self) -> dict:
        """The columns that name the run in each row of its training log, after ``step``."""
        return {"model": self.model, "seed": self.seed, "profile": self.profile}

    def sources(self) -> dict[str, str]:
        """Where each setting's value comes from (setting -> source); a subclass adds its own."""
        return {
            "precision": "ours: auto = bfloat16 autocast where the hardware multiplies it natively (AVX512-BF16 or "
            "AMX on a CPU), float32 elsewhere; LoRA weights and optimiser state stay float32 "
            "(paperlib.training.precision)"
        }

    def derived(self) -> dict[str, str]:
        """Choices that are not fields, as rows of :func:`settings_table` (name -> value)."""
        return {}

    def postfix(self, row: dict) -> dict[str, str]:
        """A progress bar's postfix for a row of the training log: the :attr:`progress` columns and the seconds."""
        return {name: f"{row[name]:.2f}" for name in self.progress} | {"s": f"{row['seconds']:.0f}"}

    # -- what both trainers build from the settings
    def base_model(self, device: str | None = None):
        """The model to train, on ``device`` (default: the GPU if there is one), on the shared-prefix attention where
        :attr:`shared_prefix` asks for it and the kernel covers the model (else the plain forward
        pass): (model, tokenizer, device)."""
        import torch

        from paperlib.models import load_local
        from paperlib.training.shared_prefix import use_training_attention

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        lm, tokenizer = load_local(self.model, device)
        if self.shared_prefix:
            use_training_attention(lm)
        return lm, tokenizer, device

    def lora_config(self):
        """peft's configuration of the LoRA adapter (no dropout)."""
        from peft import LoraConfig

        return LoraConfig(
            r=self.lora_rank,
            lora_alpha=self.lora_alpha,
            target_modules=list(self.lora_targets),
            lora_dropout=0.0,
            task_type="CAUSAL_LM",
        )

    # -- checks and records
    def check(self):
        """Refuse, in one line, settings that cannot run (before any model loads); a subclass
        checks its own fields after these."""
        from paperlib.models import resolve

        if resolve(self.model).kind == "gateway":
            raise ValueError(f"{self.model!r} is a gateway model: only local models (embedded or hub) can be trained")
        at_least_one({"lora_rank": self.lora_rank, "max_new_tokens": self.max_new_tokens, "seed + 1": self.seed + 1})
        if not self.temperature > 0:
            raise ValueError(
                f"the training temperature must be positive, got {self.temperature}: the trainers learn "
                "from sampled completions (at 0 every episode of a group is the same, and PPO's ratio "
                "needs a sampling policy)"
            )
        if not self.learning_rate > 0 or not self.epsilon > 0:
            raise ValueError("learning_rate and epsilon must be positive")
        if self.beta < 0:
            raise ValueError(f"beta must be zero or more, got {self.beta}")
        if self.micro_batch < 0:
            raise ValueError(f"micro_batch must be zero (the whole batch) or more, got {self.micro_batch}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; choose one of {', '.join(PRECISIONS)}")
        return self

    def config(self) -> dict:
        """The settings as JSON values (the run directory's ``run.json``)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def defaults(cls) -> dict:
        """Each setting's default as a JSON value (what a run recorded before the setting existed ran with)."""
        return cls().config()

    @classmethod
    def of_run(cls, out):
        """The settings a run directory was trained with (a setting added since it was recorded: what
        runs before it ran with, :meth:`defaults`)."""
        from paperlib.training.checkpoints import RunDir

        config = {**cls.defaults(), **RunDir(out).config()}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in config.items()})

    @classmethod
    def from_recipe(cls, profile: str, recipe: Mapping[str, object], **overrides):
        """The run ``recipe`` names (a profile's: field -> value, over the paper's defaults) with
        ``overrides`` (None values ignored), labelled with the ``profile`` it came from, checked."""
        chosen = {**recipe, **{k: v for k, v in overrides.items() if v is not None}}
        return cls(**{"profile": profile, **chosen}).check()


def settings_table(settings: TrainerSettings, notebook: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every field of ``settings`` with its value, the default's (the paper's recipe, or ours where
    the paper gives none) and where the value comes from, then its derived choices: a notebook's
    settings table. A value changed from the default says so, with its reason and the default's
    own source: the notebook's (``notebook``: setting -> reason, for what the notebook itself
    sets), else the run's profile's (``Profile.recipe_reasons``); the seed and the profile say
    "run"."""
    from paperlib.profiles import PROFILES

    sources = settings.sources()
    reasons = PROFILES[settings.profile].recipe_reasons if settings.profile in PROFILES else {}
    defaults = type(settings)()  # a trainer's settings default every field, the model included
    rows = []
    for f in fields(settings):
        value, default = getattr(settings, f.name), getattr(defaults, f.name)
        source = sources.get(f.name, "run")
        if f.name in (notebook or {}) and value != default:
            source = f"notebook: {notebook[f.name]} (default: {source})"
        elif f.name not in ("seed", "profile") and value != default:
            source = f"{settings.profile} profile: {reasons.get(f.name, 'no reason given')} (default: {source})"
        rows.append({"setting": f.name, "value": str(value), "default": str(default), "source": source})
    rows += [
        {"setting": name, "value": value, "default": "", "source": sources.get(name, "run")}
        for name, value in settings.derived().items()
    ]
    return pd.DataFrame(rows)
