"""Computation tree: many predicate trajectories merged so that every distinct prefix is one node.

Array layout (all numpy, one entry per node):
- `parent` (-1 at roots; trajectories whose first frames differ give several roots), `depth` (the
  frame index), `letter` (row of `letters`, the distinct predicate valuations), `end` (some
  trajectory stops at this node; every leaf is an end node).
- Nodes are grouped into *segments*, maximal chains in which every node but the last has exactly
  one child. Nodes are numbered by (segment level, segment, depth): each segment is a contiguous
  range with depth increasing, and all segments with the same number of branch points above them
  (their level) form one contiguous block. The CTL checker solves a whole level with a few
  vectorised scans, so its cost grows with the number of nodes and of branching levels, not with
  the trajectory count or length.

A path of the tree is a root-to-end-node path; these are exactly the distinct input trajectories.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from safety_monitor.errors import SourceError


@dataclass(frozen=True, eq=False)
class ComputationTree:
    atoms: tuple[str, ...]
    names: tuple[str, ...]  # one per input trajectory
    parent: np.ndarray  # int64
    depth: np.ndarray  # int64
    letter: np.ndarray  # int64, row of `letters`
    letters: np.ndarray  # bool (n_letters, n_atoms)
    end: np.ndarray  # bool
    trajectory_end: np.ndarray  # int64 per trajectory: the node of its last frame
    n_children: np.ndarray  # int64
    segment: np.ndarray  # int64 per node
    segment_head: np.ndarray  # int64 per segment: first node
    segment_tail: np.ndarray  # int64 per segment: last node
    segment_parent: np.ndarray  # int64 per segment: segment of the head's parent, -1 at roots
    level_nodes: np.ndarray  # node offsets of the segment levels (n_levels + 1)
    level_segments: np.ndarray  # segment offsets of the segment levels (n_levels + 1)
    branch_heads: np.ndarray  # heads of non-root segments, sorted by their parent
    branch_parent: np.ndarray  # the parent of each of `branch_heads` (sorted)
    n_frames: int  # frames over all input trajectories, before merging

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    @property
    def n_levels(self) -> int:
        return int(self.level_nodes.size - 1)

    @property
    def roots(self) -> np.ndarray:
        return self.segment_head[self.level_segments[0]:self.level_segments[1]]

    def atom(self, name: str) -> np.ndarray:
        """Value of predicate `name` at every node."""
        try:
            column = self.atoms.index(name)
        except ValueError:
            raise SourceError(f"predicate {name!r} is not recorded in the trajectories (they have: {', '.join(self.atoms)})") from None
        return self.letters[self.letter, column]

    def valuation(self, node: int, atoms: Sequence[str] | None = None) -> dict[str, bool]:
        row = self.letters[self.letter[node]]
        wanted = self.atoms if atoms is None else atoms
        return {a: bool(row[self.atoms.index(a)]) for a in wanted}

    def children(self, node: int) -> np.ndarray:
        """Child nodes, in node order (a segment's next node, or the heads of the next level)."""
        if self.n_children[node] == 0:
            return np.empty(0, dtype=np.int64)
        if self.segment_tail[self.segment[node]] != node:
            return np.array([node + 1])
        lo, hi = np.searchsorted(self.branch_parent, [node, node + 1])
        return self.branch_heads[lo:hi]

    def path_to(self, node: int) -> list[int]:
        """Nodes from the root down to `node`."""
        path = [int(node)]
        while self.parent[path[-1]] >= 0:
            path.append(int(self.parent[path[-1]]))
        return path[::-1]

    def ancestor_at_depth(self, nodes: np.ndarray, depth: int) -> np.ndarray:
        """For each node (of depth >= `depth`), its ancestor at `depth`; one jump per segment."""
        x = np.asarray(nodes, dtype=np.int64).copy()
        while True:
            heads = self.segment_head[self.segment[x]]
            above = self.depth[heads] > depth
            if not above.any():
                return x - (self.depth[x] - depth)
            x[above] = self.parent[heads[above]]

    def trajectories_through(self, node: int) -> list[int]:
        """Indices of the input trajectories whose path passes through `node`."""
        ends = self.trajectory_end
        deep = np.flatnonzero(self.depth[ends] >= self.depth[node])
        hit = self.ancestor_at_depth(ends[deep], int(self.depth[node])) == node
        return deep[hit].tolist()


def build_tree(
    traces: Sequence[np.ndarray], atoms: Sequence[str], names: Sequence[str] | None = None
) -> ComputationTree:
    """Merge trajectories (bool arrays frames x atoms, columns in `atoms` order) into one tree."""
    atoms = tuple(atoms)
    if not traces:
        raise SourceError("no trajectories to merge")
    names = tuple(names) if names is not None else tuple(f"trajectory_{i}" for i in range(len(traces)))
    if len(names) != len(traces):
        raise SourceError(f"{len(names)} names for {len(traces)} trajectories")
    arrays = []
    for name, t in zip(names, traces):
        a = np.asarray(t, dtype=bool)
        if a.ndim != 2 or a.shape[1] != len(atoms) or a.shape[0] == 0:
            raise SourceError(f"trajectory {name!r}: expected a non-empty frames x {len(atoms)} array, got shape {a.shape}")
        arrays.append(a)
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    letters, letter_of_frame = _letters(np.concatenate(arrays), len(atoms))
    representative = _deduplicate(letter_of_frame, offsets, lengths)
    unique = np.flatnonzero(representative == np.arange(len(arrays)))
    parent, depth, letter, last = _trie(letter_of_frame, offsets[unique], lengths[unique], len(letters))
    ends = np.empty(len(arrays), dtype=np.int64)
    ends[unique] = last
    ends = ends[representative]
    return _layout(atoms, names, parent, depth, letter, letters, ends, int(lengths.sum()))


def tree_from_valuations(
    trajectories: Sequence[Sequence[Mapping[str, bool]]], names: Sequence[str] | None = None
) -> ComputationTree:
    """Merge trajectories given as lists of {predicate: bool}; every frame must name every predicate."""
    atoms = sorted({a for frames in trajectories for frame in frames for a in frame})
    arrays = []
    for i, frames in enumerate(trajectories):
        label = names[i] if names is not None else f"trajectory_{i}"
        try:
            arrays.append(np.array([[bool(frame[a]) for a in atoms] for frame in frames], dtype=bool).reshape(len(frames), len(atoms)))
        except KeyError as exc:
            raise SourceError(f"trajectory {label!r}: a frame has no value for predicate {exc.args[0]!r}") from None
    return build_tree(arrays, atoms, names)


def _letters(frames: np.ndarray, n_atoms: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct valuations (bool rows) and, per frame, the index of its valuation."""
    packed = np.packbits(frames, axis=1) if n_atoms else np.zeros((frames.shape[0], 1), dtype=np.uint8)
    rows, inverse = np.unique(packed, axis=0, return_inverse=True)
    letters = np.unpackbits(rows, axis=1, count=n_atoms).astype(bool) if n_atoms else np.zeros((1, 0), dtype=bool)
    return letters, inverse.reshape(-1).astype(np.int64)


def _deduplicate(letter_of_frame: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """For each trajectory, the first trajectory with exactly the same frames (itself if none)."""
    seen: dict[bytes, int] = {}
    return np.array(
        [seen.setdefault(letter_of_frame[o:o + n].tobytes(), i) for i, (o, n) in enumerate(zip(offsets, lengths))],
        dtype=np.int64,
    )


def _trie(letter_of_frame, offsets, lengths, n_letters):
    """Prefix-merge distinct trajectories level by level; once every live trajectory has a node of
    its own, the rest of each one is a private chain, appended in one vectorised step."""
    parents, depths, letters = [], [], []
    count = 0
    current = np.full(lengths.size, -1, dtype=np.int64)
    alive = np.arange(lengths.size)
    d = 0
    while alive.size:
        key = (current[alive] + 1) * n_letters + letter_of_frame[offsets[alive] + d]
        keys, inverse = np.unique(key, return_inverse=True)
        parents.append(keys // n_letters - 1)
        letters.append(keys % n_letters)
        depths.append(np.full(keys.size, d, dtype=np.int64))
        current[alive] = count + inverse.reshape(-1)
        count += keys.size
        d += 1
        separate = keys.size == alive.size
        alive = alive[lengths[alive] > d]
        if separate and alive.size:
            rest = lengths[alive] - d
            total = int(rest.sum())
            first = np.repeat(np.cumsum(rest) - rest, rest)
            within = np.arange(total) - first
            ids = count + np.arange(total)
            parents.append(np.where(within == 0, np.repeat(current[alive], rest), ids - 1))
            letters.append(letter_of_frame[np.repeat(offsets[alive] + d, rest) + within])
            depths.append(d + within)
            current[alive] = count + np.cumsum(rest) - 1
            count += total
            break
    return np.concatenate(parents), np.concatenate(depths), np.concatenate(letters), current


def _layout(atoms, names, parent, depth, letter, letters, ends, n_frames) -> ComputationTree:
    """Renumber nodes by (segment level, segment, depth) and derive the segment arrays."""
    n = parent.size
    nodes = np.arange(n)
    n_children = np.bincount(parent[parent >= 0], minlength=n)
    is_head = (parent < 0) | (n_children[np.maximum(parent, 0)] != 1)
    head = np.where(is_head, nodes, parent)
    while True:  # pointer jumping: every node finds the head of its segment in log(depth) rounds
        nxt = head[head]
        if np.array_equal(nxt, head):
            break
        head = nxt
    heads = np.flatnonzero(is_head)
    head_index = np.full(n, -1, dtype=np.int64)
    head_index[heads] = np.arange(heads.size)
    up = np.where(parent[heads] >= 0, head_index[head[np.maximum(parent[heads], 0)]], np.arange(heads.size))
    level = (up != np.arange(heads.size)).astype(np.int64)
    while True:  # list ranking: number of branch points above each segment
        nxt = up[up]
        if np.array_equal(nxt, up):
            break
        level = level + level[up]
        up = nxt
    node_level = level[head_index[head]]
    order = np.lexsort((depth, head, node_level))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = nodes
    new_parent = np.where(parent[order] >= 0, rank[np.maximum(parent[order], 0)], -1)
    new_head = is_head[order]
    segment = np.cumsum(new_head) - 1
    segment_head = np.flatnonzero(new_head)
    segment_tail = np.append(segment_head[1:] - 1, n - 1)
    segment_parent = np.where(new_parent[segment_head] >= 0, segment[np.maximum(new_parent[segment_head], 0)], -1)
    sorted_level = node_level[order]
    n_levels = int(sorted_level[-1]) + 1
    level_nodes = np.searchsorted(sorted_level, np.arange(n_levels + 1))
    level_segments = np.searchsorted(sorted_level[segment_head], np.arange(n_levels + 1))
    child_heads = segment_head[segment_parent >= 0]
    by_parent = np.argsort(new_parent[child_heads], kind="stable")
    trajectory_end = rank[ends]
    end = np.zeros(n, dtype=bool)
    end[trajectory_end] = True
    return ComputationTree(
        atoms=atoms, names=names, parent=new_parent, depth=depth[order], letter=letter[order], letters=letters,
        end=end, trajectory_end=trajectory_end, n_children=n_children[order], segment=segment,
        segment_head=segment_head, segment_tail=segment_tail, segment_parent=segment_parent,
        level_nodes=level_nodes, level_segments=level_segments, branch_heads=child_heads[by_parent],
        branch_parent=new_parent[child_heads][by_parent], n_frames=n_frames,
    )
