"""Claims: a paper's number beside ours, in one schema for every notebook that compares them.

A claim is one number a paper reports (a row of ``paper_reported.csv``, by its id) set
beside what our run measured for one model, with the paper's effect written as a test on
our number. The verdict is computed here by one rule (:func:`verdict`), never typed, with four
outcomes:

- ``supports``: our number shows the paper's effect (or its value);
- ``contradicts``: our number shows the opposite, or excludes the paper's effect;
- ``inconclusive``: our interval is compatible both with the paper's effect and with its absence;
- ``cannot test``: this profile has no such run, or the run fails a competence gate
  (:data:`GATES`: the behaviour measured is not the model's); the note says which and why.

Each row names its ``rule``: ``value`` (the paper's single number, or its range, against our
interval), ``above`` / ``below`` (our interval against a threshold), ``higher`` / ``lower``
(an effect: ``ours`` is the difference treatment - control, tested) or ``no effect`` (an
equivalence test at :data:`NULL_MARGIN_D`). Where the effect is read from adapters trained with
several seeds, the pooled test counts only when every seed's own difference has its sign
(``seed_low``, ``seed_high``: :func:`seeds_agree`). Every notebook's family of tests is adjusted
together (Holm, :func:`paperlib.stats.holm`): ``p`` and ``p_tost`` are stored raw and adjusted,
and the verdict reads the adjusted ones.

Our own claims, on what neither paper reports (notebook 05: paper A's prescriptions, which the
paper proposes and does not run), take :data:`OURS` for ``reported``: no paper number, the paper
they concern given in the row, the same rules and verdict.

Each notebook that compares with a paper writes its claims to ``<data dir>/NN_claims.parquet``
(NN: its number) with :func:`write_claims`, which also shows them; notebook 99 stacks every
such file into ``<data dir>/claims.csv`` with :func:`collect_claims`. Each notebook's claims rows
are built in its report module (``paperlib.reports``), as are notebook 99's sentences on the
collected table.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from paperlib import paths
from paperlib.stats import ALPHA

COLUMNS = (
    "claim",  # unique id: "<notebook number>:<reported>:<model>"
    "paper",  # "A" or "B", as paper_reported.csv says
    "reported",  # the id in paper_reported.csv; several joined by "/" when one number of ours answers them
    "what",  # the quantity compared
    "model",  # whose number ours is: the model or scripted policy, and its decision mode if it has one
    "paper_value",  # the paper's number as it prints it (text: ranges, "not significant")
    "ours",  # our number (NaN: no such run on this profile); for an effect, the difference treatment - control
    "ours_low",  # its 95% interval, within the quantity's possible range (NaN: an exact number)
    "ours_high",
    "seed_low",  # an effect read from adapters of several training seeds: the lowest and highest of the
    "seed_high",  # seeds' own differences (stats.per_seed_differences); NaN: one seed or none
    "effect_if",  # the paper's effect, as a test on our number
    "rule",  # one of RULES: how the verdict reads ours (see verdict)
    "reference",  # the number the rule sets ours against: the paper's value (or its range's low end), a threshold
    "reference_high",  # the high end of the paper's range (rule "value"), else NaN
    "test",  # the test behind p and p_tost, in words ("" where the rule reads the interval)
    "p",  # two-sided p of the difference (NaN: no test)
    "p_holm",  # p adjusted over the notebook's family of tests (Holm)
    "p_tost",  # p of the equivalence test at the margin the test names (NaN: none)
    "p_tost_holm",
    "verdict",  # one of VERDICTS (see verdict)
    "note",  # why a row cannot be tested (no run, or the gate and its measured value), then what else a reader needs
    "notebook",  # the notebook that computed it
    "source",  # the data it was computed from, relative to the data folder
    "profile",
)
VERDICTS = ("supports", "contradicts", "inconclusive", "cannot test")
RULES = ("value", "above", "below", "higher", "lower", "no effect")
OURS = "ours"  # ``reported`` of our own claims: no number in paper_reported.csv to set ours beside
OURS_VALUE = "none: our own claim"  # their paper_value
COLLECTED = "claims.csv"
COLLECTOR = "99_claims"  # the notebook that lists the reported numbers no notebook addresses
UNADDRESSED = "no notebook sets our number beside it on this profile yet"
NOT_RUN = "no such run on this profile"
_FILES = "[0-9][0-9]_claims.parquet"

# The equivalence margin of every claim of no effect, as a standardised difference (Cohen's d;
# d_z, the mean difference over the differences' SD, where the design is paired): 0.2, Cohen's
# (1988, Statistical Power Analysis for the Behavioral Sciences, ch. 2) "small" effect, the
# smallest it names; tested by the two one-sided tests as Lakens (2017, "Equivalence tests",
# Soc. Psychol. Personal. Sci. 8:355) sets them out. Paper A's own null effect (A10, g = -0.11)
# lies inside it. In raw units: 0.2 times the SD the effect divides by.
NULL_MARGIN_D = 0.2

# How stored numbers are rounded (to what the notebooks print), so that a rebuild on another
# CPU writes the same bytes: values to DECIMALS places, p-values to P_DIGITS significant digits.
DECIMALS = 3
P_DIGITS = 2


@dataclass(frozen=True)
class Gate:
    """A competence gate: a run's claim is tested only where ``measured`` is at least
    (``at_least``) or at most ``threshold``; else the claim ``cannot test``, and the note says
    which gate and the measured value. ``source``: where the threshold comes from."""

    name: str
    threshold: float
    at_least: bool
    source: str

    def check(self, measured: float, whose: str = "") -> str:
        """Empty where ``measured`` passes; else the note of a gated row."""
        if measured == measured and (measured >= self.threshold if self.at_least else measured <= self.threshold):
            return ""
        shown = "not measured" if measured != measured else f"{measured:.2f}"
        bound = f"{'at least' if self.at_least else 'at most'} {self.threshold:g}"
        return f"gate '{self.name}': {whose + ' ' if whose else ''}{shown}, needs {bound}"


OWN_DECISIONS = Gate(
    "own decisions",
    0.8,
    True,
    "[ours]: the share of the decisions measured that the model made itself, not the random "
    "fallback that plays for an invalid or missing answer. Below 0.8 a fifth or more of the "
    "behaviour is the fallback's, which can move a mean or a share by a fifth of its range on "
    "its own: B24/B26 rested on a base model whose every move was the fallback's.",
)
WROTE_MEASURED = Gate(
    "wrote what is measured",
    0.8,
    True,
    "[ours]: the share of steps in which the model wrote what the claim reads (a rationale for "
    "a knowing claim, a UCB value for B10-B16). Below 0.8 a fifth or more of the steps hold "
    "nothing to read, and a share of correct rationales is mostly a share of silence.",
)
NOT_DEGENERATE = Gate(
    "not at the degenerate maximum",
    0.5,
    False,
    "[ours]: the share of episodes (or training steps) at paper A's reward maximum with no "
    "meal: 1.0 for not acting at all (notebook 01, A18). Above 0.5 most of the mean is that "
    "maximum, which says nothing about coordination: A09/A10's adapter sat at 1.0 with zero meals.",
)
GATES = (OWN_DECISIONS, WROTE_MEASURED, NOT_DEGENERATE)
DEGENERATE_REWARD = 0.995  # a reward "at the maximum" of 1.0 (as notebook 02's A13 test) [ours]


def gated(*checks: str) -> str:
    """The failed gates among ``checks`` (each a :meth:`Gate.check`), joined; "" where all pass."""
    return "; ".join(check for check in checks if check)


def degenerate_share(episodes: pd.DataFrame, reward: str = "reward", meals: str = "meals_total") -> float:
    """The share of ``episodes`` at paper A's reward maximum with no meal (:data:`NOT_DEGENERATE`'s measure)."""
    if episodes.empty:
        return math.nan
    return float(((episodes[reward] >= DEGENERATE_REWARD) & (episodes[meals] == 0)).mean())


def verdict(
    rule,
    ours,
    low=math.nan,
    high=math.nan,
    reference=math.nan,
    reference_high=math.nan,
    p=math.nan,
    p_tost=math.nan,
    gate: str = "",
    seed_low=math.nan,
    seed_high=math.nan,
) -> str:
    """The rule every claim's verdict follows, written once. ``p`` and ``p_tost`` are the
    family-adjusted ones; ``low``/``high``: our 95% interval (NaN: ``ours`` is exact).

    - No number of ours, no rule, or a failed ``gate``: ``cannot test``.
    - ``value`` (a paper's single number, or its range ``reference``..``reference_high``):
      ``supports`` where it meets our interval, else ``contradicts``.
    - ``above`` / ``below`` ``reference``: ``supports`` where our whole interval lies on the
      paper's side, ``contradicts`` where it lies wholly on the other, else ``inconclusive``.
    - ``higher`` / ``lower`` (an effect; ``ours`` the difference): ``supports`` where ``p`` <
      ALPHA with the paper's sign, ``contradicts`` where ``p`` < ALPHA with the other sign or the
      equivalence test excludes an effect of the margin's size (``p_tost`` < ALPHA), else
      ``inconclusive``.
    - ``no effect``: ``supports`` only where the equivalence test holds (``p_tost`` < ALPHA),
      ``contradicts`` where the difference is significant (``p`` < ALPHA), else ``inconclusive``:
      a difference that is merely not significant supports nothing.
    - A significant difference (``higher``, ``lower``, ``no effect``) where ``seed_low`` and
      ``seed_high`` give the training seeds' own differences counts only where they all have its
      sign (:func:`seeds_agree`); else ``inconclusive``.
    """
    if gate or pd.isna(rule) or pd.isna(ours):
        return "cannot test"
    low, high = (ours, ours) if pd.isna(low) or pd.isna(high) else (low, high)
    if rule == "value":
        top = reference if pd.isna(reference_high) else reference_high
        return "supports" if low <= top and reference <= high else "contradicts"
    if rule in ("above", "below"):
        beyond, short = (low > reference, high < reference) if rule == "above" else (high < reference, low > reference)
        return "supports" if beyond else "contradicts" if short else "inconclusive"
    if overruled_by_seeds(rule, ours, p, seed_low, seed_high):
        return "inconclusive"
    significant = p < ALPHA and ours != 0
    if rule in ("higher", "lower"):
        if significant:
            return "supports" if (ours > 0) == (rule == "higher") else "contradicts"
        return "contradicts" if p_tost < ALPHA else "inconclusive"
    if rule == "no effect":
        return "supports" if p_tost < ALPHA else "contradicts" if significant else "inconclusive"
    raise ValueError(f"rule {rule!r} is not one of {', '.join(RULES)}")


# [ours] The pooled tests pair by held-out key on the mean of the seeds' adapters, so their interval
# holds the instances' variation and not the training seeds'; with three seeds (paper B's number) a
# test with the seeds as units has almost no power. So a significant difference read from several
# training seeds counts only where every seed's own difference has its sign: one seed that does not
# move, or moves the other way, makes the row ``inconclusive`` (the note says so, with the range).
def seeds_agree(ours, seed_low, seed_high) -> bool:
    """True where every training seed's own difference (``seed_low`` to ``seed_high``) has the
    sign of the pooled one, ``ours``, or where no seeds are given (NaN)."""
    if pd.isna(seed_low) or pd.isna(seed_high):
        return True
    return seed_low > 0 if ours > 0 else seed_high < 0


def overruled_by_seeds(rule, ours, p, seed_low, seed_high) -> bool:
    """Whether an effect's significant pooled difference (rule ``higher``, ``lower`` or ``no effect``,
    ``p`` < ALPHA) is not shared by every training seed (:func:`seeds_agree`): the row is then
    ``inconclusive``, whatever the rule would read otherwise."""
    significant = p < ALPHA and ours != 0
    return rule in ("higher", "lower", "no effect") and significant and not seeds_agree(ours, seed_low, seed_high)


def seed_range(differences: dict) -> dict:
    """A claim's ``seed_low`` and ``seed_high`` from ``stats.per_seed_differences`` (NaN where it
    holds fewer than two seeds)."""
    values = [d for d in differences.values() if d == d]
    if len(values) < 2:
        return {"seed_low": math.nan, "seed_high": math.nan}
    return {"seed_low": min(values), "seed_high": max(values)}


def reported_numbers() -> pd.DataFrame:
    """``paper_reported.csv``, indexed by id."""
    return pd.read_csv(paths.PAPER_REPORTED, dtype={"value": str, "low": str, "high": str}).set_index("id")


_NUMBERS = ("ours", "ours_low", "ours_high", "seed_low", "seed_high", "reference", "reference_high")
_PVALUES = ("p", "p_tost")


def claims_table(rows: pd.DataFrame, notebook: str, profile: str) -> pd.DataFrame:
    """``rows`` in the schema, checked: each holds ``reported``, ``what``, ``model``, ``ours``,
    ``effect_if``, ``rule`` and ``source``, and may hold ``paper_value`` (default: the value, or
    low to high, in ``paper_reported.csv``), ``ours_low``, ``ours_high``, ``reference``,
    ``reference_high``, ``test``, ``p``, ``p_tost``, ``gate`` (a failed gate, :func:`gated`) and
    ``note``. The rows are one notebook's family of tests: every ``p`` and ``p_tost`` is
    Holm-adjusted together (``p_holm``, ``p_tost_holm``). Numbers are rounded as stored
    (:data:`DECIMALS`, :data:`P_DIGITS`), and the verdict (:func:`verdict`) is read from the
    stored numbers. A row that cannot be tested says why at the start of its note. Our own claims
    (``reported`` :data:`OURS`) give ``paper``, and their id ends with ``what``."""
    table = rows.assign(
        claim=[
            f"{notebook[:2]}:{ids}:{model}" + (f":{what}" if ids == OURS else "")
            for ids, model, what in zip(rows["reported"], rows["model"], rows["what"])
        ],
        notebook=notebook,
        profile=profile,
    )
    for column in ("paper_value", "rule", "test", "gate", "note", *_NUMBERS, *_PVALUES):
        if column not in table:
            table[column] = math.nan if column in _NUMBERS + _PVALUES else None
    table = table.astype({column: float for column in _NUMBERS + _PVALUES})
    for column in _NUMBERS:
        table[column] = table[column].round(DECIMALS)
    adjusted = _holm_family(table)
    table["p_holm"], table["p_tost_holm"] = adjusted[: len(table)], adjusted[len(table) :]
    for column in (*_PVALUES, "p_holm", "p_tost_holm"):
        table[column] = [_significant(value) for value in table[column]]
    gates = table["gate"].fillna("").astype(str)
    table["verdict"] = [
        verdict(
            r.rule,
            r.ours,
            r.ours_low,
            r.ours_high,
            r.reference,
            r.reference_high,
            r.p_holm,
            r.p_tost_holm,
            g,
            r.seed_low,
            r.seed_high,
        )
        for r, g in zip(table.itertuples(), gates)
    ]
    notes = table["note"].fillna("").astype(str)
    table["note"] = [
        _why_not(gate, r.ours, note) if r.verdict == "cannot test" else _seeds_note(r, note)
        for gate, note, r in zip(gates, notes, table.itertuples())
    ]
    table["rule"] = table["rule"].fillna("").astype(str)
    table["test"] = table["test"].fillna("").astype(str)
    reported = _check_cited(table, "claims table")
    given = table["paper"] if "paper" in table else [None] * len(table)
    table["paper"] = [
        paper if ids == OURS else reported.loc[ids.split("/")[0], "paper"]
        for ids, paper in zip(table["reported"], given)
    ]
    table["paper_value"] = [
        OURS_VALUE if ids == OURS else value if isinstance(value, str) else _printed(reported, ids)
        for value, ids in zip(table["paper_value"], table["reported"])
    ]
    return check_claims(table[list(COLUMNS)])


def _holm_family(table: pd.DataFrame) -> np.ndarray:
    """Holm-adjusted ``p`` then ``p_tost`` of every row: one family, the notebook's tests."""
    from paperlib.stats import holm

    return holm(np.concatenate([table["p"].to_numpy(float), table["p_tost"].to_numpy(float)]))


