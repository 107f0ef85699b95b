"""Score many bags, in this process or in N worker processes, with one progress bar.

Workers run `score_bag`, a pure function of (bag, config), so `--jobs N` gives the same results as
one job, in input order; a distributed engine (Ray, Dask) can map the same function when one
machine is not enough. There is no scheduler here beyond the standard library's process pool.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from safety_monitor.errors import SourceError
from safety_monitor.monitor.metrics import DEFAULT_RESAMPLES, Metrics, compute_metrics
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


def score_bags(bags: Sequence[Path], config: ReplayConfig, jobs: int = 1, progress: bool = True) -> list[BagResult]:
    """One BagResult per bag, in the order given. The bar counts bags; with one job it also counts frames.
    `jobs` 0: one per CPU this process may run on. Ctrl-C stops the batch but keeps what was scored: the
    bags not finished come back `interrupted`, with the error NOT_SCORED."""
    if jobs < 0:
        raise SourceError(f"--jobs must be 0 (one per CPU) or more, got {jobs}")
    jobs = jobs or len(os.sched_getaffinity(0))
    results: list[BagResult | None] = [None] * len(bags)
    bar = tqdm(total=len(bags), unit="bag", disable=not progress, dynamic_ncols=True)
    try:
        if jobs == 1 or len(bags) == 1:
            for i, bag in enumerate(bags):
                results[i] = _score_here(bag, config, bar, progress)
        else:
            _score_in_workers(bags, config, jobs, results, bar)
    except KeyboardInterrupt:
        pass
    finally:
        bar.close()
    return [r if r is not None else _not_scored(bag, config) for bag, r in zip(bags, results)]


def _score_in_workers(
    bags: Sequence[Path], config: ReplayConfig, jobs: int, results: list[BagResult | None], bar: tqdm
) -> None:
    # spawn: workers start clean (no inherited MuJoCo or thread state); they compile nothing twice because
    # the DFA cache is on disk. A worker leaves Ctrl-C to this process, which stops the batch.
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_exit_quietly_on_interrupt
    ) as pool:
        futures = {pool.submit(score_bag, bag, config): i for i, bag in enumerate(bags)}
        frames = 0
        try:
            for future in as_completed(futures):
                result = future.result()
                results[futures[future]] = result
                frames += result.frames
                bar.set_postfix_str(f"{frames} frames", refresh=False)
                bar.update(1)
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _exit_quietly_on_interrupt() -> None:
    """In a worker: Ctrl-C (sent to the whole process group) ends it without a traceback of its own."""
    signal.signal(signal.SIGINT, lambda *_: os._exit(130))


def _not_scored(bag: Path, config: ReplayConfig) -> BagResult:
    return BagResult(
        bag=str(bag),
        mode="predicates" if config.from_predicates else "robot_state",
        error=f"{bag}: {NOT_SCORED}",
        interrupted=True,
    )


def _score_here(bag: Path, config: ReplayConfig, bar: tqdm, progress: bool) -> BagResult:
    with tqdm(unit="frame", desc=bag.name, leave=False, disable=not progress, dynamic_ncols=True) as frames:
        result = score_bag(bag, config, progress=frames)
    bar.update(1)
    return result


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
    if pattern is not None:
        for name in sorted({groups_of[bag] for bag, _ in scored}):
            members = [trace for bag, trace in scored if groups_of[bag] == name]
            groups[name] = compute_metrics(members, resamples=resamples, seed=seed)
    return Summary(overall, groups, groups_of)
