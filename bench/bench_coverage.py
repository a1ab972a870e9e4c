"""Coverage of the comparison's 95% intervals, before and after issue 15 (seeded; a few seconds).

"Before" is the run-level percentile bootstrap the comparison used until issue 15 (2,000
resamples of whole runs with replacement, percentiles 2.5 and 97.5), reproduced here only to
measure it; "after" is :mod:`audit.stats.intervals` as it is now. Both see the same simulated cells
(:mod:`audit.stats.coverage`): for each scenario and number of runs per cell, the share of intervals
that contain the true rate (nominal 0.95), the mean width, and the share of zero-width intervals.
The requirement is at least 0.93 at 3 or more runs in every required scenario; the stress
scenario (runs that refuse all or nothing) is shown so the table is not read as a guarantee.

Issue 26 widened the grid (``print_grid``: rare to even rates, intraclass correlation up to 0.5,
all-or-nothing runs, 2-20 runs, run sizes 4-16 and very unequal 2-40) for the cell, the paired and
the unpaired intervals; its output is kept in ``bench/coverage_grid.txt`` and the README's coverage
table, and ``tests/test_coverage_grid.py`` holds a reduced grid to its minimum. ``print_card_grid`` does
the same for the epistemic matrix with repeats (cards as the unit, repeats nested).

Issue 30 added the benchmark's intervals, whose unit is the question (``print_question_grid``: 5-95
questions per cell, 1-10 rollouts per question, a rate over draws or over 2-8 facts per draw, the same
rates and differences between questions); its output follows issue 26's in ``bench/coverage_grid.txt``.

Issue 37 added techniques whose effect is rare or all-or-nothing per run (``print_effect_grid``:
baselines 0.02-0.5, the technique acting in 10-100% of runs or questions, by +0.2 or completely,
at 2-5 runs of 4-16 or 2-40 responses and 2-5 questions of 1-10 rollouts), for the paired gaps,
with the t interval they had before beside them, and 8 and 20 runs shown beyond the claim.

Run: ``python bench/bench_coverage.py [--cells 2000] [--grid-only | --questions-only | --effects-only]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from audit.stats.coverage import CARD_COUNTS, CARD_REPEATS, EFFECT_BASELINES, EFFECT_METHODS, EFFECT_RUNS, EFFECT_SHARES, \
    GRID_METHODS, GRID_RUNS, PER_ROLLOUT, QUESTION_COUNTS, QUESTION_METHODS, ROLLOUTS, RUN_COUNTS, SCENARIOS, SEED, \
    SIZES, STRESS, GridPoint, card_grid, card_grid_scenarios, effect_grid, effects, grid, paired_coverage, \
    question_effect_grid, question_grid, rate_coverage, unpaired_coverage
from audit.stats.intervals import paired_t_bounds

OLD_REPS, OLD_SEED, CHUNK = 2000, 20260101, 100


def _old_resampled(k: np.ndarray, n: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Pooled share of OLD_REPS resamples of whole runs, per cell: shape (cells, OLD_REPS)."""
    cells, runs = k.shape
    picks = rng.integers(0, runs, size=(cells, OLD_REPS, runs))
    rows = np.arange(cells)[:, None, None]
    return k[rows, picks].sum(axis=2) / n[rows, picks].sum(axis=2)