def _significant(p: float) -> float:
    """``p`` to :data:`P_DIGITS` significant digits, as the notebooks print it."""
    return float(f"{p:.{P_DIGITS}g}") if p == p else math.nan


def _why_not(gate: str, ours: float, note: str) -> str:
    """The note of a row that cannot be tested: the failed gate, or that no such run exists, first."""
    if gate:
        return f"cannot test: {gate}" + (f"; {note}" if note else "")
    if ours != ours and not note:
        return NOT_RUN
    return note


def _seeds_note(r, note: str) -> str:
    """``note``, led by why the row is ``inconclusive`` where the seeds alone made it so (:func:`seeds_agree`)."""
    if overruled_by_seeds(r.rule, r.ours, r.p_holm, r.seed_low, r.seed_high):
        why = (
            f"inconclusive: the pooled difference is significant but not in every training seed "
            f"(the seeds' own differences run from {r.seed_low:+.3f} to {r.seed_high:+.3f})"
        )
        return f"{why}; {note}" if note else why
    return note


def _printed(reported: pd.DataFrame, ids: str) -> str:
    """The paper's numbers of ``ids`` as text, each its value or its range low to high."""
    numbers = reported.loc[ids.split("/")]
    return " / ".join(
        value if isinstance(value, str) else f"{low} to {high}"
        for value, low, high in zip(numbers["value"], numbers["low"], numbers["high"])
    )


