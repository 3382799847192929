"""Throughput of the local backend on the papers' two workloads, in one process.

- :func:`bench_batch`: the LLM philosopher agent at N=5 with 30 concurrent episodes,
  one batched call per round (plain; computing the shared prefix of rules and tools
  once and copying it into every row; keeping it once and attending to it from every
  row) against a naive loop of one ``generate`` call per philosopher; decisions/s,
  ratios against the naive loop, and where the time goes.
- :func:`bench_streams`: the LLM bandit agent on 64 instances (its real prompts, a
  history growing by one line a step): prompt tokens computed per step and steps/s
  with per-instance KV against recomputing every prompt (and shared prefix only).
  At 64 instances it runs ≈ 14 minutes on one core, nearly all of it in the two
  recomputing modes.

``os.getloadavg`` is reported beside the figures: other work on the machine slows
every mode.
"""

from __future__ import annotations

import os
import time

from paperlib.backends.hf import HFBackend


def bench_batch(
    model: str = "smollm2-135m",
    n: int = 5,
    episodes: int = 30,
    rounds: int = 2,
    naive: int = 10,
    max_new_tokens: int = 32,
    temperature: float = 1.0,
    seed: int = 0,
    decision: str = "free",
    backend: HFBackend | None = None,
) -> dict:
    """Philosopher decisions/s of the real LLM agent (``paperlib.philosophers.llm``, default prompt,
    ``decision`` mode) at N=``n`` with ``episodes`` concurrent episodes for ``rounds`` rounds,
    batched three ways (``batched``: plain; ``prefix_reuse``: the shared prefix computed
    once, copied into every row; ``shared_attention``: kept once, attended to by every
    row; see ``paperlib.backends.hf``), against a naive loop that gives the agent one
    philosopher at a time (timed on ``naive`` turns spread evenly over the batched run's
    turns, then extrapolated per decision).

    Where the time goes in the batched runs: prefill and decode (the backend's own
    counters; scoring counts as prefill), parsing (``parse_action`` re-run on the run's
    completions, timed), the rest of the agent (prompts, rendering, hashing, drawing) and
    the environment with the episode runner (everything outside the agent's ``act``).
    ``same_as_batched``: completions identical to the plain batched run's. Greedy and
    scored decisions are the same in every mode; a sampled token can differ where the
    draw falls within float rounding of a bin edge (the paths sum in different orders),
    and the rest of that completion with it.
    """
    from paperlib.philosophers.episode import episode_seeds, run_episodes
    from paperlib.philosophers.llm import LLMPolicy
    from paperlib.philosophers.parsing import parse_action

    backend = backend or HFBackend(model)
    agent = LLMPolicy(backend, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, decision=decision)
    seeds = episode_seeds(seed, episodes)
    backend.generate(["warm-up"] * 2, max_new_tokens=2)
    results, completions, turns = {}, {}, []
    for mode in ("batched", "prefix_reuse", "shared_attention"):
        backend.reuse_prefix, backend.share_prefix = mode != "batched", mode == "shared_attention"
        backend.forget()  # each mode computes the shared prefix itself, once
        timed = _TimedPolicy(agent)
        before, started = dict(backend.stats), time.perf_counter()
        _, steps = run_episodes(timed, n=n, rounds=rounds, seeds=seeds)
        wall = time.perf_counter() - started
        delta = {k: backend.stats[k] - before[k] for k in before}
        parse_started = time.perf_counter()
        for text in steps["raw_completion"] if decision == "free" else ():  # constrained decisions parse nothing
            parse_action(text)
        parse_s = time.perf_counter() - parse_started
        results[mode] = {
            "decisions": len(steps),
            "seconds": wall,
            "decisions_per_s": len(steps) / wall,
            "prefill_s": delta["prefill_s"],
            "decode_s": delta["decode_s"],
            "parse_s": parse_s,
            "agent_other_s": timed.seconds - delta["prefill_s"] - delta["decode_s"] - parse_s,
            "environment_s": wall - timed.seconds,
            "prompt_tokens": delta["prompt_tokens"],
            "computed_tokens": delta["computed_tokens"],
            "new_tokens": int(steps["completion_ids"].map(len).sum()) if decision == "free" else 0,
            "call_rate": float((steps["action"] != "none").mean()),
        }
        completions[mode], turns = steps["raw_completion"].tolist(), timed.turns
        results[mode]["same_as_batched"] = sum(a == b for a, b in zip(completions[mode], completions["batched"]))
    picked = [turns[round(i * (len(turns) - 1) / max(naive - 1, 1))] for i in range(naive)]
    before, started = dict(backend.stats), time.perf_counter()
    for turn in picked:
        agent.act([turn])
    wall = time.perf_counter() - started
    backend.reuse_prefix = backend.share_prefix = True
    results["naive"] = {
        "decisions": naive,
        "seconds": wall,
        "decisions_per_s": naive / wall,
        "prefill_s": backend.stats["prefill_s"] - before["prefill_s"],
        "decode_s": backend.stats["decode_s"] - before["decode_s"],
    }
    for r in results.values():
        r["vs_naive"] = r["decisions_per_s"] / results["naive"]["decisions_per_s"]
    return {
        "model": backend.model,
        "dtype": str(backend.lm.dtype),
        "n": n,
        "episodes": episodes,
        "rounds": rounds,
        "decision": decision,
        "max_new_tokens": max_new_tokens,
        "temperature": temperature,
        "loadavg": os.getloadavg(),
        "results": results,
    }


