"""Score many bags, here, in N local processes or as Ray tasks (`safety_monitor.executors`), with one
progress bar.

Every executor runs `score_bag`, a pure function of (bag, config), so `--jobs N` and `--ray` give the
same results as one job, in input order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from tqdm import tqdm

from safety_monitor.executors import Done, Executor, Serial
from safety_monitor.installation import Copy, WithCopies, copy_problem
from safety_monitor.monitor.metrics import DEFAULT_RESAMPLES, Metrics, RiskDifference, compute_metrics, risk_differences
from safety_monitor.replay.score import BagResult, ReplayConfig, score_bag

UNGROUPED = "(no match)"
NOT_SCORED = "not scored: interrupted (Ctrl-C)"


def unique_bags(bags: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """Each bag once, in first-seen order, and a note per bag given again: another spelling of the path, a
    symlink, or a file of a bag folder also given would otherwise count its triggers twice. A bag folder
    wins over a file inside it (the folder is the whole bag)."""
    keys = [bag.resolve() for bag in bags]
    folders = {key for key in keys if key.is_dir()}
    owners = [key.parent if key.parent in folders and not key.is_dir() else key for key in keys]
    chosen: dict[Path, int] = {}  # bag -> index of the argument kept for it, in first-seen order
    for i, (key, owner) in enumerate(zip(keys, owners)):
        if owner not in chosen or key == owner != keys[chosen[owner]]:
            chosen[owner] = i
    kept = set(chosen.values())
    notes = [
        f"{bag}: the same bag as {bags[chosen[owner]]}, scored once"
        for i, (bag, owner) in enumerate(zip(bags, owners))
        if i not in kept
    ]
    return [bags[i] for i in chosen.values()], notes


def score_bags(
    bags: Sequence[Path], config: ReplayConfig, executor: Executor | None = None, progress: bool = True
) -> list[BagResult]:
    """One BagResult per bag, in the order given (a bag its episode markers cut into rollouts: one per rollout,
    `BagResult.split`), scored by `executor` (default: here, one at a time).
    The bar counts bags (and their rollouts, when markers cut some); run here it also counts each bag's frames. A bag whose worker died twice comes
    back failed, saying so. Ctrl-C stops the batch but keeps what was scored: the bags not finished come
    back `interrupted`, with the error NOT_SCORED."""
    executor = executor or Serial()
    if executor.in_process:
        done_by = executor.map(partial(_score_here, config=config, progress=progress), bags)
    else:  # each worker first checks it reads the command's copy of its bag
        done_by = executor.map(partial(_score_copy, config=config), WithCopies(bags))
    results: list[BagResult | None] = [None] * len(bags)
    bar = tqdm(total=len(bags), unit="bag", disable=not progress, dynamic_ncols=True)
    frames = rollouts = 0
    try:
        for done in done_by:
            result = results[done.index] = _result_of(bags[done.index], config, done)
            frames += result.frames
            rollouts += len(result.split())
            postfix = ([] if executor.in_process else [f"{frames} frames"]) + (
                [f"{rollouts} rollouts"] if rollouts != bar.n + 1 else []
            )
            if postfix:
                bar.set_postfix_str(", ".join(postfix), refresh=False)
            bar.update(1)
    except KeyboardInterrupt:
        pass
    finally:
        bar.close()
    return [
        part
        for bag, r in zip(bags, results)
        for part in (r.split() if r is not None else [_failed(bag, config, f"{bag}: {NOT_SCORED}", interrupted=True)])
    ]


@dataclass(frozen=True)
class Tally:
    """What a batch came to, in bags and in the rollouts reported (more than the bags when episode markers cut
    some): the closing line and the report count with it, whichever executor scored the bags."""

    bags: int
    scored: int
    failed: int
    not_scored: int
    rollouts: int  # the scored bags' rollouts

    @property
    def split(self) -> bool:
        return self.rollouts != self.scored

    def rollouts_text(self) -> str:
        """ ", 7 rollouts" when the scored bags' rollouts are not the bags themselves, else nothing."""
        return f", {self.rollouts} rollouts" if self.split else ""

    def line(self) -> str:
        """The batch's closing line: "3 of 3 bag(s) scored, 7 rollouts, 1 failed; interrupted: 2 not scored"."""
        return (
            f"{self.scored} of {self.bags} bag(s) scored{self.rollouts_text()}"
            + (f", {self.failed} failed" if self.failed else "")
            + (f"; interrupted: {self.not_scored} not scored" if self.not_scored else "")
        )


