"""Several training seeds in one notebook (issue 28: paper B reports three seeds; paper A one): the
held-out rows of every seed's adapters stacked with the base model's once, and a table, a
sentence or a figure per training seed and pooled over them.

A frame's ``train_seed`` column names the training seed of an adapter's rows; rows that no
training seed made (the base model, played once for every seed, and the reference players) hold
none (NA). Data written before a notebook trained several seeds have no such column: they are
one seed's, read as they are.

- :func:`stack`: each seed's played rows as one frame, the shared rows (the base model's, the
  references') kept once.
- :func:`seeds_of`, :func:`each`, :func:`of_seed`, :func:`split`: the training seeds a frame
  holds; its rows of each seed (with the shared rows in :func:`of_seed` and :func:`split`).
- :func:`pool`: the seeds' rows averaged per held-out key (an evaluation seed, an instance, a
  game): the seed-averaged adapter, paired with the base model on the same keys, as
  ``paperlib.stats.paired_sides`` pools the claims' tests.
- :func:`table_by_seed`: a comparison table built on the pooled rows and per seed, with a
  ``train_seed`` column (:data:`POOLED`, "0", "1", ...); the table as before where the rows
  hold one seed. :func:`pooled`, :func:`parts`, :func:`seed_parts`: its pooled rows; its parts,
  pooled first; each seed's part.
- :func:`sentences`: a report's sentence pooled (the headline) and per seed, each under its
  heading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

SEED = "train_seed"
POOLED = "pooled"  # the table's train_seed of the rows built on the seeds' mean per held-out key


def stack(played: dict, label: str = "adapter", shared: Sequence[str] = ("base",)) -> pd.DataFrame:
    """Rows played per training seed (``played``: seed -> frame) as one frame with :data:`SEED`:
    the rows whose ``label`` is one of ``shared`` (the base model, played once for every seed)
    taken from the first seed's frame only, with no training seed; every other row with its
    frame's seed."""
    parts = []
    for i, (seed, rows) in enumerate(played.items()):
        common = rows[label].isin(shared)
        if i == 0:
            parts.append(rows[common].assign(**{SEED: pd.NA}))
        parts.append(rows[~common].assign(**{SEED: seed}))
    out = pd.concat(parts, ignore_index=True)
    out[SEED] = out[SEED].astype("Int64")
    return out


def seeds_of(frame: pd.DataFrame) -> list:
    """The training seeds of ``frame``'s rows, in order (empty where it has no :data:`SEED`)."""
    if SEED not in frame:
        return []
    return sorted(int(s) for s in frame[SEED].dropna().unique())


def each(frame: pd.DataFrame) -> dict:
    """``frame``'s rows per training seed (seed -> rows), one part per seed however many there are;
    ``{None: frame}`` where it has no :data:`SEED` (the committed one-seed data)."""
    seeds = seeds_of(frame)
    return {s: frame[frame[SEED] == s] for s in seeds} if seeds else {None: frame}


def of_seed(frame: pd.DataFrame, seed) -> pd.DataFrame:
    """The rows of training seed ``seed`` and the shared rows (no :data:`SEED`), without the column;
    ``frame`` where it has no :data:`SEED`."""
    if SEED not in frame:
        return frame
    return frame[frame[SEED].isna() | (frame[SEED] == seed)].drop(columns=SEED)


def columns(frame: pd.DataFrame, shown: Sequence[str]) -> list[str]:
    """``shown`` with :data:`SEED` first where ``frame`` has it: which columns a notebook shows of a
    training log."""
    return [SEED, *shown] if SEED in frame else list(shown)


def split(frame: pd.DataFrame, group: str | None = None) -> dict:
    """``frame``'s rows per training seed (seed -> rows, :data:`SEED` kept): the rows of that seed
    and the rows of none (shared); with ``group`` (e.g. ``run``), the rows of a group trained
    with one seed only (an ablation beside a three-seed run) in every part, as shared. A frame
    of one seed or none: ``{None: frame}``."""
    seeds = seeds_of(frame)
    if len(seeds) < 2:
        return {None: frame}
    shared = frame[SEED].isna()
    if group is not None:
        single = frame.groupby(group)[SEED].transform(lambda s: s.dropna().nunique() < 2)
        shared |= single.astype(bool)
    return {s: frame[shared | (frame[SEED] == s)] for s in seeds}