class _TimedPolicy:
    """The agent, with the seconds spent in its ``act`` and the turns it was given."""

    def __init__(self, policy):
        self.policy, self.seconds, self.turns = policy, 0.0, []

    def reset(self, seeds):
        self.policy.reset(seeds)

    def act(self, turns):
        started = time.perf_counter()
        decisions = self.policy.act(turns)
        self.seconds += time.perf_counter() - started
        self.turns += turns
        return decisions


def bench_streams(
    model: str = "gemma3-270m",
    instances: int = 64,
    arms: int = 10,
    start: int = 25,
    steps: int = 4,
    cot: bool = False,
    decision: str = "constrained",
    max_new_tokens: int | None = None,
    backend: HFBackend | None = None,
) -> dict:
    """The LLM bandit agent (``paperlib.bandits.llm``) on ``instances`` bandits whose first
    ``start`` steps a random policy played, for ``steps`` more steps, in three modes:
    ``recompute`` (every prompt prefilled whole), ``shared_prefix`` (the instructions
    common to all instances computed once and kept across calls) and ``per_instance_kv`` (each
    instance keeps its prompt KV between steps). The first timed step is cold in every
    mode (no KV kept yet); the others are what a step costs in the middle of an episode.
    Greedy decisions, so the three modes must choose the same arms."""
    import numpy as np

    from paperlib.bandits.baselines import RandomAgent
    from paperlib.bandits.env import BanditEnv, BanditSpec, instance_seeds
    from paperlib.bandits.llm import LLMAgent

    backend = backend or HFBackend(model)
    spec = BanditSpec(arms, horizon=start + steps)
    seeds = instance_seeds(0, instances)
    out, chosen = {}, {}
    for mode in ("recompute", "shared_prefix", "per_instance_kv"):
        env, warmup = BanditEnv(spec, seeds), RandomAgent()
        warmup.reset(spec, seeds)
        for _ in range(start):
            env.step(warmup.act(env.history))
        backend.reuse_prefix = mode != "recompute"
        backend.forget()  # every mode starts cold
        agent = LLMAgent(
            backend,
            style="cot" if cot else "no_cot",
            decision=decision,
            max_new_tokens=max_new_tokens,
            reuse_kv=mode == "per_instance_kv",
        )
        agent.reset(spec, seeds)
        runs, chosen[mode] = [], []
        for _ in range(steps):
            before, started = dict(backend.stats), time.perf_counter()
            actions = agent.act(env.history).actions
            runs.append({"seconds": time.perf_counter() - started, **{k: backend.stats[k] - before[k] for k in before}})
            chosen[mode].append(actions.tolist())
            env.step(np.where(actions >= 0, actions, 0))  # free mode: arm 0 where no valid action (all modes alike)
        keys = ("seconds", "prefill_s", "decode_s", "prompt_tokens", "computed_tokens")
        out[mode] = {
            "cold": {k: runs[0][k] for k in keys},
            "warm": {k: sum(r[k] for r in runs[1:]) / max(len(runs) - 1, 1) for k in keys},
        }
        out[mode]["warm"]["steps_per_s"] = 1 / out[mode]["warm"]["seconds"] if steps > 1 else float("nan")
    backend.reuse_prefix = True
    for r in out.values():
        r["vs_recompute"] = r["warm"]["steps_per_s"] / out["recompute"]["warm"]["steps_per_s"]
    same = chosen["recompute"] == chosen["shared_prefix"] == chosen["per_instance_kv"]
    return {
        "model": backend.model,
        "dtype": str(backend.lm.dtype),
        "instances": instances,
        "arms": arms,
        "start": start,
        "steps": steps,
        "cot": cot,
        "decision": decision,
        "same_actions": same,
        "loadavg": os.getloadavg()[0],
        "results": out,
    }


