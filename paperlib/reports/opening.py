"""How every notebook opens: what the paper reports (its numbers read from
``data/paper_reported.csv``, never typed), what this profile runs instead (which of our models
stands in for which of the paper's, at what size), and the knobs of the profile the notebook
reads, beside the paper profile's. A notebook calls :func:`opening` once, below its set-up cell."""

from __future__ import annotations

import re

import pandas as pd

# parameters, for the models whose name does not say it (the frontier models publish none)
_SIZES = {"claude-opus-4.7": None, "gpt-5.4": None, "gemini-3.1-pro": None, "grok-4.2": None}


def size(model: str) -> str:
    """A model's parameter count as its name gives it (``gemma2-27b``: 27B, ``smollm2-135m``: 135M),
    "unpublished" for the frontier models, "scripted" for a policy."""
    if model.startswith("policy:"):
        return "scripted"
    if model in _SIZES:
        return "unpublished"
    found = re.search(r"(\d+(?:\.\d+)?)([bm])\b", model.lower())
    return f"{found.group(1)}{found.group(2).upper()}" if found else "?"


def paper_numbers(reported: pd.DataFrame, ids) -> pd.DataFrame:
    """Rows ``ids`` of data/paper_reported.csv as a reader reads them: the id, what the paper
    reports, at which N or number of arms, the value (or its range) and where in the paper."""
    rows = reported.set_index("id").loc[list(ids)]

    def value(row) -> str:
        if pd.notna(row["value"]) and str(row["value"]).strip():
            return str(row["value"])
        return f"{row['low']} to {row['high']}"

    return pd.DataFrame(
        {
            "id": rows.index,
            "the paper reports": rows["claim"].to_numpy(),
            "N or arms": rows["n_philosophers_or_arms"].fillna("").astype(str).to_numpy(),
            "value": [value(row) for _, row in rows.iterrows()],
            "where": rows["source"].to_numpy(),
        }
    ).set_index("id")


def _models(value) -> list[str]:
    """The model names in a knob's value: a name, a tuple of names, or of (model, backend) pairs,
    or a recipe mapping with a "model"."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict) or hasattr(value, "keys"):
        return [value["model"]] if "model" in value else []
    return [item[0] if isinstance(item, tuple) else item for item in value or ()]


def stand_ins(settings, knob: str) -> str:
    """One sentence: the models this profile plays under ``knob`` against the paper profile's,
    each with its size."""
    from paperlib.profiles import get_profile

    ours = _models(getattr(settings, knob))
    paper = _models(getattr(get_profile("paper"), knob))
    named = lambda models: ", ".join(f"{m} ({size(m)})" for m in models) or "none"  # noqa: E731
    if ours == paper:
        return f"`{knob}`: the paper's own models, {named(ours)}."
    verb = "stands" if len(ours) == 1 else "stand"
    return f"`{knob}`: {named(ours)} {verb} in for the paper's {named(paper)}."


def knobs(settings, names) -> pd.DataFrame:
    """The profile's knobs ``names`` beside the paper profile's, and whether they differ."""
    from paperlib.profiles import get_profile

    paper = get_profile("paper")

    def shown(value) -> str:
        if hasattr(value, "keys"):
            return ", ".join(f"{k}={v}" for k, v in value.items())
        if isinstance(value, tuple) and len(value) > 4 and all(isinstance(v, int) for v in value):
            if list(value) == list(range(value[0], value[-1] + 1)):  # a run of integers, e.g. 0 to 100
                return f"{value[0]} to {value[-1]}"
        if isinstance(value, tuple):
            return ", ".join(f"{v[0]} ({v[1]})" if isinstance(v, tuple) else str(v) for v in value) or "none"
        return str(value)

    return pd.DataFrame(
        [
            {
                "knob": name,
                f"this run ({settings.name})": shown(getattr(settings, name)),
                "paper": shown(getattr(paper, name)),
                "differs": "yes" if getattr(settings, name) != getattr(paper, name) else "",
            }
            for name in names
        ]
    ).set_index("knob")


def opening(settings, reported: pd.DataFrame, ids, knob_names, model_knobs=()) -> list:
    """What a notebook shows first, to pass to ``display(*...)``: the paper's numbers ``ids``,
    the stand-in models under ``model_knobs``, and the knobs ``knob_names`` it reads."""
    from IPython.display import Markdown

    shown = [Markdown("**What the paper reports** (`data/paper_reported.csv`):"), paper_numbers(reported, ids)]
    lines = [f"**What the `{settings.name}` profile runs instead**" + (":" if model_knobs else ".")]
    lines += [f"- {stand_ins(settings, knob)}" for knob in model_knobs]
    if not knob_names:
        return [*shown, Markdown("\n".join(lines))]
    lines.append("\nThe knobs this notebook reads (`paperlib/profiles.py`), beside the paper profile's:")
    return [*shown, Markdown("\n".join(lines)), knobs(settings, knob_names)]