def tally(results: Sequence[BagResult]) -> Tally:
    """Count `score_bags`' results by bag (a bag's rollouts share its `whole`) and by rollout."""
    scored = [r for r in results if r.ok]
    bags = {r.whole.bag if r.whole is not None else id(r): r for r in results}.values()
    return Tally(
        bags=len(bags),
        scored=sum(r.ok for r in bags),
        failed=sum(not r.ok and not r.interrupted for r in bags),
        not_scored=sum(r.interrupted for r in bags),
        rollouts=len(scored),
    )


def _result_of(bag: Path, config: ReplayConfig, done: Done[BagResult]) -> BagResult:
    """A finished task's BagResult; a task that raised (score_bag catches every bag's error, so a bug in
    shipping it) or whose worker died twice is a failed bag, not a lost one."""
    if done.result is not None:
        done.result.retried = done.retried
        return done.result
    if done.lost is not None:
        return _failed(bag, config, f"{bag}: the worker scoring it died twice ({done.lost}); not scored")
    return _failed(bag, config, f"{bag}: {type(done.error).__name__}: {done.error}")


def _failed(bag: Path, config: ReplayConfig, error: str, interrupted: bool = False) -> BagResult:
    return BagResult(
        bag=str(bag),
        mode="predicates" if config.from_predicates else "robot_state",
        error=error,
        interrupted=interrupted,
    )


def _score_here(bag: Path, config: ReplayConfig, progress: bool) -> BagResult:
    with tqdm(unit="frame", desc=bag.name, leave=False, disable=not progress, dynamic_ncols=True) as frames:
        return score_bag(bag, config, progress=frames)


def _score_copy(item: tuple[Path, Copy | None], config: ReplayConfig) -> BagResult:
    """A worker's task: the bag scored, if what it finds at the bag's path is the command's copy; a failed bag
    saying what differs, if not."""
    bag, command = item
    problem = copy_problem(bag, command, "bags")
    return score_bag(bag, config) if problem is None else _failed(bag, config, problem)


def group_of(bag: str, pattern: re.Pattern[str] | None) -> str:
    """The group a bag belongs to: the pattern's first group (or whole match) in its path."""
    if pattern is None:
        return "all"
    found = pattern.search(bag)
    if found is None:
        return UNGROUPED
    return found.group(1) if pattern.groups else found.group(0)


@dataclass(frozen=True)
class Summary:
    """Metrics over every scored bag and per group (groups sorted by name)."""

    overall: Metrics | None  # None when no bag could be scored
    groups: dict[str, Metrics]
    group_of_bag: dict[str, str]
    # group -> its risk minus the first group's (the reference), for every group after the first
    differences: dict[str, tuple[RiskDifference, ...]] = field(default_factory=dict)


def summarize(
    results: Sequence[BagResult],
    pattern: re.Pattern[str] | None = None,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Summary:
    """Per-trigger metrics (the monitor's own, with bootstrap intervals over bags) for all and per group."""
    scored = [(r.bag, r.trace) for r in results if r.ok and r.trace is not None]  # no trace: the bag failed
    groups_of = {r.bag: group_of(r.bag, pattern) for r in results}
    overall = compute_metrics([trace for _, trace in scored], resamples=resamples, seed=seed) if scored else None
    groups: dict[str, Metrics] = {}
    differences: dict[str, tuple[RiskDifference, ...]] = {}
    if pattern is not None:
        traces = {
            name: [trace for bag, trace in scored if groups_of[bag] == name]
            for name in sorted({groups_of[bag] for bag, _ in scored})
        }
        groups = {name: compute_metrics(members, resamples=resamples, seed=seed) for name, members in traces.items()}
        names = list(traces)
        differences = {
            name: risk_differences(traces[names[0]], traces[name], resamples=resamples, seed=seed) for name in names[1:]
        }
    return Summary(overall, groups, groups_of, differences)
