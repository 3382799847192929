"""Held-out play of a training run's saved adapters and of its base model, for any game: each
adapter plays the game's evaluation cells on the same held-out seeds, into one resumable
store per adapter and cell. A game says how it plays a cell (:func:`play_adapters`' ``play``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from paperlib.training.checkpoints import RunDir, each_adapter, file_hash


def play_adapters(
    out,
    adapters: dict,
    cells: dict,
    directory,
    play,
    *,
    size: int,
    resumes: bool = False,
    restore=None,
    step: str = "update",
    max_batch: int | None = None,
    shared_base=None,
    base_key: dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Held-out rollouts of the run in ``out`` under each of ``adapters`` (label -> a saved step, or
    None for the base model: the adapter disabled) in each of ``cells`` (name -> the game's cell;
    the name "" for a game with one): one resumable store per label and cell under ``directory``
    (``<label>/<cell name>``; None: the run's ``evaluation/``), played by ``play(backend, cell, labels, store)`` -> (episodes,
    steps), ``labels`` being ``adapter``, ``step`` (the column's name; 0: the base model),
    ``adapter_hash`` (of the saved file; "base") and, in a named cell, ``cell``.

    A store holding ``size`` episodes (a cell's all) is read back as it is; the model loads (once)
    only when some store holds fewer. With ``resumes``, ``play`` writes its store itself and
    resumes a partial one (as ``paperlib.philosophers.evaluate`` does); without, a partial store
    is refused in one line and what ``play`` returns is written to its empty store. When an
    adapter to play has no checkpoint here (a checkout keeps a run's record, not its
    checkpoints), ``restore()`` brings them back (the game's trainer replays the run), else the
    adapter is refused in one line. The backend batches up to ``max_batch`` rows (None: the
    backend's default). Step rows carry ``adapter`` (and ``cell``) too. A label whose saved adapter
    is another label's (the same hash: a step without signal leaves the adapter as it was) takes
    that label's rows, relabelled, instead of playing them again. Returns every label's rows,
    label by label, cell by cell, however much was resumed.

    The base model plays the same rows for every run of the same model whose evaluation settings
    agree (a CoT run and its ablation on the cells they share, three training seeds): with
    ``shared_base``, its stores live there, under the model and a hash of ``base_key`` (what
    else decides the base model's play: the game's evaluation settings), so no run plays them
    again."""
    from paperlib.backends.hf import HFBackend
    from paperlib.data import RolloutStore

    run = RunDir(out)
    model_name = run.config()["model"]
    directory = run.path / "evaluation" if directory is None else Path(directory)

    def home(label):
        if shared_base is None or adapters[label] is not None:
            return directory / label
        key = hashlib.sha256(json.dumps(base_key or {}, sort_keys=True).encode()).hexdigest()[:12]
        return Path(shared_base) / f"{model_name}-{key}"

    stores = {(label, name): RolloutStore(home(label) / name) for label in adapters for name in cells}
    played, pending, started = {}, {}, set()  # started: labels with a partial store to resume
    for (label, name), store in stores.items():
        held = store.episodes()
        if len(held) == size:
            played[label, name] = held, store.steps()
        elif len(held) and not resumes:
            raise ValueError(
                f"{store.directory} holds {len(held)} held-out episodes, not {size}: delete it to play them again"
            )
        else:
            pending.setdefault(label, []).append(name)
            if len(held):
                started.add(label)
    todo = {label: adapters[label] for label in pending}
    saved = run.steps_saved()
    if restore is not None and any(k is not None and k not in saved for k in todo.values()):
        restore()
    copies = _same_adapter(run, adapters, pending, started, played)
    todo = {label: k for label, k in todo.items() if label not in copies}
    options = {} if max_batch is None else {"max_batch": max_batch}
    for label, number, model, tokenizer, hashed in each_adapter(run, model_name, todo) if todo else ():
        backend = HFBackend(model_name, lm=model, tokenizer=tokenizer, **options)
        for name in pending[label]:
            where = {"cell": name} if name else {}
            episodes, steps = play(
                backend,
                cells[name],
                {"adapter": label, step: number, "adapter_hash": hashed, **where},
                stores[label, name],
            )
            steps = steps.assign(adapter=label, **where)
            if not resumes:
                stores[label, name].append(episodes, steps)
            played[label, name] = episodes, steps
    for label, source in copies.items():  # the same adapter on the same cells: the source's rows, relabelled
        for name in pending[label]:
            where = {"cell": name} if name else {}
            relabel = {"adapter": label, step: adapters[label] or 0}
            episodes, steps = stores[source, name].episodes(), stores[source, name].steps()
            episodes = episodes.assign(**{k: v for k, v in relabel.items() if k in episodes})
            steps = steps.assign(**{k: v for k, v in relabel.items() if k in steps})
            stores[label, name].append(episodes, steps)
            played[label, name] = episodes, steps.assign(adapter=label, **where)
    return (
        pd.concat([played[key][0] for key in stores], ignore_index=True),
        pd.concat([played[key][1] for key in stores], ignore_index=True),
    )


def _same_adapter(run: RunDir, adapters: dict, pending: dict, started: set, played: dict) -> dict:
    """Labels to play (``pending``: label -> its cells without a full store) whose adapter is
    another label's, by the hash of the saved adapter, and whose stores are empty (not in
    ``started``): label -> the label whose rows they take (one already played in full, else the
    first to play). The same
    adapter plays the same rows on the same cells, seeds and sampling seed (a GRPO step without
    signal leaves its adapter as it was, so two kept steps may hold one adapter)."""
    saved = set(run.steps_saved())
    first, copies = {}, {}
    for label in adapters:  # those read back in full first: their rows cost nothing
        rows = [played[key][0] for key in played if key[0] == label]
        if label not in pending and rows and "adapter_hash" in rows[0] and rows[0]["adapter_hash"].nunique() == 1:
            first.setdefault(rows[0]["adapter_hash"].iloc[0], label)
    for label in pending:
        step = adapters[label]
        if step is not None and step not in saved:
            continue
        hashed = "base" if step is None else file_hash(run.saved(step))
        if hashed in first and label not in started:
            copies[label] = first[hashed]
        else:
            first.setdefault(hashed, label)
    return copies
