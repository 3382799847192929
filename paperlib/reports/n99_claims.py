"""Notebook 99 (the claims of both papers): what it says about the collected table
(``claims.collect_claims``): which notebooks' claims it holds and how many reported numbers
none addresses (:func:`contributors_sentence`), per paper how many claims our run
supports, contradicts, leaves inconclusive or cannot test (:func:`paper_sentences`), and every
row of the table (:func:`show_every_claim`)."""

from __future__ import annotations

import pandas as pd

from paperlib.claims import COLLECTOR, OURS, SHOWN, addressed, reported_numbers, show_claims


def contributors_sentence(table: pd.DataFrame) -> str:
    """Which notebooks' claims ``table`` holds, and how many each; how many reported numbers
    no notebook addresses."""
    compared = table[table["notebook"] != COLLECTOR]
    counts = compared.groupby("notebook", sort=True).size()
    listed = ", ".join(f"`{notebook}` ({count})" for notebook, count in counts.items())
    left = int((table["notebook"] == COLLECTOR).sum())
    return (
        f"{_count(len(compared), 'claim')} from {_count(len(counts), 'notebook')}: {listed}. "
        "Notebooks that wrote no claims file have none in the table"
        + (
            f"; the {_count(left, 'reported number')} that no notebook addresses are listed as cannot test."
            if left
            else "."
        )
    )


def paper_sentences(table: pd.DataFrame) -> str:
    """A Markdown bullet per paper: how many of its reported numbers the claims address, and
    how many claims our run supports, contradicts, leaves inconclusive or cannot test; then,
    where there are any, the same for our own claims on what the paper proposes and did not run
    (``reported`` :data:`~paperlib.claims.OURS`)."""
    reported = reported_numbers()
    table = table[table["notebook"] != COLLECTOR]
    lines = []
    for paper, numbers in reported.groupby("paper"):
        rows = table[(table["paper"] == paper) & (table["reported"] != OURS)]
        if rows.empty:
            lines.append(
                f"- **Paper {paper}**: no notebook has set our numbers beside its {len(numbers)} reported numbers yet."
            )
        else:
            lines.append(
                f"- **Paper {paper}**: {_count(len(rows), 'claim')} on {len(addressed(rows))} of its "
                f"{len(numbers)} reported numbers; {_verdicts(rows)}."
            )
        ours = table[(table["paper"] == paper) & (table["reported"] == OURS)]
        if len(ours):
            lines.append(
                f"- **Ours, on what paper {paper} proposes and did not run**: {_count(len(ours), 'claim')}; "
                f"{_verdicts(ours)}."
            )
    return "\n".join(lines)


def _verdicts(rows: pd.DataFrame) -> str:
    counts = rows["verdict"].value_counts()
    return (
        f"our run supports {counts.get('supports', 0)}, contradicts {counts.get('contradicts', 0)}, leaves "
        f"{counts.get('inconclusive', 0)} inconclusive and cannot test {counts.get('cannot test', 0)}"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def show_every_claim(table: pd.DataFrame) -> None:
    """Every row of the collected table, none cut off, with the verdict counts per outcome
    (``claims.show_claims``), the paper and notebook of each row first."""
    show_claims(table, ("paper", "notebook", *SHOWN))