def _check_cited(table: pd.DataFrame, where: str) -> pd.DataFrame:
    """paper_reported.csv (see reported_numbers) if every claim of ``table`` cites ids of it."""
    reported = reported_numbers()
    for claim, ids in zip(table["claim"], table["reported"]):
        unknown = [id_ for id_ in str(ids).split("/") if id_ not in reported.index and id_ != OURS]
        if unknown:
            raise ValueError(f"{where}: claim {claim!r} cites {unknown[0]!r}, not an id of paper_reported.csv")
    return reported


def check_claims(table: pd.DataFrame, where: str = "claims table") -> pd.DataFrame:
    """``table`` if it holds every column, cites only ids of ``paper_reported.csv``, gives no
    claim id twice and only known verdicts; else a one-line ValueError naming the first fault."""
    missing = [column for column in COLUMNS if column not in table]
    if missing:
        raise ValueError(f"{where} lacks the column {missing[0]!r} (a claims table has {', '.join(COLUMNS)})")
    _check_cited(table, where)
    twice = table["claim"][table["claim"].duplicated()]
    if len(twice):
        raise ValueError(f"{where}: the claim id {twice.iloc[0]!r} appears more than once")
    wrong = table["verdict"][~table["verdict"].isin(VERDICTS)]
    if len(wrong):
        raise ValueError(f"{where}: verdict {wrong.iloc[0]!r} is not one of {', '.join(VERDICTS)}")
    wrong = table["rule"][~table["rule"].isin(("", *RULES))]
    if len(wrong):
        raise ValueError(f"{where}: rule {wrong.iloc[0]!r} is not one of {', '.join(RULES)}")
    return table


