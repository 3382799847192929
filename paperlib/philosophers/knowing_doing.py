"""Paper B's knowing-doing lens (its Fig. 5) turned on paper A's table **[ours]**.

Paper B asks a model to compute the UCB value of every arm (its *rationale*) and then
to act, and tabulates rationale correct / wrong against the class of the action. Here a
philosopher states, inside ``<sensible>TOOL</sensible>``, which of the six tools the
rules make sensible in its state, then calls a tool; each turn is classed as

- rationale ``right`` (the named tool is in the sensible set) or ``wrong`` (any other
  tool, or no readable tag: that share is also reported alone as ``no_rationale``);
- action ``sensible`` (in the sensible set, hence valid), ``valid_not_sensible`` or
  ``invalid_or_none`` (an invalid tool, or no tool call at all).

What is sensible is the rule set of ``sensible_tools``. The runner's step rows hold the
state *after* each round, so ``observations_before`` replays an episode's actions
through the rules to recover what each philosopher saw; ``classify`` judges every turn
on that, ``matrix`` tabulates shares with Wilson intervals, and
``ScriptedKnowingDoingPhilosopher`` writes completions whose cells are known in advance,
the validation of the whole chain (as paper B's matrix is validated in
``paperlib.bandits.scripted``). Notebook 06 plays its models through ``run_lens`` and writes
``lens_table`` and ``knowing_vs_doing``; what it says about them is in
``paperlib.reports.n06_knowing_doing_table``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from paperlib.philosophers.env import (
    ACTIONS,
    FREE,
    MODES,
    NO_ACTION,
    TOOLS,
    Observation,
    Table,
    act,
    initial_table,
    left_fork,
    observe,
    play_round,
    right_fork,
)
from paperlib.philosophers.episode import Decision
from paperlib.philosophers.parsing import RATIONALE_PATTERN, normalise, parse_action
from paperlib.philosophers.scripted import OTHER
from paperlib.stats import wilson_ci

RATIONALE_CLASSES = ("right", "wrong")
ACTION_CLASSES = ("sensible", "valid_not_sensible", "invalid_or_none")
STATS = ("share", "low", "high")

# -- what the rules make sensible ---------------------------------------------------


def _check_observation(obs: Observation) -> None:
    if (obs.holds_left and obs.left_free) or (obs.holds_right and obs.right_free):
        raise ValueError(f"observation holds a fork it also sees free: {obs}")
    if not (obs.ready or obs.holds_left or obs.holds_right):
        raise ValueError(f"observation is empty-handed but not ready, which the rules never produce: {obs}")


def sensible_tools(obs: Observation) -> frozenset[str]:
    """The tools the rules make sensible for a philosopher who sees ``obs``; never empty.

    Judged on the observation alone **[ours]**: a rationale can only be held to what
    the philosopher was told (the prompt shows its two forks, its meals and whether it
    must put both forks down before eating again). Meals and round play no part
    **[ours]**: fairness is the reward's business, not one turn's. The rules, each
    **[ours]**:

    1. Both forks, ready -> ``eat``: the one move that makes a meal; putting a fork down
       would throw the meal away.
    2. Both forks, not ready (it has eaten since it was last empty-handed) -> put either
       fork down (``put_down_left``, ``put_down_right``): it cannot eat again before it
       is empty-handed, and each held fork starves a neighbour; which one goes first
       does not matter.
    3. One fork, not ready -> put that fork down: the same reason, on the second fork;
       taking the other fork back would only hoard it.
    4. One fork, ready, the other fork free -> pick up the other fork: next round is a meal.
    5. One fork, ready, the other fork held by the neighbour -> put yours down: holding
       one fork while waiting for another is the hold-and-wait of a circular wait (the
       deadlock is every philosopher in this state), and the observation cannot tell a
       neighbour about to finish eating from one waiting too, so waiting (``think``) is
       not sensible.
    6. Empty-handed, both forks free -> pick up either (``pick_up_left``,
       ``pick_up_right``): either starts a meal; which side first is a coordination
       choice the rules do not settle.
    7. Empty-handed, exactly one fork free -> ``think``: taking the free fork would put
       it in state 5, whose sensible move is to put that fork straight back; on the way
       to a meal no sensible move is one the next sensible move undoes (tested on every
       reachable state), and the free fork stays free for the neighbour on that side.
    8. Empty-handed, both forks held by neighbours -> ``think``, the only valid tool.

    Every tool named is valid in that state (``valid_tools``; tested on every state the
    rules reach at N = 3 and 5). An observation the rules cannot produce (a fork both
    held and free; empty-handed yet not ready) raises ValueError.
    """
    _check_observation(obs)
    held = [side for side, holds in (("left", obs.holds_left), ("right", obs.holds_right)) if holds]
    free = {"left": obs.left_free, "right": obs.right_free}
    if len(held) == 2:
        return frozenset({"eat"}) if obs.ready else frozenset({"put_down_left", "put_down_right"})
    if len(held) == 1:
        (side,) = held
        if obs.ready and free[OTHER[side]]:
            return frozenset({f"pick_up_{OTHER[side]}"})
        return frozenset({f"put_down_{side}"})
    if free["left"] and free["right"]:
        return frozenset({"pick_up_left", "pick_up_right"})
    return frozenset({"think"})


def valid_tools(table: Table, i: int) -> frozenset[str]:
    """The tools that succeed for philosopher ``i`` acting alone on ``table`` (``env.act``)."""
    return frozenset(tool for tool in TOOLS if act(table, i, tool)[1])


def table_showing(obs: Observation) -> Table:
    """A table on which philosopher ``obs.philosopher`` sees exactly ``obs``.

    A fork the observation shows held by someone else is given to the neighbour who
    shares it; every other fork is free. Whether a philosopher's own tool is valid
    depends only on its own forks and readiness, so ``valid_tools`` on this table is
    ``valid_tools`` on any table that shows ``obs`` (tested on every reachable state).
    """
    _check_observation(obs)
    n, i = obs.n, obs.philosopher
    holder = [FREE] * n
    holder[left_fork(i, n)] = i if obs.holds_left else FREE if obs.left_free else (i - 1) % n
    holder[right_fork(i, n)] = i if obs.holds_right else FREE if obs.right_free else (i + 1) % n
    ready, meals = [True] * n, [0] * n
    ready[i], meals[i] = obs.ready, obs.meals
    return Table(n=n, holder=tuple(holder), ready=tuple(ready), meals=tuple(meals), round=obs.round - 1)


def action_class(obs: Observation, action: str) -> str:
    """``sensible``, ``valid_not_sensible`` or ``invalid_or_none`` for ``action`` taken on ``obs``.

    Validity is judged on the state the philosopher saw **[ours]**, as paper B judges an
    action against the history the model saw: a pick-up lost to a lower id in a
    simultaneous round (the runner's ``valid`` is False) still counts as the decision
    it was, and a pick-up of a fork seen held is invalid even if its holder put it
    down in the same round.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    if action not in valid_tools(table_showing(obs), obs.philosopher):
        return "invalid_or_none"
    return "sensible" if action in sensible_tools(obs) else "valid_not_sensible"


# -- the rationale ---------------------------------------------------------------------

# The format and the instruction live with the prompts (``prompts.RATIONALE_FORMAT``,
# ``prompts.RATIONALE_INSTRUCTION``, version ``sensible-v1``); the tag's pattern with the
# parser, which must not read a stated rationale as a call (``parsing.RATIONALE_PATTERN``).
_EDGES = " \t\r\n`'\"."


def parse_rationale(text: object) -> str | None:
    """The tool named by the last well-formed ``<sensible>...</sensible>`` tag, or None.

    Tolerance **[ours]**: tag and name in any case; spaces inside the brackets and
    around the name; the name in quotes or backticks, followed by a period, written with
    spaces or hyphens ("pick up left"), as ``parsing.normalise`` reads tool names. A
    well-formed tag has no ``<`` or ``>`` inside, so of nested tags the innermost
    counts, and an unclosed tag (a truncated completion) is no rationale. The *last*
    tag is the model's final statement: if it names no tool (empty, unknown, two
    names) the result is None, not an earlier tag it superseded **[ours]**. Tags in
    ``<think>`` reasoning count (paper B reads its rationale from the reasoning too).
    Never raises: non-strings give None.
    """
    if not isinstance(text, str):
        return None
    try:
        tags = RATIONALE_PATTERN.findall(text)
        return normalise(tags[-1].strip(_EDGES)) if tags else None
    except Exception:  # a parser bug must not crash an analysis; count it as no rationale
        return None


# -- pre-turn observations from the runner's step rows --------------------------------

OBSERVED = ("holds_left", "holds_right", "left_free", "right_free", "meals", "ready")
BEFORE_COLUMNS = tuple(f"before_{field}" for field in OBSERVED)
REPLAY_COLUMNS = ("turn", "seat", "action", "valid", "holds_left", "holds_right", "meals")


def _require(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"step rows lack column(s) {', '.join(missing)}")


def observations_before(
    steps: pd.DataFrame, mode: str = "simultaneous", by: Sequence[str] = ("episode",)
) -> pd.DataFrame:
    """``steps`` (runner step rows, sorted) with what each philosopher saw before its turn.

    The runner records the state after each round; the rules are deterministic, so
    replaying an episode's actions from ``initial_table(n)`` (``play_round`` in
    simultaneous mode, ``act`` seat by seat in sequential mode, where a seat sees its
    predecessors' moves) recovers every observation exactly. Needs ``by`` and
    ``REPLAY_COLUMNS`` (``turn`` is the round, ``seat`` the philosopher). Adds ``n``
    (the number of seats in the episode) and ``before_<field>`` for each observation
    field in ``OBSERVED``. ``by`` names the columns that identify an episode (add
    ``model`` and ``n`` for stored rows of several runs). Raises ValueError when the
    replay does not reproduce the recorded forks, meals and validity (e.g. the wrong
    ``mode``), or an episode's turns are not 1, 2, ... with every seat once.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    _require(steps, [*by, *REPLAY_COLUMNS])
    out = steps.sort_values([*by, "turn", "seat"], kind="stable")
    seen: dict[str, list] = {column: [] for column in ("n", *BEFORE_COLUMNS)}
    for key, episode in out.groupby(list(by), sort=False, dropna=False):
        n = episode["seat"].nunique()
        table = initial_table(n)
        for rnd, rows in episode.groupby("turn", sort=True):
            if rnd != table.round + 1 or rows["seat"].tolist() != list(range(n)):
                raise ValueError(
                    f"episode {key}: turn {rnd} is not round {table.round + 1} with seats 0..{n - 1} once each"
                )
            actions = rows["action"].tolist()
            if mode == "simultaneous":
                observations = [observe(table, i) for i in range(n)]
                table, valid = play_round(table, actions, mode)
            else:
                observations, valid = [], []
                for i, action in enumerate(actions):
                    observations.append(observe(table, i))
                    table, ok = act(table, i, action)
                    valid.append(ok)
                table = replace(table, round=rnd)
            recorded = zip(rows["holds_left"], rows["holds_right"], rows["meals"], rows["valid"])
            for i, (left, right, meals, ok) in enumerate(recorded):
                if (bool(left), bool(right), int(meals), bool(ok)) != (*table.holds(i), table.meals[i], valid[i]):
                    raise ValueError(f"episode {key}: round {rnd}, seat {i} does not replay in {mode} mode")
            for obs in observations:
                seen["n"].append(n)
                for field in OBSERVED:
                    seen[f"before_{field}"].append(getattr(obs, field))
    if "n" in out.columns and (out["n"].to_numpy() != np.asarray(seen["n"])).any():
        raise ValueError("the n column disagrees with the number of seats in an episode")
    return out.assign(**seen)


# -- classification and the matrix ----------------------------------------------------

CLASSIFY_COLUMNS = ("n", "turn", "seat", "action", "raw_completion", *BEFORE_COLUMNS)


def classify(steps: pd.DataFrame) -> pd.DataFrame:
    """``steps`` with each turn judged: ``sensible`` (the set, in tool order), ``rationale``
    (the tool named; missing when none is readable), ``rationale_right``,
    ``no_rationale``, ``valid_as_seen`` and ``action_class``.

    Needs ``CLASSIFY_COLUMNS``: the pre-turn observation (``observations_before`` adds
    it to runner rows), the action and the completion. A turn without a readable
    rationale counts as wrong.
    """
    _require(steps, CLASSIFY_COLUMNS)
    judged: dict[str, list] = {
        c: [] for c in ("sensible", "rationale", "rationale_right", "no_rationale", "valid_as_seen", "action_class")
    }
    for row in steps[list(CLASSIFY_COLUMNS)].itertuples(index=False):
        obs = Observation(
            philosopher=int(row.seat),
            n=int(row.n),
            round=int(row.turn),
            **{field: getattr(row, f"before_{field}") for field in OBSERVED},
        )
        sensible = sensible_tools(obs)
        rationale = parse_rationale(row.raw_completion)
        cls = action_class(obs, row.action)
        judged["sensible"].append(tuple(t for t in TOOLS if t in sensible))
        judged["rationale"].append(rationale)
        judged["rationale_right"].append(rationale in sensible)
        judged["no_rationale"].append(rationale is None)
        judged["valid_as_seen"].append(cls != "invalid_or_none")
        judged["action_class"].append(cls)
    return steps.assign(**judged)


def matrix(classified: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """The 2 x 3 matrix: rationale right / wrong by action class, as shares of all turns.

    Each cell holds its ``share`` and Wilson interval (``low``, ``high``) over all
    turns: columns are (action class, statistic). ``matrix(...).xs("share", axis=1,
    level=1) * 100`` is laid out as paper B's Fig. 5 (% of all steps).
    """
    _require(classified, ("rationale_right", "action_class"))
    if not len(classified):
        raise ValueError("no turns to tabulate")
    unknown = sorted(set(classified["action_class"]) - set(ACTION_CLASSES))
    if unknown:
        raise ValueError(f"unknown action class {unknown[0]!r}; expected one of {', '.join(ACTION_CLASSES)}")
    rationale = np.where(classified["rationale_right"].astype(bool), "right", "wrong")
    counts = pd.crosstab(rationale, classified["action_class"].to_numpy())
    counts = counts.reindex(index=list(RATIONALE_CLASSES), columns=list(ACTION_CLASSES), fill_value=0)
    cells = {
        (cls, stat): [wilson_ci(int(counts.loc[r, cls]), len(classified), confidence)[k] for r in RATIONALE_CLASSES]
        for cls in ACTION_CLASSES
        for k, stat in enumerate(STATS)
    }
    return pd.DataFrame(cells, index=pd.Index(RATIONALE_CLASSES, name="rationale"))


def no_rationale_share(classified: pd.DataFrame, confidence: float = 0.95) -> tuple[float, float, float]:
    """Share of turns with no readable rationale (all inside the ``wrong`` row), with its Wilson interval."""
    _require(classified, ("no_rationale",))
    if not len(classified):
        raise ValueError("no turns to tabulate")
    return wilson_ci(int(classified["no_rationale"].sum()), len(classified), confidence)


# -- a scripted agent whose matrix is known ---------------------------------------------

_NAMED = (
    "<sensible>{}</sensible>",
    "< sensible > {} </ sensible >",
    "<SENSIBLE>`{}`</SENSIBLE>",
    '<Sensible>"{}".</Sensible>',
)
_UNREADABLE = (
    "I will not name a sensible tool.",
    "Sensible: <sensible></sensible>",
    "The sensible tool is <sensible>{}",
    "Sensible: <sensible>grab_both_forks</sensible>",
)
_NO_CALL = ("I will wait and see.", '<tool_call>{"name": "grab_fork"}</tool_call>')
_CALL = '<tool_call>\n{{"name": "{}", "arguments": {{}}}}\n</tool_call>'


class ScriptedKnowingDoingPhilosopher:
    """A philosopher policy whose rationales and action classes are drawn with known shares.

    Each turn, from a generator seeded by the episode seed, it draws its rationale:
    right with probability ``p_right`` (a tool of the sensible set), else wrong (a
    tool outside it), and a wrong one is written unreadably (no tag, empty, unclosed
    or unknown tool) with probability ``p_missing``. Independently it draws its
    action class from ``mix`` over ``ACTION_CLASSES``, renormalised over the classes
    possible in its state (``valid_not_sensible`` is impossible when ``think`` is the
    only valid tool), then a tool of that class; ``invalid_or_none`` includes writing
    no readable call. The completion holds a line describing its forks, the rationale
    in one of several tag spellings, and a Hermes ``<tool_call>`` line; the action is
    ``parse_action`` of that text, as for an LLM. Its intentions are step columns
    (``intended_rationale``, ``intended_no_rationale``, ``intended_class``), and
    ``matrix`` of its classified turns must equal the matrix of its intentions exactly.
    """

    name = "scripted_knowing_doing"

    def __init__(self, p_right: float = 0.7, mix: Sequence[float] = (0.6, 0.25, 0.15), p_missing: float = 0.3):
        mix = np.asarray(mix, float)
        if not (
            0 <= p_right <= 1 and 0 <= p_missing <= 1 and mix.shape == (3,) and mix.min() >= 0 and mix[0] + mix[2] > 0
        ):
            raise ValueError(
                f"p_right and p_missing must be in [0, 1] and mix three non-negative weights with "
                f"sensible or invalid_or_none above 0 (one is always possible), "
                f"got {p_right}, {p_missing}, {mix}"
            )
        self.p_right, self.mix, self.p_missing = p_right, mix, p_missing

    def reset(self, seeds: list[int]) -> None:
        self.generators = [np.random.default_rng(seed) for seed in seeds]

    def act(self, turns) -> list[Decision]:
        return [self._decide(turn) for turn in turns]

    def _decide(self, turn) -> Decision:
        rng, obs = self.generators[turn.episode], turn.observation
        sensible, valid = sensible_tools(obs), valid_tools(turn.table, obs.philosopher)
        options = {
            "sensible": [t for t in TOOLS if t in sensible],
            "valid_not_sensible": [t for t in TOOLS if t in valid - sensible],
            "invalid_or_none": [t for t in TOOLS if t not in valid] + [NO_ACTION],
        }
        weights = self.mix * [bool(options[c]) for c in ACTION_CLASSES]
        kind = ACTION_CLASSES[rng.choice(3, p=weights / weights.sum())]
        action = options[kind][rng.integers(len(options[kind]))]
        right = bool(rng.random() < self.p_right)
        missing = not right and bool(rng.random() < self.p_missing)
        names = [t for t in TOOLS if (t in sensible) == right]
        named = names[rng.integers(len(names))]
        forms = _UNREADABLE if missing else _NAMED
        rationale = forms[rng.integers(len(forms))].format(named)
        if action == NO_ACTION:
            call = _NO_CALL[rng.integers(len(_NO_CALL))]
        else:
            call = _CALL.format(action)
        held = obs.holds_left + obs.holds_right
        text = f"I am philosopher {obs.philosopher} and I hold {held} fork{'s' * (held != 1)}.\n{rationale}\n{call}"
        return Decision(
            action=parse_action(text),
            raw_completion=text,
            extra={
                "intended_rationale": "right" if right else "wrong",
                "intended_no_rationale": missing,
                "intended_class": kind,
            },
        )


# -- the runs of notebook 06 and their tables -------------------------------------------

LENS_PROMPT = "sensible-v1"


def run_lens(
    settings, seed: int, rollouts_dir, adapter: str = "base", progress: bool = False, backends: dict | None = None
) -> pd.DataFrame:
    """Notebook 06: every model of ``settings.lens_models`` at every N of ``lens_ns``,
    ``lens_episodes`` episodes, prompt ``sensible-v1``, free decisions (the rationale is
    written text), through the resumable evaluation harness (one store per model and
    ``adapter`` label under ``rollouts_dir``); returns the classified step rows of every model.
    ``backends`` (model -> a built backend, e.g. over a trained adapter): only those models
    play, on those backends."""
    from pathlib import Path

    from paperlib.data import RolloutStore
    from paperlib.philosophers.evaluate import evaluate
    from paperlib.philosophers.llm import make_llm_policy

    judged = []
    for model, backend in settings.lens_models:
        if backends is not None:
            if model not in backends:
                continue
            backend = backends[model]
        options = {"max_batch": settings.gap_max_batch} if backend == "hf" else {}
        policy = make_llm_policy(
            model,
            backend=backend,
            prompt=LENS_PROMPT,
            decision="free",
            max_new_tokens=settings.lens_tokens,
            seed=seed,
            backend_options=options,
        )
        store = RolloutStore(Path(rollouts_dir) / re.sub(r"[^\w.-]+", "_", f"{model}-{adapter}"))
        _, steps = evaluate(
            model,
            settings.lens_ns,
            settings.lens_episodes,
            rounds=settings.rounds,
            mode=settings.mode,
            seed=seed,
            store=store,
            policy=policy,
            labels={"adapter": adapter},
            progress=progress,
        )
        seen = observations_before(steps, settings.mode, by=("model", "n", "episode"))
        judged.append(classify(seen).assign(adapter=adapter))
    return pd.concat(judged, ignore_index=True)


def lens_table(
    classified: pd.DataFrame, by: Sequence[str] = ("model", "adapter", "n"), confidence: float = 0.95
) -> pd.DataFrame:
    """One row per ``by`` group × matrix cell (rationale × action class): the cell's share of
    the group's turns with its Wilson interval, and the group's turns."""
    rows = []
    for key, group in classified.groupby(list(by), sort=False):
        cells = matrix(group, confidence)
        for rationale in RATIONALE_CLASSES:
            for cls in ACTION_CLASSES:
                rows.append(
                    {
                        **dict(zip(by, key)),
                        "rationale": rationale,
                        "action_class": cls,
                        "turns": len(group),
                        **{stat: float(cells.loc[rationale, (cls, stat)]) for stat in STATS},
                    }
                )
    return pd.DataFrame(rows)


def knowing_vs_doing(
    classified: pd.DataFrame, by: Sequence[str] = ("model", "adapter", "n"), confidence: float = 0.95
) -> pd.DataFrame:
    """Per group: the share of turns whose rationale is right (knowing), whose action is
    sensible (doing), and with no readable rationale, each with its Wilson interval."""
    rows = []
    for key, group in classified.groupby(list(by), sort=False):
        row = {**dict(zip(by, key)), "turns": len(group)}
        for name, hits in (
            ("knowing", group["rationale_right"]),
            ("doing", group["action_class"] == "sensible"),
            ("no_rationale", group["no_rationale"]),
        ):
            row[name], row[f"{name}_low"], row[f"{name}_high"] = wilson_ci(int(hits.sum()), len(group), confidence)
        rows.append(row)
    return pd.DataFrame(rows)
