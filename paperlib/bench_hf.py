"""Throughput of the local backend on the papers' two prompt shapes, in one process.

- :func:`bench_batch`: dining-philosophers decisions (episodes x philosophers prompts,
  a long shared prefix of rules and tools, a short per-philosopher tail). Measures
  decisions/s of (a) a naive loop, one ``generate`` call per prompt (timed on the
  first ``naive_prompts``), (b) one batched call, plain, (c) one batched call
  reusing the shared prefix; ratios against (a), and seconds in prefill and decode.
- :func:`bench_streams`: bandit histories (``streams`` prompts growing by one line a
  step): prompt tokens computed and seconds, with and without per-stream KV.

The defaults run in about two minutes on the 2-core CPU. ``os.getloadavg`` is
reported beside the figures: other work on the machine slows every mode.
"""

from __future__ import annotations

import os
import time

from paperlib.backends.hf import HFBackend

ACTIONS = ("think", "pick_up_left", "pick_up_right", "put_down_left", "put_down_right", "eat")


def _fit(backend: HFBackend, sentences: list[str], tokens: int) -> str:
    """Join sentences (cycling) until the text is about ``tokens`` tokens long."""
    text, i = "", 0
    while len(backend.encode(text)) < tokens:
        text += sentences[i % len(sentences)] + " "
        i += 1
    return text.strip()


def dining_prompts(backend: HFBackend, episodes: int, philosophers: int, prefix_tokens: int, tail_tokens: int) -> list[str]:
    """Chat prompts shaped like paper A's: one system message (rules + tools) shared by
    all, one user message per philosopher and episode."""
    rules = _fit(backend, [
        "You are one of the philosophers seated around a round table, one fork between each pair of neighbours.",
        "You eat only while holding both your left and your right fork; eating ends your hunger for a round.",
        "If every philosopher holds exactly one fork, nobody can eat: the table is deadlocked and all lose.",
        f"Each round reply with exactly one tool call, one of: {', '.join(ACTIONS)}.",
        "Think about your neighbours: they follow the same rules and choose at the same time as you.",
    ], prefix_tokens)
    holds = ("no fork", "the left fork", "the right fork", "both forks")
    users = []
    for e in range(episodes):
        for p in range(philosophers):
            users.append(_fit(backend, [
                f"Episode {e}, round {1 + (e + p) % 5}. You are philosopher {p} of {philosophers}.",
                f"You hold {holds[(e + p) % 4]}; you have eaten {(e * p) % 3} times.",
                f"Your left neighbour {'is eating' if (e + p) % 2 else 'is thinking'}; "
                f"your right neighbour holds {holds[(e + 2 * p) % 4]}.",
                "What do you do now?",
            ], tail_tokens + (e + p) % 7 - 3))
    return [backend.render([{"role": "system", "content": rules}, {"role": "user", "content": u}]) for u in users]


def _timed(backend: HFBackend, run) -> dict:
    before = dict(backend.stats)
    start = time.perf_counter()
    completions = run()
    wall = time.perf_counter() - start
    delta = {k: backend.stats[k] - before[k] for k in before}
    return {"decisions": len(completions), "seconds": wall, "decisions_per_s": len(completions) / wall,
            "prefill_s": delta["prefill_s"], "decode_s": delta["decode_s"],
            "prompt_tokens": delta["prompt_tokens"], "computed_tokens": delta["computed_tokens"],
            "new_tokens": sum(len(c.token_ids) for c in completions), "completions": completions}