def effect(
    treatment, control, *, paired: bool, names: tuple[str, str] = ("treatment's values", "control's values")
) -> dict:
    """A claim's fields for an effect of ``treatment`` against ``control`` (rule ``higher``,
    ``lower`` or ``no effect``): ``ours``, the difference of means, with its seeded bootstrap
    interval; ``p`` of the difference (paired: paired t, or Wilcoxon signed-rank where the
    differences do not vary; else Welch, or Mann-Whitney where neither side varies, as
    :func:`paperlib.stats.difference_p`); ``p_tost``, the equivalence test at +-:data:`NULL_MARGIN_D`
    standard deviations; ``test`` in words; and ``size``, the standardised effect, or, where a
    side does not vary, that it does not (no standardised effect then). ``names``: the two
    sides' values in words, plural ("adapter's rewards")."""
    from paperlib import stats

    t, c = np.asarray(treatment, float), np.asarray(control, float)
    if not (t.size and c.size):  # no such run: nothing to test
        return dict.fromkeys(("ours", "ours_low", "ours_high", "p", "p_tost"), math.nan) | {"test": "", "size": ""}
    if paired:
        ours, low, high = stats.bootstrap_mean_ci(t - c)
        p, test = stats.paired_p(t, c)
        sides = f"{len(t)} pairs"
    else:
        ours, low, high = stats.bootstrap_difference_ci(t, c)
        p, test = stats.difference_p(t, c)
        sides = f"{len(t)} and {len(c)}"
    sd = stats.pooled_sd(t, c, paired)
    margin = NULL_MARGIN_D * sd
    p_tost = stats.tost(t, c, margin, paired)
    still = stats.no_variance(**dict(zip(names, (t, c))))
    if still:
        size = f"no standardised effect: the {still} do not vary"
    elif not sd > 0:
        size = "no standardised effect: the differences do not vary"
    else:
        size = f"{'d_z' if paired else 'd'} = {ours / sd:.2f}"
    test = f"{test}, {sides}" + (f"; TOST at +-{margin:.3g} (d = {NULL_MARGIN_D:g})" if p_tost == p_tost else "")
    return {"ours": ours, "ours_low": low, "ours_high": high, "p": p, "p_tost": p_tost, "test": test, "size": size}