def report(batch: dict | None = None, streams: dict | None = None) -> str:
    """The two benchmarks' results as plain text lines."""
    lines = []
    if batch:
        b = batch
        lines.append(
            f"{b['model']} ({b['dtype']}), LLM agent ({b['decision']} mode, T={b['temperature']}, "
            f"max_new_tokens={b['max_new_tokens']}) at N={b['n']}, {b['episodes']} episodes x {b['rounds']} "
            f"rounds, load {' '.join(f'{x:.1f}' for x in b['loadavg'])}"
        )
        for mode, r in b["results"].items():
            line = (
                f"  {mode:16s} {r['decisions_per_s']:7.2f} decisions/s  x{r['vs_naive']:.1f} vs naive  "
                f"({r['decisions']} decisions in {r['seconds']:.1f} s: prefill {r['prefill_s']:.1f} s, "
                f"decode {r['decode_s']:.1f} s"
            )
            if mode == "naive":
                lines.append(line + "; timed on a subset, extrapolated per decision)")
            else:
                lines.append(
                    line + f", parsing {r['parse_s']:.3f} s, rest of the agent {r['agent_other_s']:.1f} s, "
                    f"environment {r['environment_s']:.2f} s; {r['computed_tokens']} of "
                    f"{r['prompt_tokens']} prompt tokens computed, {r['new_tokens']} generated; "
                    f"valid calls {r['call_rate']:.0%}; {r['same_as_batched']} completions as in batched)"
                )
    if streams:
        s = streams
        lines.append(
            f"{s['model']} ({s['dtype']}), {s['instances']} instances, k={s['arms']}, steps {s['start'] + 1}-"
            f"{s['start'] + s['steps']} of a random-policy history, {'CoT' if s['cot'] else 'no CoT'}, "
            f"{s['decision']}, load {s['loadavg']:.1f}, same actions in every mode: {s['same_actions']}"
        )
        for mode, r in s["results"].items():
            cold, warm = r["cold"], r["warm"]
            lines.append(
                f"  {mode:15s} {warm['steps_per_s']:6.3f} steps/s  x{r['vs_recompute']:.2f} vs recompute  "
                f"per step: {warm['computed_tokens']:.0f} of {warm['prompt_tokens']:.0f} prompt tokens computed, "
                f"prefill {warm['prefill_s']:.2f} s, decode {warm['decode_s']:.2f} s, "
                f"other {warm['seconds'] - warm['prefill_s'] - warm['decode_s']:.2f} s  "
                f"(cold first step {cold['seconds']:.1f} s, {cold['computed_tokens']} tokens)"
            )
    return "\n".join(lines)
