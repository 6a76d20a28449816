"""Cross-validation for the LoCoMo retrieval eval (`--folds N`): conversations split into folds by their order in
the file; every choice (the RRF weights from a small grid) is made on the other folds and reported on the held-out
one, and a path is on by default only if its gain over keywords alone excludes zero on every held-out fold."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentos.eval.scoring import Config, ablation, asked_label, compare, gain_over
from agentos.retrieval.recall_paths import DEFAULT_WEIGHTS, STAGES

WEIGHT_GRID = (0.25, 1.0)  # a non-keyword path's RRF weight, beside its default (DEFAULT_WEIGHTS: 0.5)


def fold_of(index: int, count: int, folds: int) -> int:
    """The fold of the `index`th of `count` conversations (in file order): contiguous, as even as they divide
    (10 conversations in 2 folds: 1-5 and 6-10)."""
    return index * folds // count if count else 0


def weight_grid(paths: Sequence[str]) -> list[Config]:
    """`paths` with other RRF weights: each weighted path (a list other than keyword) at each WEIGHT_GRID value,
    the others at their defaults, then all of them at each value together."""
    tuned = [p for p in paths if p != "keyword" and p not in STAGES and p in DEFAULT_WEIGHTS]
    grid = [{p: w} for p in tuned for w in WEIGHT_GRID]
    grid += [{p: w for p in tuned} for w in WEIGHT_GRID] if len(tuned) > 1 else []
    return [Config(tuple(paths), weights) for weights in grid]


def chosen(candidates: Sequence[Config], folds: Sequence[int]) -> Config:
    """The candidate with the best hit@10 over the questions of `folds` (then MRR; ties: the earlier one, the
    default first)."""
    def mean(config: Config, key: str) -> float:
        rows = [r[key] for f in folds for r in config.held(f).overall()]
        return round(sum(rows) / len(rows), 9) if rows else 0.0
    return max(candidates, key=lambda c: (mean(c, "hit@10"), mean(c, "mrr")))  # max keeps the first of equals


@dataclass(frozen=True)
class Verdict:
    """A path's gain over keywords alone on each held-out fold that has questions (`folds`), and whether every
    interval excludes zero."""

    path: str
    gains: tuple[tuple[float, float, float], ...]
    folds: tuple[int, ...]

    @property
    def on(self) -> bool:
        return bool(self.gains) and all(low > 0 for _, low, _ in self.gains)


def scored_folds(base: Config, folds: int) -> tuple[int, ...]:
    """The folds that hold questions of the categories asked (a small file or one category may leave one empty)."""
    return tuple(f for f in range(folds) if base.held(f).overall())


def verdicts(per_path: dict[str, Config], base: Config, folds: int) -> list[Verdict]:
    """The decision rule for each path (its configuration: keyword + the path), fold by fold."""
    scored = scored_folds(base, folds)
    return [Verdict(path, tuple(gain_over(config.held(f), base.held(f)) for f in scored), scored)
            for path, config in per_path.items()]


def report(configs: list[Config], base: Config, folds: int, *, names: Sequence[str], per_path: dict[str, Config],
           default: Config, grid: list[Config], baseline: Config | None = None,
           rule_of_paths: bool = True, without: dict[str, Config] | None = None) -> None:
    """For each held-out fold, every configuration's table and the weights chosen on the other folds; then the
    decision rule's outcome, for each path of `per_path` (`rule_of_paths`) or for the configurations it names;
    then what each path of `default` adds to the others (`without`: by path, `default` without it). `names` says
    which conversations each fold holds."""
    candidates = [default, *grid]
    scored = scored_folds(base, folds)
    for fold in range(folds):
        held = [c.held(fold) for c in configs]
        count = len(base.held(fold).overall())
        if fold not in scored:
            print(f"\nfold {fold + 1} held out ({names[fold]}): no questions of the categories asked; not scored")
            continue
        ablation(held, base.held(fold), f"fold {fold + 1} held out ({names[fold]}; {count} questions, categories "
                                        f"{asked_label(base.kinds)}): hit@10 (gain over keyword alone, 95% paired bootstrap)")
        if baseline is not None:
            compare(default.held(fold).overall(), baseline.held(fold).overall())
        others = [f for f in scored if f != fold]
        if grid and not others:
            print("weights: no other fold has questions to choose them on")
        elif grid:
            pick = chosen(candidates, others)
            mine, untuned = pick.held(fold), default.held(fold)
            gain, low, high = gain_over(mine, base.held(fold))
            more, more_low, more_high = gain_over(mine, untuned)
            print(f"weights chosen on fold(s) {', '.join(str(f + 1) for f in others)}: {_weights(pick)}; on fold "
                  f"{fold + 1}: hit@10 {mine.mean():.3f}, gain over keyword {gain:+.3f} [{low:+.3f}, {high:+.3f}], "
                  f"over the default weights {more:+.3f} [{more_low:+.3f}, {more_high:+.3f}]")
    found = verdicts(per_path, base, folds)
    if found:
        what = "a path is on by default only if its gain over keyword alone (keyword + the path)" if rule_of_paths \
            else "a configuration passes only if its gain over keyword alone"
        print(f"\ndecision rule: {what} excludes zero on all {len(scored)} held-out folds with questions")
        width = max(len(v.path) for v in found) + 2
        for verdict in found:
            gains = "  ".join(f"fold {f + 1} {g:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                              for f, (g, lo, hi) in zip(verdict.folds, verdict.gains))
            print(f"  {verdict.path:<{width}}{gains}  -> {'on' if verdict.on else 'off'}")
        if rule_of_paths:
            print(f"on by default by the rule: {', '.join(['keyword', *(v.path for v in found if v.on)])}")
    if without:
        print(f"\nwhat each path of {default.label} adds to the others (it against the same paths without it)")
        width = max(map(len, without)) + 2
        for path, config in without.items():
            gains = "  ".join(f"fold {f + 1} {g:+.3f} [{lo:+.3f}, {hi:+.3f}]" for f in scored
                              for g, lo, hi in [gain_over(default.held(f), config.held(f))])
            print(f"  {path:<{width}}{gains}")


def _weights(config: Config) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in config.weights.items()) if config.weights else "the defaults"
