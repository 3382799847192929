"""The ACTION= parser against a corpus of real-looking and malformed completions."""

import json
from pathlib import Path

import pytest

from paperlib.bandits.env import BanditSpec
from paperlib.bandits.parsing import parse_action
from paperlib.bandits.prompts import build_prompt

CORPUS = [json.loads(line) for line in (Path(__file__).parent / "data" / "bandit_action_corpus.jsonl").open()]


def test_the_corpus_covers_what_it_should():
    assert len(CORPUS) >= 30
    assert sum(case["expected"] is None for case in CORPUS) >= 10
    assert max(len(case["text"]) for case in CORPUS) >= 10_000


@pytest.mark.parametrize("case", CORPUS, ids=[case["note"] for case in CORPUS])
def test_corpus(case):
    names = BanditSpec(case["arms"], variant=case["variant"]).names
    expected = None if case["expected"] is None else names.index(case["expected"])
    assert parse_action(case["text"], names) == expected


def test_the_prompt_itself_holds_no_valid_action():
    # the output instructions say ACTION=X: the placeholder must never parse as an arm
    spec = BanditSpec(5)
    for style in ("cot", "no_cot", "knowing_doing"):
        assert parse_action(build_prompt(spec, [0, 1], [0.5, 0.2], style), spec.names) is None


def test_none_text():
    assert parse_action(None, ("blue", "green")) is None
