"""The LLM bandit agent: paper B's prompts, one batched model call per step for all instances.

At every step each instance's user message is ``prompts.build_prompt`` of its own
history in the agent's ``style`` (``cot``, ``no_cot`` or ``knowing_doing``); local
backends (``hf``, ``vllm``) get it through the model's chat template as text, the
``openai`` backend as a chat message. All instances go to the backend as one batch.

A thin adapter on the shared decision core (``paperlib.llm.core``), which decides,
seeds and writes the step columns for every game. Two ways to decide (``decision``):

- ``free``, the paper's rule: the model writes up to ``max_new_tokens`` tokens (the
  paper's 256 with CoT, 16 without, 2048 for knowing-doing: ``prompts.MAX_NEW_TOKENS``)
  and the last valid ``ACTION=X`` in its text is the action (``parsing.parse_action``);
  where there is none the agent returns -1 and the runner plays a random arm and
  flags the step invalid.
- ``constrained`` **[ours]** (for a model that rarely writes a valid ``ACTION=``
  itself; notebook 11 measures each model's share): the model writes its own text first (its CoT, stopped at
  its own ``ACTION=`` if it writes one; nothing without CoT), then the answer prefix
  ``ACTION=`` is forced (on a new line unless the text already ends with it) and the
  arm is chosen from the model's log-probability of every arm name continuing that
  text (:func:`score_arms`, the scoring the frequency-bias analysis uses): the argmax
  at temperature 0, a draw from softmax(scores / temperature) above it. Every step is
  valid. It needs a backend that scores (``hf``, ``vllm``).

Sampling: temperature 0 (the paper's evaluation setting) is greedy. Above 0 the core's
seeding applies (a step's free call from the run's instance seeds and the step number;
constrained draws from one generator per instance), so a run reproduces.

The ``hf`` backend keeps each instance's prompt KV between steps (``streams``: the
prompt only grows by one history line, and the text the model wrote is not part of the
next prompt) and the agent forgets it after the last step.

Exploration (``exploration=``, an :class:`~paperlib.bandits.exploration.Exploration`):
one of paper B's mechanisms (its Fig. 8; settings and sources in that module) on the
same core. ``try_all`` and ``epsilon_greedy`` play an arm without asking the model
where they act (those instances leave the step's batch), context randomisation and
summary change the user message, self-correction makes a second call with the first
answer and a revision request in the conversation, and self-consistency asks for
``samples`` answers per instance in one call and plays their majority vote.

Step columns: the core's (``paperlib.llm.core.STEP_COLUMNS``, None and an empty
``raw_completion`` where the model was not asked); ``raw_completion`` is the
model's text, in constrained mode followed by the forced ``ACTION=`` and the chosen arm
(so ``parse_action`` reads the action back from it), ``candidate_logprobs`` the k arms'
scores, ``forced`` whether the prefix had to be appended to the model's text;
``chosen_by`` and the mechanisms' own columns (``paperlib.bandits.exploration``).
Episode columns add the mechanism and its parameters (``Exploration.columns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from paperlib.backends import make_backend
from paperlib.bandits.baselines import LLM_AGENT
from paperlib.bandits.env import BanditSpec, History
from paperlib.bandits.exploration import Exploration, majority_vote, step_rng
from paperlib.bandits.parsing import parse_action
from paperlib.bandits.prompts import ACTION_PREFIX, MAX_NEW_TOKENS, STYLES, build_prompt, prompt_name, revision_request
from paperlib.decisions import Decisions
from paperlib.llm.core import ActionFormat, Choice, DecisionCore, Request, as_decisions, check_settings


def _stream_options(backend, keys) -> dict:
    """``streams=keys`` for a backend that keeps per-stream KV (``hf``), nothing otherwise."""
    return {"streams": keys} if keys is not None and backend.capabilities.streams else {}


def chat_prompt(backend, user: str) -> str:
    return backend.render([{"role": "user", "content": user}])


def score_arms(backend, prompts: Sequence[str], spec: BanditSpec, keys: Sequence | None = None) -> np.ndarray:
    """Log-probability of every arm name continuing each prompt (which ends in ``ACTION=``):
    shape (prompts, k), one batched scoring pass; ``keys`` reuse per-stream KV (``hf``)."""
    return np.asarray(backend.score(list(prompts), list(spec.names), **_stream_options(backend, keys)), float)


def frequency_bias_batches(backend, spec: BanditSpec, cases):
    """Scores of every arm for ``metrics.frequency_bias_cases``: the no-CoT prompt of each
    case, chat template applied, then ``ACTION=`` (the constrained agent's scoring), yielded
    batch by batch so that a caller can store each at once: per number of repetitions, in
    increasing order, (the batch's row positions in ``cases``, its scores).

    The cases of one history differ only in repetitions, each prompt extending the one
    before by a line, so one stream per history carries the KV from batch to batch: on
    ``hf`` each case computes only its new tokens. The streams are forgotten when the
    batches end or the caller stops.
    """
    prompts = [
        chat_prompt(backend, build_prompt(spec, a, r, "no_cot")) + ACTION_PREFIX
        for a, r in zip(cases["actions"], cases["rewards"])
    ]
    keys = [("frequency_bias", id(cases), length, h) for length, h in zip(cases["length"], cases["history"])]
    try:
        for _, index in sorted(cases.groupby("repetitions").indices.items()):
            yield index, score_arms(backend, [prompts[i] for i in index], spec, [keys[i] for i in index])
    finally:
        if backend.capabilities.streams:
            backend.forget(set(keys))


def frequency_bias_scores(backend, spec: BanditSpec, cases) -> np.ndarray:
    """Every batch of :func:`frequency_bias_batches` in one array (rows: ``cases``, columns: arms)."""
    scores = np.zeros((len(cases), len(spec.names)))
    for index, batch in frequency_bias_batches(backend, spec, cases):
        scores[index] = batch
    return scores


def _check_style(style: str) -> None:
    if style not in STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {', '.join(STYLES)}")


def _spread(values: Sequence, index: np.ndarray, size: int, fill) -> list:
    """``values`` at positions ``index`` of a list of ``size``, ``fill`` elsewhere."""
    spread = [fill] * size
    for i, value in zip(index, values):
        spread[i] = value
    return spread


class LLMAgent:
    """The bandit agent on any backend (see the module doc). ``backend`` is a loaded backend."""

    name = LLM_AGENT

    def __init__(
        self,
        backend,
        *,
        style: str = "cot",
        decision: str = "free",
        temperature: float = 0.0,
        max_new_tokens: int | None = None,
        reuse_kv: bool = True,
        seed: int = 0,
        exploration: Exploration = Exploration(),
        token_logprobs: bool = False,
    ):
        _check_style(style)
        check_settings(decision, backend, temperature, max_new_tokens)
        exploration.check(temperature)
        self.backend, self.model = backend, backend.model
        self.style, self.decision, self.temperature, self.seed = style, decision, temperature, seed
        self.max_new_tokens = max_new_tokens or MAX_NEW_TOKENS[style]
        self.cot = style != "no_cot"
        self.exploration = exploration
        self.reuse_kv = reuse_kv  # False: recompute every prompt (the baseline of ``paperlib bench bandit``)
        self.token_logprobs = token_logprobs  # the step rows keep each completion token's (a trainer's rollout)
        self._run = 0
        self._keys: list | None = None

    def _forget(self) -> None:
        if self._keys:
            self.core.forget(self._keys)
        self._keys = None

    def reset(self, spec: BanditSpec, seeds: Sequence[int]) -> None:
        self._forget()
        self.spec, self.seeds = spec, list(seeds)
        action_format = ActionFormat(
            candidates=spec.names,
            parse=lambda text: parse_action(text, spec.names),
            answer_prefix=ACTION_PREFIX,
            write_first=self.cot,
        )
        self.core = DecisionCore(
            self.backend,
            action_format,
            mode=self.decision,
            temperature=self.temperature,
            max_new_tokens=self.max_new_tokens,
            seed=self.seed,
            token_logprobs=self.token_logprobs,
        )
        self.core.reset(self.seeds)
        self._run += 1
        self._keys = [("bandit", id(self), self._run, i) for i in range(len(self.seeds))] if self.reuse_kv else None
        # episode columns (the runner adds them to every episode row)
        self.columns = {
            "decision": self.decision,
            "prompt": prompt_name(spec.variant, self.style),
            "temperature": self.temperature,
            "max_new_tokens": self.max_new_tokens,
            **self.exploration.columns,
        }

    def act(self, history: History) -> Decisions:
        spec, t, m = self.spec, history.t, history.instances
        exploration = self.exploration
        rngs = [step_rng(self.seed, seed, t) for seed in self.seeds]
        preset = exploration.preset_arms(spec, t, rngs)
        asked = np.flatnonzero(preset < 0)
        keys = self._keys or [None] * m
        requests = [
            Request(
                [
                    {
                        "role": "user",
                        "content": build_prompt(
                            spec,
                            history.actions[i, :t],
                            history.rewards[i, :t],
                            self.style,
                            order=exploration.history_order(t, rngs[i]),
                            summary=exploration.mechanism == "context_summary",
                        ),
                    }
                ],
                self.seeds[i],
                keys[i],
            )
            for i in asked
        ]
        try:
            choices, columns = self._decide(requests)
        except BaseException:
            self._forget()
            raise
        if t == spec.horizon - 1:
            self._forget()
        decided = as_decisions(choices, **columns)
        actions = preset.copy()
        actions[asked] = decided.actions
        extra = {name: _spread(values, asked, m, None) for name, values in decided.extra.items()}
        extra["chosen_by"] = _spread([exploration.chooser] * len(asked), asked, m, exploration.mechanism)
        return Decisions(actions, _spread(decided.texts, asked, m, ""), extra)

    def _decide(self, requests: list[Request]) -> tuple[list[Choice], dict[str, list]]:
        """The played choice per request and the mechanism's own step columns."""
        mechanism = self.exploration.mechanism
        if mechanism == "self_correction":
            first = self.core.decide(requests)
            revision = {"role": "user", "content": revision_request(self.spec, self.style)}
            second = self.core.decide(
                [
                    replace(
                        r, conversation=[*r.conversation, {"role": "assistant", "content": c.raw_completion}, revision]
                    )
                    for r, c in zip(requests, first)
                ]
            )
            return second, {
                "first_action": [-1 if c.action is None else c.action for c in first],
                "first_completion": [c.raw_completion for c in first],
            }
        if mechanism == "self_consistency":
            n = self.exploration.samples
            # one stream key per instance: the copies of a prompt share its KV (hf prefills identical prompts once)
            samples = self.core.decide(
                [replace(r, stream=r.stream if j == 0 else None) for r in requests for j in range(n)]
            )
            per_request = [samples[i : i + n] for i in range(0, len(samples), n)]
            votes = [majority_vote([c.action for c in own]) for own in per_request]
            return (
                [next(c for c in own if c.action == vote) for own, vote in zip(per_request, votes)],
                {"sample_actions": [[-1 if c.action is None else c.action for c in own] for own in per_request]},
            )
        return self.core.decide(requests), {}


def make_llm_agent(
    model: str | None = None,
    *,
    backend="hf",
    cot: bool = True,
    style: str | None = None,
    decision: str = "free",
    temperature: float = 0.0,
    max_new_tokens: int | None = None,
    exploration: Exploration = Exploration(),
) -> LLMAgent:
    """The LLM agent for a model name on a backend kind (``hf``, ``vllm``, ``openai``; built by
    ``paperlib.backends.make_backend``), or on an already loaded backend (so several agents
    share one model). ``style`` defaults to
    ``cot`` or ``no_cot`` after ``cot``; ``knowing_doing`` implies CoT."""
    style = style or ("cot" if cot else "no_cot")
    if not cot and style != "no_cot":
        raise ValueError(f"the {style} prompt asks for reasoning: it cannot run without CoT")
    if isinstance(backend, str):
        _check_style(style)
        check_settings(decision, backend, temperature, max_new_tokens)  # before loading a model
        exploration.check(temperature)
        if not model:
            raise ValueError("the LLM agent needs a model name, e.g. gemma3-270m")
        backend = make_backend(backend, model)
    elif model is not None and model != backend.model:
        raise ValueError(f"model {model!r} differs from the backend's {backend.model!r}")
    return LLMAgent(
        backend,
        style=style,
        decision=decision,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        exploration=exploration,
    )