def _chunked(compute: Callable[..., tuple[np.ndarray, np.ndarray]], *arrays: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run the old bootstrap over cells in chunks (it holds cells x resamples x runs in memory)."""
    los, his = [], []
    for start in range(0, len(arrays[0]), CHUNK):
        lo, hi = compute(*(a[start:start + CHUNK] for a in arrays))
        los.append(lo)
        his.append(hi)
    lo, hi = np.concatenate(los), np.concatenate(his)
    return (lo + hi) / 2, lo, hi


def old_rate(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(OLD_SEED)
    return _chunked(lambda k, n: tuple(np.percentile(_old_resampled(k, n, rng), [2.5, 97.5], axis=1)), k, n)


def old_paired(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(OLD_SEED)

    def one(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cells, runs = ak.shape
        picks = rng.integers(0, runs, size=(cells, OLD_REPS, runs))
        rows = np.arange(cells)[:, None, None]
        d = ak[rows, picks].sum(2) / an[rows, picks].sum(2) - bk[rows, picks].sum(2) / bn[rows, picks].sum(2)
        return tuple(np.percentile(d, [2.5, 97.5], axis=1))  # type: ignore[return-value]
    return _chunked(one, ak, an, bk, bn)


def old_unpaired(ak: np.ndarray, an: np.ndarray, bk: np.ndarray, bn: np.ndarray) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(OLD_SEED)
    return _chunked(lambda ak, an, bk, bn: tuple(np.percentile(
        _old_resampled(ak, an, rng) - _old_resampled(bk, bn, rng), [2.5, 97.5], axis=1)), ak, an, bk, bn)


def print_grid(cells: int) -> None:
    """Issue 26's grid: every method over every case (rate, icc, runs, run sizes), its minimum
    coverage (and where), mean width, and the cases below 0.93, per run-size range."""
    scenarios = grid()
    print(f"issue 26 grid: p in (0.05, 0.15, 0.3, 0.5) x icc in (0, 0.1, 0.3, 0.5) + all-or-nothing (0.5, icc 0.67);"
          f" runs {GRID_RUNS}; {cells} simulated cells per case, seed {SEED}")
    print(f"{'method':48} {'run sizes':15} {'min':>6}  {'where':38} {'mean width':>10}  below 0.93")
    for name, measure in GRID_METHODS.items():
        points = measure(cells, scenarios, GRID_RUNS, list(SIZES))
        for size in SIZES:
            sub = [p for p in points if p.sizes == size]
            low = min(sub, key=lambda p: p.coverage)
            below = [f"{p.scenario.name} @{p.runs}: {p.coverage:.3f}" for p in sub if p.coverage < 0.93]
            print(f"{name:48} {size:15} {low.coverage:6.3f}  {low.scenario.name + f', {low.runs} runs':38} "
                  f"{np.mean([p.width for p in sub]):10.3f}  {len(below)}/{len(sub)}" + (f" ({'; '.join(below)})" if below else ""))


def print_question_grid(cells: int) -> None:
    """Issue 30's grid: each benchmark interval over (rate, icc, questions, rollouts), per item kind."""
    print(f"issue 30 grid (the question is the unit): p in (0.05, 0.15, 0.3, 0.5) x icc in (0, 0.1, 0.3, 0.5) + "
          f"all-or-nothing; questions {QUESTION_COUNTS}; rollouts {ROLLOUTS}; {cells} simulated cells per case, "
          f"seed {SEED}")
    print(f"{'method':56} {'items':21} {'min':>6}  {'where':52} {'mean width':>10}  below 0.93")
    for method in QUESTION_METHODS:
        points = question_grid(method, cells, grid(), QUESTION_COUNTS, ROLLOUTS, list(PER_ROLLOUT))
        for items in PER_ROLLOUT:
            sub = [p for p in points if p.sizes.endswith(items)]
            low = min(sub, key=lambda p: p.coverage)
            below = [f"{p.scenario.name} @{p.runs} q, {p.sizes.split(',')[0]}: {p.coverage:.3f}" for p in sub
                     if p.coverage < 0.93]
            where = f"{low.scenario.name}, {low.runs} q, {low.sizes.split(',')[0]}"
            print(f"{method:56} {items:21} {low.coverage:6.3f}  {where:52} {np.mean([p.width for p in sub]):10.3f}  "
                  f"{len(below)}/{len(sub)}" + (f" ({'; '.join(below)})" if below else ""))


BEYOND = (8, 20)
"""Run counts shown past the claim of issue 37's grid (2-5): an effect in few of many runs."""


def _effect_row(label: str, size: str, points: list[GridPoint]) -> str:
    low = min(points, key=lambda p: p.coverage)
    below = [f"{p.scenario.name} @{p.runs}: {p.coverage:.3f}" for p in points if p.coverage < 0.93]
    return (f"{label:58} {size:36} {low.coverage:6.3f}  {low.scenario.name + f', {low.runs}':58} "
            f"{np.mean([p.width for p in points]):10.3f}  {len(below)}/{len(points)}" + (f" ({'; '.join(below)})" if below else ""))


def print_effect_grid(cells: int) -> None:
    """Issue 37's grid: the paired gaps where the technique acts in some runs (questions) only, as shown
    and as before (the t interval alone), per run count (question count) and run size (rollouts, items)."""
    cases = effects()
    print(f"issue 37 grid (paired gaps, a technique that acts in some runs only): baseline in {EFFECT_BASELINES} x "
          f"technique acting in {tuple(f'{s:.0%}' for s in EFFECT_SHARES)} of runs, by +0.2 or all-or-nothing "
          f"(its rate 1 there) = {len(cases)} effects; runs {EFFECT_RUNS} (and {BEYOND}, past the claim); {cells} "
          f"simulated cells per case, seed {SEED}")
    print(f"{'method':58} {'runs / questions, sizes':36} {'min':>6}  {'where':58} {'mean width':>10}  below 0.93")
    for name, bounds in EFFECT_METHODS.items():
        points = effect_grid(bounds, cells, cases, (*EFFECT_RUNS, *BEYOND), list(SIZES))
        for size in SIZES:
            sub = [p for p in points if p.sizes == size and p.runs in EFFECT_RUNS]
            print(_effect_row(name, f"2-5 runs of {size}", sub))
            for r in EFFECT_RUNS + BEYOND:
                print(_effect_row(name, f"{r} runs of {size}", [p for p in points if p.sizes == size and p.runs == r]))
    for name, bounds in (("benchmark paired gap (by question), as shown", None),
                         ("benchmark paired gap before (t interval alone)", paired_t_bounds)):
        points = question_effect_grid(cells // 2, cases, EFFECT_RUNS, ROLLOUTS, list(PER_ROLLOUT),
                                      **({} if bounds is None else {"bounds": bounds}))
        for items in PER_ROLLOUT:
            print(_effect_row(name, f"2-5 questions, {items}", [p for p in points if p.sizes.endswith(items)]))
            for q in EFFECT_RUNS:
                print(_effect_row(name, f"{q} questions, {items}",
                                  [p for p in points if p.sizes.endswith(items) and p.runs == q]))

def print_card_grid(cells: int) -> None:
    """The epistemic matrix with repeats: the card-clustered interval against the interval over
    per-card averages it replaced, per number of cards, with minimum coverage, mean widths and the
    ratio of the old width to the new."""
    scenarios = card_grid_scenarios()
    points = card_grid(cells, scenarios)
    print(f"\nepistemic matrix with repeats: {len(scenarios)} scenarios (rates 0.05-0.5 x icc between a card's repeats "
          f"0-1, and an AP-like ratio) x cards {CARD_COUNTS} x repeats {CARD_REPEATS} = {len(points)} cases; "
          f"exact where every card has one 0/1 outcome (icc 1, or 1 repeat), else {cells} simulated cells per case, "
          f"seed {SEED}")
    print(f"{'cards':>5}  {'min (clustered)':>15}  {'where':58} {'width':>6}  {'min (old)':>9} {'width':>6}  "
          f"{'old/new width':>13}  below 0.93")
    for cards in (*CARD_COUNTS, None):
        sub = [p for p in points if cards is None or p.cards == cards]
        low = min(sub, key=lambda p: p.coverage)
        below = [f"{p.scenario.name}, {p.cards} cards x {p.repeats}: {p.coverage:.3f}" for p in sub if p.coverage < 0.93]
        print(f"{'all' if cards is None else cards:>5}  {low.coverage:15.3f}  "
              f"{f'{low.scenario.name}, {low.cards} x {low.repeats}':58} {np.mean([p.width for p in sub]):6.3f}  "
              f"{min(p.old_coverage for p in sub):9.3f} {np.mean([p.old_width for p in sub]):6.3f}  "
              f"{np.mean([p.old_width / p.width for p in sub]):13.2f}  {len(below)}/{len(sub)}"
              + (f" ({'; '.join(below)})" if below else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=4000, help="simulated cells per scenario and run count")
    parser.add_argument("--grid-only", action="store_true",
                        help="only issue 26's and 30's grids (the before/after of issue 15 is slow)")
    parser.add_argument("--questions-only", action="store_true", help="only issue 30's grid (the benchmark's intervals)")
    parser.add_argument("--effects-only", action="store_true",
                        help="only issue 37's grid (paired gaps, effects in some runs or questions)")
    args = parser.parse_args()
    cells = args.cells
    if args.effects_only:
        print_effect_grid(cells)
        return
    if not args.questions_only:
        print_grid(cells)
        print_card_grid(cells)
        print()
    print_question_grid(cells)
    if not args.questions_only:
        print()
        print_effect_grid(cells)
    if args.grid_only or args.questions_only:
        return
    print()
    print(f"coverage of 95% intervals for a cell's share (nominal 0.95), {cells} simulated cells each, seed {SEED}")
    print(f"{'scenario':44} {'runs':>4}  {'before':>7} {'width':>6} {'zero-w':>6}  {'after':>7} {'width':>6} {'zero-w':>6}")
    for scenario in (*SCENARIOS, STRESS):
        for runs in RUN_COUNTS:
            before, after = rate_coverage(scenario, runs, cells, old_rate), rate_coverage(scenario, runs, cells)
            print(f"{scenario.name:44} {runs:>4}  {before[0]:7.3f} {before[1]:6.3f} {before[2]:6.3f}"
                  f"  {after[0]:7.3f} {after[1]:6.3f} {after[2]:6.3f}")
    print("\ncoverage of 95% intervals for differences (paired: technique = baseline + 0.2 in each run; "
          "unpaired: scenario minus homogeneous p = 0.3)")
    print(f"{'difference':54} {'runs':>4}  {'before':>7}  {'after':>7}")
    for scenario in (SCENARIOS[0], SCENARIOS[2], STRESS):
        for runs in RUN_COUNTS:
            print(f"{'paired, ' + scenario.name:54} {runs:>4}  {paired_coverage(scenario, 0.2, runs, cells, old_paired):7.3f}"
                  f"  {paired_coverage(scenario, 0.2, runs, cells):7.3f}")
        for runs in RUN_COUNTS:
            before = unpaired_coverage(scenario, SCENARIOS[0], runs, cells, old_unpaired)
            print(f"{'unpaired, ' + scenario.name:54} {runs:>4}  {before:7.3f}"
                  f"  {unpaired_coverage(scenario, SCENARIOS[0], runs, cells):7.3f}")


if __name__ == "__main__":
    main()
