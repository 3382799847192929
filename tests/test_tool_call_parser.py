"""parse_action: the corpus of completions, plus properties that must hold for any input."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from paperlib.philosophers.parsing import NO_ACTION, TOOL_NAMES, parse_action

CORPUS_PATH = Path(__file__).parent / "data" / "tool_call_corpus.jsonl"
CORPUS = [json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
OUTCOMES = TOOL_NAMES + (NO_ACTION,)


def test_exports():
    assert TOOL_NAMES == ("pick_up_left", "pick_up_right", "put_down_left", "put_down_right", "eat", "think")
    assert NO_ACTION == "none"


def test_tool_names_match_the_environment():
    from paperlib.philosophers import env

    assert TOOL_NAMES == env.TOOLS
    assert NO_ACTION == env.NO_ACTION


def test_corpus_is_large_and_well_formed():
    assert len(CORPUS) >= 45
    for row in CORPUS:
        assert set(row) == {"text", "expected", "note"}
        assert row["expected"] in OUTCOMES
    # every outcome is exercised
    assert {row["expected"] for row in CORPUS} == set(OUTCOMES)


@pytest.mark.parametrize("row", CORPUS, ids=[row["note"] for row in CORPUS])
def test_corpus(row):
    assert parse_action(row["text"]) == row["expected"]


@pytest.mark.parametrize("value", [None, 0, 1.5, b"eat()", ["eat"], {"name": "eat"}, object(), ("think",)])
def test_non_str_is_no_action(value):
    assert parse_action(value) == NO_ACTION


# Random garbage: plain characters mixed with the fragments the parser looks for, so
# the random strings exercise the tag, key and call paths, not just the fallback.
_FRAGMENTS = [
    "<think>",
    "</think>",
    "<tools>",
    "</tools>",
    "<tool_call>",
    "</tool_call>",
    "<function=",
    '{"name": ',
    '"arguments": ',
    "'",
    '"',
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ":",
    ",",
    '\\"',
    "\n",
    " ",
    "`",
    "```",
    "Action: ",
    "eat",
    "think",
    "pick_up_left",
    "put-down right",
    "grab_fork",
    "<|python_tag|>",
    "<|im_end|>",
    ".",
    "*",
    "-",
]
_CHARS = [chr(c) for c in range(32, 127)] + ["\n", "\t", "é", "İ", "ß", "\u200b", "😀", "\x00"]


def _garbage(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 40)):
        if rng.random() < 0.4:
            parts.append(rng.choice(_FRAGMENTS))
        else:
            parts.append("".join(rng.choice(_CHARS) for _ in range(rng.randint(1, 8))))
    return "".join(parts)


def test_random_garbage_gives_an_outcome():
    rng = random.Random(20240501)
    seen = set()
    for _ in range(3000):
        result = parse_action(_garbage(rng))
        assert result in OUTCOMES
        seen.add(result)
    assert NO_ACTION in seen and len(seen) > 1  # the generator does reach the call paths


def test_deterministic():
    rng = random.Random(7)
    texts = [_garbage(rng) for _ in range(200)]
    assert [parse_action(t) for t in texts] == [parse_action(t) for t in texts]


# Inputs built to trigger catastrophic backtracking or quadratic scans in a naive parser.
HUGE = {
    "noise": "".join(random.Random(1).choice(_CHARS) for _ in range(100_000)),
    "hyphen words": "a-" * 50_000,
    "open think tags": "<think>" * 15_000,
    "close think tags": "</think>" * 12_000,
    "tool_call tags": "<tool_call>" * 9_000,
    "half keys": '{"name": ' * 11_000,
    "call prefixes": "eat_spaghetti(" * 7_000,
    "long word": "x" * 100_000 + "(",
    "action lines": "Action: " * 12_000,
    "spaces": " " * 100_000,
    "newlines": "\n" * 100_000,
    "call after noise": "lorem ipsum " * 8_000 + "eat()",
}


@pytest.mark.parametrize("name", list(HUGE))
def test_huge_input_is_fast(name):
    start = time.perf_counter()
    result = parse_action(HUGE[name])
    assert time.perf_counter() - start < 1.0
    assert result in OUTCOMES


def test_huge_input_results():
    assert parse_action(HUGE["call after noise"]) == "eat"
    assert parse_action(HUGE["open think tags"]) == NO_ACTION
    assert parse_action("<think>" + "x" * 100_000 + "</think>think") == "think"


def test_ten_thousand_chars_of_noise_under_10ms():
    text = "".join(random.Random(3).choice(_CHARS) for _ in range(10_000))
    parse_action(text)  # warm the regex cache
    best = min(_timed(text) for _ in range(5))
    assert best < 0.010


def _timed(text: str) -> float:
    start = time.perf_counter()
    parse_action(text)
    return time.perf_counter() - start
