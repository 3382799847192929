"""Claims: a paper's number beside ours, in one schema for every notebook that compares them.

A claim is one number a paper reports (a row of ``paper_reported.csv``, by its id) set
beside what our run measured for one model, with the paper's effect written as a test on
our number. The verdict is computed from that test here, never typed: ``supports`` when
our number shows the paper's effect, ``contradicts`` when it does not, ``cannot test``
when this profile has no such run (no number of ours).

Each notebook that compares with a paper writes its claims to ``<data dir>/NN_claims.parquet``
(NN: its number) with :func:`write_claims`; notebook 99 stacks every such file into
``<data dir>/claims.csv`` with :func:`collect_claims`. Each notebook's claims rows are built in
its report module (``paperlib.reports``), as are notebook 99's sentences on the collected table.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from paperlib import paths

COLUMNS = (
    "claim",  # unique id: "<notebook number>:<reported>:<model>"
    "paper",  # "A" or "B", as paper_reported.csv says
    "reported",  # the id in paper_reported.csv; several joined by "/" when one number of ours answers them
    "what",  # the quantity compared
    "model",  # whose number ours is: the model or scripted policy, and its decision mode if it has one
    "paper_value",  # the paper's number as it prints it (text: ranges, "not significant")
    "ours",  # our number (NaN: no such run on this profile)
    "ours_low",  # its interval, where there is one (else NaN)
    "ours_high",
    "effect_if",  # the paper's effect, as a test on our number
    "verdict",  # one of VERDICTS, from the test's outcome (see verdict)
    "note",  # what else a reader needs beside the number (a p-value, the other shares); may be empty
    "notebook",  # the notebook that computed it
    "source",  # the data it was computed from, relative to the data folder
    "profile",
)
VERDICTS = ("supports", "contradicts", "cannot test")
COLLECTED = "claims.csv"
COLLECTOR = "99_claims"  # the notebook that lists the reported numbers no notebook addresses
UNADDRESSED = "no notebook sets our number beside it on this profile yet"
_FILES = "[0-9][0-9]_claims.parquet"


def verdict(shown, ours) -> str:
    """The rule every claim's verdict follows. ``shown``: whether our number shows the paper's
    effect (NA when this profile has no such run); ``ours``: our number (NaN when none)."""
    if pd.isna(ours) or pd.isna(shown):
        return "cannot test"
    return "supports" if shown else "contradicts"


def reported_numbers() -> pd.DataFrame:
    """``paper_reported.csv``, indexed by id."""
    return pd.read_csv(paths.PAPER_REPORTED, dtype={"value": str, "low": str, "high": str}).set_index("id")


def claims_table(rows: pd.DataFrame, notebook: str, profile: str) -> pd.DataFrame:
    """``rows`` in the schema, checked: each holds ``reported``, ``what``, ``model``, ``ours``,
    ``effect_if``, ``shown`` and ``source``, and may hold ``paper_value`` (default: the value,
    or low to high, in ``paper_reported.csv``), ``ours_low``, ``ours_high`` and ``note``."""
    table = rows.assign(
        claim=[f"{notebook[:2]}:{ids}:{model}" for ids, model in zip(rows["reported"], rows["model"])],
        verdict=[verdict(shown, ours) for shown, ours in zip(rows["shown"], rows["ours"])],
        notebook=notebook,
        profile=profile,
    )
    for column in ("paper_value", "ours_low", "ours_high", "note"):
        table[column] = table.get(column)  # None where not given
    reported = _check_cited(table, "claims table")
    table["paper"] = [reported.loc[ids.split("/")[0], "paper"] for ids in table["reported"]]
    table["paper_value"] = [
        given if isinstance(given, str) else _printed(reported, ids)
        for given, ids in zip(table["paper_value"], table["reported"])
    ]
    table["note"] = table["note"].fillna("").astype(str)
    return check_claims(table[list(COLUMNS)].astype({"ours": float, "ours_low": float, "ours_high": float}))


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
        unknown = [id_ for id_ in str(ids).split("/") if id_ not in reported.index]
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
    return table


def write_claims(table: pd.DataFrame, data_dir: str | os.PathLike) -> Path:
    """Write one notebook's claims to ``data_dir/NN_claims.parquet``; returns that path
    relative to the repository (``paths.relative``), what a notebook prints."""
    from paperlib.data import write_parquet

    check_claims(table)
    notebooks = table["notebook"].unique()
    if len(notebooks) != 1:
        raise ValueError(f"a claims file holds one notebook's claims, not {len(notebooks)} notebooks'")
    return paths.relative(write_parquet(table, Path(data_dir) / f"{notebooks[0][:2]}_claims.parquet"))


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
    """The ids of ``paper_reported.csv`` that the claims of ``table`` address."""
    return {id_ for ids in table["reported"] for id_ in str(ids).split("/")}


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
            "shown": pd.NA,
            "note": UNADDRESSED,
            "source": "",
        }
    )
    return claims_table(rows, COLLECTOR, profile) if missing else pd.DataFrame(columns=list(COLUMNS))


def source_name(source: str | os.PathLike) -> str:
    """A data file's name, or a store directory's with a trailing "/" (as data/MANIFEST.json names them)."""
    source = Path(source)
    return source.name + "/" if source.is_dir() else source.name