def bench_batch(model: str = "smollm2-135m", episodes: int = 6, philosophers: int = 5, prefix_tokens: int = 300,
                tail_tokens: int = 60, new_tokens: int = 24, naive_prompts: int = 6, max_batch: int = 64,
                backend: HFBackend | None = None) -> dict:
    """decisions/s of the naive loop, plain batch and prefix-reuse batch (greedy), and
    whether the three gave the same completions. The paper-sized batch is
    ``episodes=30`` (150 prompts)."""
    backend = backend or HFBackend(model, max_batch=max_batch)
    prompts = dining_prompts(backend, episodes, philosophers, prefix_tokens, tail_tokens)
    backend.generate(prompts[:2], max_new_tokens=2)  # warm-up
    results = {}
    backend.reuse_prefix = False
    results["naive"] = _timed(backend, lambda: [backend.generate([p], max_new_tokens=new_tokens)[0]
                                                for p in prompts[:naive_prompts]])
    results["batched"] = _timed(backend, lambda: backend.generate(prompts, max_new_tokens=new_tokens))
    backend.reuse_prefix = True
    results["prefix_reuse"] = _timed(backend, lambda: backend.generate(prompts, max_new_tokens=new_tokens))
    ids = {k: [c.token_ids for c in r.pop("completions")] for k, r in results.items()}
    for r in results.values():
        r["vs_naive"] = r["decisions_per_s"] / results["naive"]["decisions_per_s"]
    return {"model": backend.model, "dtype": str(backend.lm.dtype), "prompts": len(prompts),
            "prompt_tokens_mean": sum(len(backend.encode(p)) for p in prompts) / len(prompts),
            "same_completions": ids["batched"] == ids["prefix_reuse"] and ids["naive"] == ids["batched"][:naive_prompts],
            "loadavg": os.getloadavg()[0], "results": results}


def bench_streams(model: str = "smollm2-135m", streams: int = 8, steps: int = 10, new_tokens: int = 8,
                  max_batch: int = 64, backend: HFBackend | None = None) -> dict:
    """Bandit-shaped prompts (instructions + a history growing one line a step), every
    step one batched call over all streams: prompt tokens computed and seconds with
    per-stream KV (``streams=``) against shared-prefix reuse alone."""
    backend = backend or HFBackend(model, max_batch=max_batch)
    intro = ("You are in a room with five buttons: blue, green, red, yellow, purple. Each press gives a reward "
             "drawn from that button's own distribution. Maximise your total reward. Reply ACTION=<button>.\n")

    def prompt(s, t):
        lines = [f"Step {i}: pressed {('blue', 'green', 'red', 'yellow', 'purple')[(s * i + i // 3) % 5]}, "
                 f"reward {(s + i * 7) % 5}." for i in range(t)]
        return backend.render([{"role": "user", "content": intro + "\n".join(lines) + "\nWhich button now?"}])

    out = {}
    for mode in ("prefix_reuse", "streams"):
        keys = [f"bench-{s}" for s in range(streams)] if mode == "streams" else None
        backend.forget()
        runs = [_timed(backend, lambda t=t: backend.generate([prompt(s, t) for s in range(streams)],
                                                              max_new_tokens=new_tokens, streams=keys))
                for t in range(steps)]
        out[mode] = {k: sum(r[k] for r in runs) for k in ("seconds", "prefill_s", "decode_s", "prompt_tokens", "computed_tokens")}
    backend.forget()
    return {"model": backend.model, "streams": streams, "steps": steps, "loadavg": os.getloadavg()[0], "results": out}


def report(batch: dict | None = None, streams: dict | None = None) -> str:
    """The two benchmarks' results as plain text lines."""
    lines = []
    if batch:
        lines.append(f"{batch['model']} ({batch['dtype']}), {batch['prompts']} prompts of "
                     f"{batch['prompt_tokens_mean']:.0f} tokens, load {batch['loadavg']:.1f}, "
                     f"same completions: {batch['same_completions']}")
        for mode, r in batch["results"].items():
            lines.append(f"  {mode:13s} {r['decisions_per_s']:6.2f} decisions/s  x{r['vs_naive']:.2f} vs naive  "
                         f"prefill {r['prefill_s']:6.1f} s ({r['computed_tokens']} tokens)  decode {r['decode_s']:6.1f} s "
                         f"({r['new_tokens']} tokens)")
    if streams:
        lines.append(f"{streams['model']}, {streams['streams']} streams x {streams['steps']} steps, load {streams['loadavg']:.1f}")
        for mode, r in streams["results"].items():
            lines.append(f"  {mode:13s} {r['seconds']:6.1f} s  prompt tokens computed {r['computed_tokens']} "
                         f"of {r['prompt_tokens']}  prefill {r['prefill_s']:.1f} s  decode {r['decode_s']:.1f} s")
    return "\n".join(lines)