SHOWN = (
    "reported",
    "model",
    "paper_value",
    "ours",
    "ours_low",
    "ours_high",
    "seed_low",
    "seed_high",
    "effect_if",
    "test",
    "p",
    "p_holm",
    "p_tost",
    "p_tost_holm",
    "verdict",
    "note",
)


def verdict_counts(table: pd.DataFrame) -> str:
    """How many claims of ``table`` have each outcome, in words (every outcome, zeros included)."""
    counts = table["verdict"].value_counts()
    return f"{len(table)} claims: " + ", ".join(f"{counts.get(outcome, 0)} {outcome}" for outcome in VERDICTS)


def show_claims(table: pd.DataFrame, columns=SHOWN) -> None:
    """Show ``table`` in a notebook: the verdict counts per outcome, then every row, none cut off
    (every column of ``columns``, every note in full)."""
    from IPython.display import Markdown, display

    display(Markdown(f"**Claims.** {verdict_counts(table)}."))
    options = ("display.max_rows", None, "display.max_columns", None, "display.max_colwidth", None)
    with pd.option_context(*options):
        display(table[list(columns)])


def write_claims(table: pd.DataFrame, data_dir: str | os.PathLike) -> Path:
    """Write one notebook's claims to ``data_dir/NN_claims.parquet`` and, in a notebook, show
    them (:func:`show_claims`: the counts per outcome and every row); returns that path
    relative to the repository (``paths.relative``), what a notebook prints."""
    from paperlib.data import write_parquet

    check_claims(table)
    notebooks = table["notebook"].unique()
    if len(notebooks) != 1:
        raise ValueError(f"a claims file holds one notebook's claims, not {len(notebooks)} notebooks'")
    path = paths.relative(write_parquet(table, Path(data_dir) / f"{notebooks[0][:2]}_claims.parquet"))
    if _in_notebook():
        show_claims(table)
    return path


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def read_claims(path: str | os.PathLike) -> pd.DataFrame:
    return check_claims(pd.read_parquet(path), where=str(paths.relative(path)))