def pool(frame: pd.DataFrame, keys: Sequence[str], first: Sequence[str] = ("step", "update")) -> pd.DataFrame:
    """The seeded rows of ``frame`` averaged over their training seeds per ``keys`` (the label, the
    cell and the held-out key: ``seed``, an instance, a game): each numeric column's mean (a
    share, a reward, a count), the others' and ``first``'s value in the first seed's row, and
    :data:`SEED` NA; the shared rows as they are. The base model's rows and the pooled adapter's
    then hold the same keys, as a comparison needs."""
    if not seeds_of(frame):
        return frame
    seeded = frame[frame[SEED].notna()]
    columns = [c for c in seeded.columns if c not in (*keys, SEED)]
    how = {
        c: "mean"
        if c not in first and (pd.api.types.is_numeric_dtype(seeded[c]) or pd.api.types.is_bool_dtype(seeded[c]))
        else "first"
        for c in columns
    }
    averaged = seeded.groupby(list(keys), sort=False, dropna=False).agg(how).reset_index()
    averaged[SEED] = pd.NA
    out = pd.concat([frame[frame[SEED].isna()], averaged[list(frame.columns)]], ignore_index=True)
    out[SEED] = out[SEED].astype("Int64")
    return out


def table_by_seed(
    frame: pd.DataFrame, build: Callable[[pd.DataFrame], pd.DataFrame], keys: Sequence[str], group: str | None = None
) -> pd.DataFrame:
    """``build`` (held-out rows -> a comparison table against the base model) on the seeds' pooled
    rows (:func:`pool` by ``keys``) and on each training seed's rows (:func:`split`), stacked in
    that order with a ``train_seed`` column: :data:`POOLED`, or the seed as text. ``build(frame)`` itself
    where ``frame`` holds one training seed or none (the committed one-seed data)."""
    parts = split(frame, group)
    if None in parts:
        return build(frame)
    tables = [build(pool(frame, keys).drop(columns=SEED)).assign(**{SEED: POOLED})]
    tables += [build(rows.drop(columns=SEED)).assign(**{SEED: str(s)}) for s, rows in parts.items()]
    return pd.concat(tables, ignore_index=True)


def parts(table: pd.DataFrame) -> dict:
    """A :func:`table_by_seed` table per part, :data:`POOLED` first, then each training seed ("0",
    ...), each without the ``train_seed`` column; ``{None: table}`` where it has none."""
    if SEED not in table:
        return {None: table}
    split_table = {s: rows.drop(columns=SEED).reset_index(drop=True) for s, rows in table.groupby(SEED, sort=False)}
    return {s: split_table[s] for s in sorted(split_table, key=lambda s: s != POOLED)}


def seed_parts(table: pd.DataFrame) -> dict:
    """:func:`parts` without the pooled part: each training seed's table ("0" -> table, ...);
    empty where ``table`` holds one seed or none."""
    return {s: part for s, part in parts(table).items() if s not in (POOLED, None)}


def pooled(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`table_by_seed` table's pooled rows (the table itself where it holds one seed)."""
    return parts(table).get(POOLED, table) if SEED in table else table


def heading(seed, count: int | None = None) -> str:
    """The heading of a part of several seeds: "Training seed 1" or "Pooled over the 3 training
    seeds (their mean per held-out key)"."""
    if seed == POOLED:
        return f"Pooled over the {count or 'several'} training seeds (the seeds' mean per held-out key)"
    return f"Training seed {seed}"


def sentences(table: pd.DataFrame, say: Callable[[pd.DataFrame], str]) -> str:
    """``say(part)`` for each part of ``table`` (:func:`parts`: pooled first, the headline), each
    under its :func:`heading` in bold where there are several; ``say(table)`` alone where there is
    one."""
    split_table = parts(table)
    if None in split_table:
        return say(table)
    count = len(split_table) - 1
    return "\n\n".join(f"**{heading(s, count)}.** {say(part)}" for s, part in split_table.items())
