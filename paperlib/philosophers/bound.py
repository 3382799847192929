"""The exact maximum number of meals a table can eat: the normaliser of r_thru [ours].

``max_meals(n, rounds, mode)`` is the most meals any joint sequence of actions can
reach in ``rounds`` rounds at a table of ``n`` philosophers under ``mode``, playing
all ``rounds`` rounds (no stop at a deadlock; see "Deadlocks" below).

Result
------
``simultaneous`` (any N >= 2, R >= 3; k, r = divmod(R, 3)):

    r == 0:  floor((N*R - 3*(N % 2)) / 6)      (N*k/2 for even N, floor((N*k - 1)/2) for odd)
    r == 1:  floor(N*k / 2)                     (the extra round is worth nothing)
    r == 2:  floor(N*k*(k+1) / (2k+1))

``sequential``: no closed form; exact values come from an embedded table (below)
for R <= 18 with N <= 50 and for N <= 11 with R <= 50, and from the exact solvers
below for small cases outside it. Elsewhere (N >= 12 and R >= 19, sequential)
``max_meals`` raises NotImplementedError rather than return an inexact number;
``max_meals_upper_bound`` gives a proven upper bound there. For R <= 5 the two
modes agree.

    R = 5      N=5  N=10  N=15          R = 10     N=5  N=10  N=15
    simult.     3     6    10           simult.     7    15    22
    sequent.    3     6    10           sequent.    7    15    22

Method
------
1. Canonical meals (exact, both directions). Take any play and a meal eaten in
   round e. The philosopher took its two forks in rounds p1 < p2 <= e-1 and puts
   them down in rounds q1 < q2 with q1 >= e+1, and between two meals it must put
   both forks down (``ready``) and take two again, so consecutive meals are >= 5
   rounds apart. Replacing the meal by "take the first fork at e-2, the second at
   e-1, put the first-released fork down at e+1, the other at e+2" only shrinks every
   holding interval (and forks taken without a meal are simply not taken), so every
   neighbour's action stays valid (in sequential mode a same-round hand-over keeps
   its order); the new schedule is playable with the environment's tools. So a meal is (eating round e >= 3, which fork is taken
   second, which is put down first), and fork f is occupied by the meal in rounds
   [e-2+(taken second), e+(not put down first)], truncated at R.
2. Interaction only through shared forks: two uses of a fork must be disjoint;
   in simultaneous mode a fork put down in round t can be taken in round t
   (put-downs go first); in sequential mode only if the one putting it down acts
   earlier in id order, i.e. a hand-over from the higher id to the lower id (i+1 to
   i, and philosopher N-1 to 0 over fork 0) costs one more round. Modelled as an
   extra occupied round after each use by the higher-id user of a fork.
3. Exact solvers over that model, both in this module: ``exact_by_sweep`` (round by
   round, seat by seat, states = every philosopher's phase; exponential in N) and
   ``exact_by_ring`` (seat by seat around the ring, state = the rounds in which the
   previous philosopher occupies the shared fork; exponential in R). They agree on
   every overlapping case, and tests/test_meal_bound.py checks them against an
   exhaustive search over every joint action sequence (env.py's own play_round and
   act), which also verifies step 1.
4. simultaneous, upper bound for every N, R: (a) the LP relaxation of the model is
   invariant under rotating the table, so an optimal dual can be averaged into a
   rotation-invariant one, whence LP = N * g(R), where g(R) is the LP of one
   philosopher whose two forks are one fork: g(R) = k/2 for r in {0, 1} and
   k(k+1)/(2k+1) for r == 2 (solved for every R <= 50); (b) counting fork-rounds:
   a meal occupies 6 (5 if eaten in round R); in rounds 1-2 only meals eaten in
   rounds 3-4 occupy forks and they sit at non-adjacent seats, so at least
   2N - 3*floor(N/2) fork-rounds there are idle, and at most floor(N/2) meals are
   eaten in round R: 6M <= N*R - 2N + 4*floor(N/2). The formula above is exactly
   min(floor(N*g(R)), floor((N*R - 2N + 4*floor(N/2))/6)) for all N, R <= 50.
   ((b) binds only for odd N with R = 3k, k even.) It is attained (so exact)
   wherever the exact solvers reach: every N <= 11 with
   R <= 50 and every R <= 18 with N <= 50. For N >= 12 and R >= 19 it is a proven
   upper bound matching every computed value's pattern; attainment there is not
   machine-checked. It is always an upper bound for sequential mode too (every
   sequential schedule is a simultaneous one).

Deadlocks. run_episodes stops an episode whose round ends with every philosopher
holding exactly one fork. That can cost meals: with N = 2 (both modes) and with
even N in simultaneous mode the best schedules pass through such a state (e.g.
N = 2, R = 6: 2 meals without the stop, 1 with it; N = 4, R = 6: 4 and 3). For odd
N >= 3, and for sequential mode with N >= 3, the stop never changed the maximum
(checked for N <= 9, R <= 50). ``max_meals`` is the maximum without the stop.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from paperlib.philosophers.env import MODES

# --- exact values for sequential mode, computed by exact_by_ring (R <= 18, N = 2..50)
# and exact_by_sweep (N <= 11, R = 1..50); the two agree on every case both cover.
_SEQ_BY_ROUNDS = {  # R -> values for N = 2..50
    3: "1 1 2 2 3 3 4 4 5 5 6 6 7 7 8 8 9 9 10 10 11 11 12 12 13 13 14 14 15 15 16 16 17 17 18 18 19 19 20 20 21 21 22 22 23 23 24 24 25",
    4: "1 1 2 2 3 3 4 4 5 5 6 6 7 7 8 8 9 9 10 10 11 11 12 12 13 13 14 14 15 15 16 16 17 17 18 18 19 19 20 20 21 21 22 22 23 23 24 24 25",
    5: "1 2 2 3 4 4 5 6 6 7 8 8 9 10 10 11 12 12 13 14 14 15 16 16 17 18 18 19 20 20 21 22 22 23 24 24 25 26 26 27 28 28 29 30 30 31 32 32 33",
    6: "2 2 3 4 5 6 6 7 8 9 10 10 11 12 13 14 14 15 16 17 18 18 19 20 21 22 22 23 24 25 26 26 27 28 29 30 30 31 32 33 34 34 35 36 37 38 38 39 40",
    7: "2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50",
    8: "2 3 4 5 6 8 8 10 11 12 13 14 16 16 18 19 20 21 22 24 24 26 27 28 29 30 32 32 34 35 36 37 38 40 40 42 43 44 45 46 48 48 50 51 52 53 54 56 56",
    9: "2 3 5 6 7 8 10 11 12 13 15 16 17 18 20 21 22 23 25 26 27 28 30 31 32 33 35 36 37 38 40 41 42 43 45 46 47 48 50 51 52 53 55 56 57 58 60 61 62",
    10: "3 4 5 7 9 10 11 13 15 16 17 19 21 22 23 25 27 28 29 31 33 34 35 37 39 40 41 43 45 46 47 49 51 52 53 55 57 58 59 61 63 64 65 67 69 70 71 73 75",
    11: "3 4 6 7 9 11 12 14 15 17 18 20 21 23 24 26 27 29 30 32 33 35 36 38 39 41 42 44 45 47 48 50 51 53 54 56 57 59 60 62 63 65 66 68 69 71 72 74 75",
    12: "3 5 6 8 10 12 13 15 17 18 20 22 23 25 27 28 30 32 34 35 37 39 40 42 44 45 47 49 50 52 54 56 57 59 61 62 64 66 67 69 71 72 74 76 78 79 81 83 84",
    13: "4 5 7 9 11 13 14 16 18 20 22 24 25 27 29 31 33 35 36 38 40 42 44 45 47 49 51 53 55 56 58 60 62 64 66 67 69 71 73 75 76 78 80 82 84 86 87 89 91",
    14: "4 6 8 9 12 14 16 18 20 22 24 26 28 30 32 34 36 38 40 42 44 46 48 50 52 54 56 58 60 62 64 66 68 70 72 74 76 78 80 82 84 86 88 90 92 94 96 98 100",
    15: "4 6 8 10 12 15 16 19 21 23 25 27 30 32 34 36 38 40 43 44 47 49 51 53 55 57 60 62 64 66 68 70 73 75 77 79 81 83 85 88 90 92 94 96 98 101 102 105 107",
    16: "4 6 8 11 13 15 18 20 22 24 27 29 31 33 36 38 40 43 45 47 49 52 54 56 58 61 63 65 67 70 72 74 76 79 81 83 85 88 90 92 94 97 99 101 103 106 108 110 112",
    17: "5 7 9 12 15 17 19 22 25 27 29 32 35 37 39 42 45 47 49 52 55 57 59 62 65 67 69 72 75 77 79 82 85 87 89 92 95 97 99 102 105 107 109 112 115 117 119 122 125",
    18: "5 7 10 12 15 18 20 23 25 28 30 33 35 38 40 43 45 48 50 53 56 58 61 63 66 68 71 73 76 78 81 83 86 88 91 93 96 98 101 104 106 109 111 114 116 119 121 124 126",
}
_SEQ_BY_N = {  # N -> values for R = 1..50
    2: "0 0 1 1 1 2 2 2 2 3 3 3 4 4 4 4 5 5 5 6 6 6 6 7 7 7 8 8 8 8 9 9 9 10 10 10 10 11 11 11 12 12 12 12 13 13 13 14 14 14",
    3: "0 0 1 1 2 2 3 3 3 4 4 5 5 6 6 6 7 7 8 8 9 9 9 10 10 11 11 12 12 12 13 13 14 14 15 15 15 16 16 17 17 18 18 18 19 19 20 20 21 21",
    4: "0 0 2 2 2 3 4 4 5 5 6 6 7 8 8 8 9 10 10 11 11 12 12 13 13 14 14 15 16 16 16 17 18 18 19 19 20 20 21 21 22 22 23 24 24 24 25 26 26 27",
    5: "0 0 2 2 3 4 5 5 6 7 7 8 9 9 10 11 12 12 13 14 14 15 16 16 17 18 19 19 20 20 21 22 23 24 24 25 25 26 27 28 28 29 30 30 31 32 33 33 34 35",
    6: "0 0 3 3 4 5 6 6 7 9 9 10 11 12 12 13 15 15 16 17 18 18 19 21 21 22 23 24 24 25 27 27 28 29 30 30 31 33 33 34 35 36 36 37 39 39 40 41 42 42",
    7: "0 0 3 3 4 6 7 8 8 10 11 12 13 14 15 15 17 18 19 20 21 22 22 24 25 26 27 28 29 29 31 32 33 34 35 36 36 38 39 40 41 42 43 43 45 46 47 48 49 50",
    8: "0 0 4 4 5 6 8 8 10 11 12 13 14 16 16 18 19 20 21 22 24 24 26 27 28 29 30 32 32 34 35 36 37 38 40 40 42 43 44 45 46 48 48 50 51 52 53 54 56 56",
    9: "0 0 4 4 6 7 9 10 11 13 14 15 16 18 19 20 22 23 24 25 27 28 29 30 32 33 34 36 37 38 39 41 42 43 45 46 47 48 50 51 52 53 55 56 57 59 60 61 62 64",
    10: "0 0 5 5 6 8 10 11 12 15 15 17 18 20 21 22 25 25 27 28 30 31 32 35 35 37 38 40 41 42 45 45 47 48 50 51 52 55 55 57 58 60 61 62 65 65 67 68 70 71",
    11: "0 0 5 5 7 9 11 12 13 16 17 18 20 22 23 24 27 28 29 31 33 34 35 38 39 40 42 44 45 46 49 50 51 53 55 56 57 60 61 62 64 66 67 68 71 72 73 75 77 78",
}
_TABLE_N, _TABLE_R = 50, 50


def _check(n: int, rounds: int, mode: str) -> None:
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"a table needs at least 2 philosophers, got {n!r}")
    if not isinstance(rounds, (int, np.integer)) or rounds < 0:
        raise ValueError(f"rounds must be an integer, zero or more, got {rounds!r}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")


def _simultaneous(n: int, rounds: int) -> int:
    if rounds < 3:
        return 0
    k, r = divmod(rounds, 3)
    if r == 0:
        return (n * rounds - 3 * (n % 2)) // 6
    if r == 1:
        return n * k // 2
    return n * k * (k + 1) // (2 * k + 1)


def _table(n: int, rounds: int) -> int | None:
    if rounds < 3:
        return 0
    if rounds in _SEQ_BY_ROUNDS and n <= _TABLE_N:
        return int(_SEQ_BY_ROUNDS[rounds].split()[n - 2])
    if n in _SEQ_BY_N and rounds <= _TABLE_R:
        return int(_SEQ_BY_N[n].split()[rounds - 1])
    return None


@cache
def max_meals(n: int, rounds: int, mode: str = "simultaneous") -> int:
    """The exact maximum total meals in ``rounds`` rounds at a table of ``n`` under ``mode``."""
    _check(n, rounds, mode)
    n, rounds = int(n), int(rounds)
    if mode == "simultaneous":
        return _simultaneous(n, rounds)
    value = _table(n, rounds)
    if value is not None:
        return value
    if n <= 8:  # a few seconds at most for R in the hundreds
        return exact_by_sweep(n, rounds, mode)[-1]
    if rounds <= 12:
        return _ring_cached(rounds, mode, n)[n]
    raise NotImplementedError(
        f"no exact sequential maximum known for n={n}, rounds={rounds} "
        f"(exact for R <= {max(_SEQ_BY_ROUNDS)} or N <= {max(_SEQ_BY_N)}); "
        "max_meals_upper_bound gives a proven upper bound"
    )


def max_meals_upper_bound(n: int, rounds: int, mode: str = "simultaneous") -> int:
    """A proven upper bound for any size: exact in simultaneous mode, max_meals where it is known."""
    _check(n, rounds, mode)
    bound = _simultaneous(int(n), int(rounds))
    if mode == "sequential":
        value = _table(int(n), int(rounds))
        if value is not None:
            return value
    return bound


# --- exact solver 1: round by round, seat by seat (exponential in N) ----------------
# A philosopher's phase at the end of a round: 0 idle, 1 holds left (taken first),
# 2 holds right (taken first), 3 holds both, 4 has eaten (holds both), 5 holds left
# (right put down), 6 holds right (left put down). The canonical meal walks
# 0 -> 1|2 -> 3 -> 4 (+1 meal) -> 5|6 -> 0.
_HOLDS_LEFT = np.array([0, 1, 0, 1, 1, 1, 0], dtype=bool)
_HOLDS_RIGHT = np.array([0, 0, 1, 1, 1, 0, 1], dtype=bool)
_STEPS = [(0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0), (3, 4, 1), (4, 5, 0), (4, 6, 0), (5, 0, 0), (6, 0, 0)]


def exact_by_sweep(n: int, rounds: int, mode: str) -> list[int]:
    """Exact maxima for R = 1..rounds at a table of n (canonical meals; all joint choices)."""
    sequential = mode == "sequential"
    powers = 7 ** np.arange(n, dtype=np.int64)
    codes = np.zeros(1, dtype=np.int64)
    values = np.zeros(1, dtype=np.int32)
    out = []
    for _ in range(rounds):
        for i in range(n):
            left_nb, right_nb = (i - 1) % n, (i + 1) % n
            phase = (codes // powers[i]) % 7
            left_phase = (codes // powers[left_nb]) % 7
            right_phase = (codes // powers[right_nb]) % 7
            new_codes, new_values = [], []
            for before, after, meal in _STEPS:
                ok = phase == before
                # The shared fork must not be held by both at the end of the round. A
                # neighbour already seated this round is checked on its new phase; one
                # not yet seated is checked on its old phase in sequential mode (it has
                # not acted) and later, when it is seated, in simultaneous mode.
                if _HOLDS_LEFT[after] and (left_nb < i or sequential):
                    ok &= ~_HOLDS_RIGHT[left_phase]
                if _HOLDS_RIGHT[after] and (right_nb < i or sequential):
                    ok &= ~_HOLDS_LEFT[right_phase]
                new_codes.append(codes[ok] + (after - before) * powers[i])
                new_values.append(values[ok] + meal)
            codes, values = np.concatenate(new_codes), np.concatenate(new_values)
            order = np.lexsort((-values, codes))
            codes, values = codes[order], values[order]
            first = np.ones(len(codes), dtype=bool)
            first[1:] = codes[1:] != codes[:-1]
            codes, values = codes[first], values[first]
        out.append(int(values.max()))
    return out


# --- exact solver 2: seat by seat around the ring (exponential in R) ----------------
# (left fork's occupied rounds, right fork's), relative to the eating round e, for the
# four choices of which fork is taken first and which is put down first.
_SHAPES = [((-2, 0), (-1, 1)), ((-1, 1), (-2, 0)), ((-2, 1), (-1, 0)), ((-1, 0), (-2, 1))]
_NONE = -(10**6)


def _mask(first: int, last: int, rounds: int) -> int:
    return sum(1 << (t - 1) for t in range(max(first, 1), min(last, rounds) + 1))


def _schedules(rounds: int, extend_left: bool, extend_right: bool):
    """Best meal count for each (left-fork mask, right-fork mask) one philosopher can have."""
    best: dict[tuple[int, int], int] = {}

    def grow(earliest: int, left: int, right: int, meals: int) -> None:
        if best.get((left, right), -1) < meals:
            best[(left, right)] = meals
        for eat in range(earliest, rounds + 1):
            for (la, lb), (ra, rb) in _SHAPES:
                grow(
                    eat + 5,
                    left | _mask(eat + la, eat + lb + extend_left, rounds),
                    right | _mask(eat + ra, eat + rb + extend_right, rounds),
                    meals + 1,
                )

    grow(3, 0, 0, 0)
    keys = list(best)
    return (
        np.array([lm for lm, _ in keys], dtype=np.int64),
        np.array([rm for _, rm in keys], dtype=np.int64),
        np.array([best[k] for k in keys], dtype=np.int64),
    )


def _best_within(values: np.ndarray, rounds: int) -> np.ndarray:
    """out[m] = max of values[s] over the submasks s of m."""
    out = values.copy()
    for bit in range(rounds):
        view = out.reshape(-1, 2, 1 << bit)
        np.maximum(view[:, 1, :], view[:, 0, :], out=view[:, 1, :])
    return out


def _seat(by_right: np.ndarray, schedules, rounds: int) -> np.ndarray:
    """Seat one more philosopher; its left-fork rounds must avoid the previous right-fork rounds."""
    full = (1 << rounds) - 1
    left, right, meals = schedules
    fits = _best_within(by_right, rounds)[full ^ left] + meals
    out = np.full(1 << rounds, _NONE, dtype=np.int64)
    np.maximum.at(out, right, fits)
    return out


def exact_by_ring(rounds: int, mode: str, n_max: int) -> dict[int, int]:
    """Exact maxima for N = 2..n_max at R = rounds (canonical meals; all joint choices)."""
    if rounds < 3:
        return {n: 0 for n in range(2, n_max + 1)}
    sequential = mode == "sequential"
    full = (1 << rounds) - 1
    # In sequential mode the higher id of each pair occupies a fork one round longer:
    # philosophers 1..N-2 on their left fork, N-1 on both (fork 0 goes to 0, who acts first).
    first = _schedules(rounds, False, False)
    middle = _schedules(rounds, sequential, False)
    last = _schedules(rounds, sequential, sequential)
    best = {n: 0 for n in range(2, n_max + 1)}
    for fork0 in np.unique(first[0]):  # philosopher 0's rounds on fork 0
        pick = first[0] == fork0
        by_right = np.full(1 << rounds, _NONE, dtype=np.int64)
        np.maximum.at(by_right, first[1][pick], first[2][pick])
        for n in range(2, n_max + 1):
            closing = _best_within(_seat(by_right, last, rounds), rounds)
            best[n] = max(best[n], int(closing[full ^ fork0]))
            if n < n_max:
                by_right = _seat(by_right, middle, rounds)
    return best


@cache
def _ring_cached(rounds: int, mode: str, n: int) -> dict[int, int]:
    return exact_by_ring(rounds, mode, n)