def collect_claims(data_dir: str | os.PathLike) -> pd.DataFrame:
    """Every notebook's claims file under ``data_dir``, stacked (paper A first, each
    notebook's rows in its order), then a ``cannot test`` row for each reported number that
    no claim addresses (:func:`unaddressed_claims`), checked as one table and written to
    ``data_dir/claims.csv``."""
    data_dir = Path(data_dir)
    files = sorted(data_dir.glob(_FILES))
    if not files:
        raise FileNotFoundError(
            f"no claims file ({_FILES}) under {paths.relative(data_dir)}: "
            "run the notebooks that compare with the papers first"
        )
    table = pd.concat([read_claims(path) for path in files], ignore_index=True)
    profiles = table["profile"].unique()
    table = pd.concat(
        [table, unaddressed_claims(table, profiles[0] if len(profiles) == 1 else "mixed")], ignore_index=True
    )
    table = check_claims(
        table.sort_values("paper", kind="stable", ignore_index=True),
        where=f"the claims under {paths.relative(data_dir)}",
    )
    table.to_csv(data_dir / COLLECTED, index=False, float_format="%.6g")
    return table


def addressed(table: pd.DataFrame) -> set[str]:
    """The ids of ``paper_reported.csv`` that the claims of ``table`` address (our own claims address none)."""
    return {id_ for ids in table["reported"] for id_ in str(ids).split("/")} - {OURS}


def unaddressed_claims(table: pd.DataFrame, profile: str) -> pd.DataFrame:
    """A ``cannot test`` row (notebook :data:`COLLECTOR`, no model, no number) for every number of
    ``paper_reported.csv`` that no claim of ``table`` addresses, so that the collected table
    lists every reported number."""
    reported = reported_numbers()
    missing = [id_ for id_ in reported.index if id_ not in addressed(table)]
    rows = pd.DataFrame(
        {
            "reported": missing,
            "what": [reported.loc[i, "claim"] for i in missing],
            "model": "none",
            "ours": float("nan"),
            "effect_if": "",
            "rule": None,
            "note": UNADDRESSED,
            "source": "",
        }
    )
    return claims_table(rows, COLLECTOR, profile) if missing else pd.DataFrame(columns=list(COLUMNS))


def source_name(source: str | os.PathLike) -> str:
    """A data file's name, or a store directory's with a trailing "/" (as data/MANIFEST.json names them)."""
    source = Path(source)
    return source.name + "/" if source.is_dir() else source.name
