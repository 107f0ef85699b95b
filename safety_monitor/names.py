"""The one "did you mean" of the package: a misspelt joint, link, body, predicate, setting, threshold key
or topic-mapping key is answered with the same hint wherever it is written."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import SequenceMatcher

MOST_APART = 4
"""Letters (left out of either name by difflib's matching, case ignored) a known name may differ by, and at
most a fifth of both names' letters: one wrong, missing, extra or swapped letter in a name of five letters
or more passes, and so does a forgotten unit suffix (`control_rate` for `control_rate_hz`); `cub` for
`cube` passes, `mug` does not; names sharing only a prefix (`object_released`, `object_grasped`;
`preconditions_pick`, `preconditions_place`) are neighbours, not typos of each other, and do not."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`" (did you mean 'x'?)"` or `" (did you mean 'x' or 'y'?)"` with the known names nearest `name`, or ''.

    Only the names fewest letters apart are offered, so `arm_jont1` gets `arm_joint1` and not its sibling
    `arm_joint6`; a name as near to three or more (`joint7` among `joint1`..`joint6`) is a typo of none of
    them and gets no hint."""
    a = name.casefold()
    # names whose lengths differ by more than MOST_APART are further apart than that: not compared (difflib
    # on a 60,000-letter key, a YAML typo, took seconds per known name)
    apart = {k: _apart(a, b) for k in set(known) if k != name and abs(len(a) - len(b := k.casefold())) <= MOST_APART}
    fewest = min((n for k, n in apart.items() if n <= MOST_APART and 5 * n <= len(name) + len(k)), default=None)
    near = sorted(k for k, n in apart.items() if n == fewest)
    if not near or len(near) > 2:
        return ""
    return f" (did you mean {' or '.join(map(repr, near))}?)"


def _apart(a: str, b: str) -> int:
    """How many letters of `a` and `b` together difflib leaves unmatched (0 for equal names)."""
    matched = sum(block.size for block in SequenceMatcher(None, a, b).get_matching_blocks())
    return len(a) + len(b) - 2 * matched
