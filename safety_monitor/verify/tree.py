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
        return self.segment_head[self.level_segments[0] : self.level_segments[1]]

    def atom(self, name: str) -> np.ndarray:
        """Value of predicate `name` at every node."""
        try:
            column = self.atoms.index(name)
        except ValueError:
            raise SourceError(
                f"predicate {name!r} is not recorded in the trajectories (they have: {', '.join(self.atoms)})"
            ) from None
        return self.letters[:, column][self.letter]

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

    def trajectories_ending_at(self, node: int) -> list[int]:
        """Indices of the input trajectories whose last frame is `node`."""
        return np.flatnonzero(self.trajectory_end == node).tolist()

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
    packed: list[np.ndarray] = []
    seen: dict[bytes, int] = {}
    first_of: list[int] = []  # per trajectory, the first identical one
    for i, (name, t) in enumerate(zip(names, traces)):
        a = np.asarray(t, dtype=bool)
        if a.ndim != 2 or a.shape[1] != len(atoms) or a.shape[0] == 0:
            raise SourceError(
                f"trajectory {name!r}: expected a non-empty frames x {len(atoms)} array, got shape {a.shape}"
            )
        rows = np.packbits(a, axis=1) if atoms else np.zeros((a.shape[0], 1), dtype=np.uint8)
        first = seen.setdefault(rows.tobytes(), i)  # identical trajectories are merged up front
        first_of.append(first)
        if first == i:
            packed.append(rows)
    representative = np.array(first_of, dtype=np.int64)
    unique = np.flatnonzero(representative == np.arange(len(traces)))
    lengths = np.array([p.shape[0] for p in packed], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    letters, letter_of_frame = _letters(np.concatenate(packed), len(atoms))
    parent, depth, letter, last = _trie(letter_of_frame, offsets, lengths)
    ends = np.empty(len(traces), dtype=np.int64)
    ends[unique] = last
    ends = ends[representative]
    n_frames = int(sum(np.shape(t)[0] for t in traces))
    return _layout(atoms, names, parent, depth, letter, letters, ends, n_frames)


def tree_from_valuations(
    trajectories: Sequence[Sequence[Mapping[str, bool]]], names: Sequence[str] | None = None
) -> ComputationTree:
    """Merge trajectories given as lists of {predicate: bool}; every frame must name every predicate."""
    atoms = sorted({a for frames in trajectories for frame in frames for a in frame})
    arrays = []
    for i, frames in enumerate(trajectories):
        label = names[i] if names is not None else f"trajectory_{i}"
        try:
            arrays.append(
                np.array([[bool(frame[a]) for a in atoms] for frame in frames], dtype=bool).reshape(
                    len(frames), len(atoms)
                )
            )
        except KeyError as exc:
            raise SourceError(f"trajectory {label!r}: a frame has no value for predicate {exc.args[0]!r}") from None
    return build_tree(arrays, atoms, names)


def path_forest(tree: ComputationTree, ends: np.ndarray) -> tuple[ComputationTree, np.ndarray]:
    """The root-to-node paths of `tree` down to each of `ends` (distinct end nodes) as separate
    chains that share nothing, in the order of `ends`, and the node of `tree` each forest node copies.

    A CTL formula checked on the forest is read along each path alone: A and E range over its one
    path, so a formula lifted from LTLf gets each trajectory's own LTLf verdict. The trajectories
    ending at `ends` keep their names; the others are left out.
    """
    ends = np.asarray(ends, dtype=np.int64)
    lengths = tree.depth[ends] + 1
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    nodes = np.empty(int(offsets[-1]), dtype=np.int64)
    # fill each chain from its end up, one segment (a contiguous run of node ids) per step
    x, stop = ends.copy(), offsets[1:].copy()
    while x.size:
        head = tree.segment_head[tree.segment[x]]
        count = x - head + 1
        within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        nodes[np.repeat(stop - count, count) + within] = np.repeat(head, count) + within
        stop -= count
        up = tree.parent[head] >= 0
        x, stop = tree.parent[head][up], stop[up]
    n, k = nodes.size, ends.size
    heads, tails = offsets[:-1], offsets[1:] - 1
    parent = np.arange(n) - 1
    parent[heads] = -1
    end = np.zeros(n, dtype=bool)
    end[tails] = True
    kept = np.flatnonzero(np.isin(tree.trajectory_end, ends))
    chain_of = dict(zip(ends.tolist(), range(k)))
    chain = np.array([chain_of[e] for e in tree.trajectory_end[kept].tolist()], dtype=np.int64)
    forest = ComputationTree(
        atoms=tree.atoms,
        names=tuple(tree.names[i] for i in kept),
        parent=parent,
        depth=tree.depth[nodes],
        letter=tree.letter[nodes],
        letters=tree.letters,
        end=end,
        trajectory_end=tails[chain],
        n_children=(~end).astype(np.int64),
        segment=np.repeat(np.arange(k), lengths),
        segment_head=heads,
        segment_tail=tails,
        segment_parent=np.full(k, -1, dtype=np.int64),
        level_nodes=np.array([0, n]),
        level_segments=np.array([0, k]),
        branch_heads=np.empty(0, dtype=np.int64),
        branch_parent=np.empty(0, dtype=np.int64),
        n_frames=int(lengths[chain].sum()),
    )
    return forest, nodes


def _letters(packed: np.ndarray, n_atoms: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct valuations (bool rows) and, per frame, the index of its valuation.

    Predicates hold their values for many frames, so only the first frame of each run of equal rows
    goes through the (sorting) unique; the rest of the run copies its index.
    """
    change = np.ones(packed.shape[0], dtype=bool)
    change[1:] = (packed[1:] != packed[:-1]).any(axis=1)
    starts = np.flatnonzero(change)
    if packed.shape[1] <= 8:  # up to 64 predicates a row is one machine word: a 1-D unique is much faster
        words = np.zeros((starts.size, 8), dtype=np.uint8)
        words[:, : packed.shape[1]] = packed[starts]
        codes, inverse = np.unique(words.view(">u8").reshape(-1), return_inverse=True)
        rows = codes.astype(">u8").view(np.uint8).reshape(-1, 8)[:, : packed.shape[1]]
    else:
        rows, inverse = np.unique(packed[starts], axis=0, return_inverse=True)
    letter_of_frame = np.repeat(inverse.reshape(-1).astype(np.int64), np.diff(np.append(starts, packed.shape[0])))
    letters = np.unpackbits(rows, axis=1, count=n_atoms).astype(bool) if n_atoms else np.zeros((1, 0), dtype=bool)
    return letters, letter_of_frame


def _trie(letter_of_frame, offsets, lengths):
    """Prefix-merge distinct trajectories: in lexicographic order, each one adds the nodes past its
    longest common prefix with the one before, hanging from that prefix's last node."""
    sequences = [letter_of_frame[o : o + n] for o, n in zip(offsets, lengths)]
    order = sorted(range(len(sequences)), key=lambda i: sequences[i].astype(">u8").tobytes())
    shared = np.zeros(len(order), dtype=np.int64)  # common prefix with the previous trajectory in order
    hang = np.full(len(order), -1, dtype=np.int64)  # parent of the first node it adds
    first_id = np.zeros(len(order), dtype=np.int64)
    path: list[tuple[int, int]] = []  # the previous trajectory's path as (first depth, first node id) chains
    count = 0
    for k, i in enumerate(order):
        if k:
            prev, cur = sequences[order[k - 1]], sequences[i]
            m = min(prev.size, cur.size)
            differ = np.flatnonzero(prev[:m] != cur[:m])
            shared[k] = differ[0] if differ.size else m
        while path and path[-1][0] >= shared[k]:
            path.pop()
        if shared[k]:
            depth0, id0 = path[-1]
            hang[k] = id0 + shared[k] - 1 - depth0
        first_id[k] = count
        path.append((int(shared[k]), count))
        count += int(lengths[i] - shared[k])
    rest = lengths[order] - shared
    within = np.arange(count) - np.repeat(first_id, rest)
    ids = np.arange(count)
    parent = np.where(within == 0, np.repeat(hang, rest), ids - 1)
    depth = np.repeat(shared, rest) + within
    letter = letter_of_frame[np.repeat(offsets[order], rest) + depth]
    last = np.empty(len(order), dtype=np.int64)
    last[order] = first_id + rest - 1
    return parent, depth, letter, last


def _layout(atoms, names, parent, depth, letter, letters, ends, n_frames) -> ComputationTree:
    """Renumber nodes (given in preorder) by (segment level, segment, depth); derive the segment arrays."""
    n = parent.size
    nodes = np.arange(n)
    n_children = np.bincount(parent[parent >= 0], minlength=n)
    # In preorder an only child directly follows its parent, so segments are runs of node ids.
    is_head = np.ones(n, dtype=bool)
    is_head[1:] = (parent[1:] != nodes[:-1]) | (n_children[:-1] != 1)
    old_segment = np.cumsum(is_head) - 1
    heads = np.flatnonzero(is_head)
    up = np.where(parent[heads] >= 0, old_segment[np.maximum(parent[heads], 0)], np.arange(heads.size))
    level = (up != np.arange(heads.size)).astype(np.int64)
    while True:  # list ranking over segments: the number of branch points above each one
        nxt = up[up]
        if np.array_equal(nxt, up):
            break
        level = level + level[up]
        up = nxt
    node_level = level[old_segment]
    order = np.argsort(node_level, kind="stable")  # keeps preorder, hence segments, within a level
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
        atoms=atoms,
        names=names,
        parent=new_parent,
        depth=depth[order],
        letter=letter[order],
        letters=letters,
        end=end,
        trajectory_end=trajectory_end,
        n_children=n_children[order],
        segment=segment,
        segment_head=segment_head,
        segment_tail=segment_tail,
        segment_parent=segment_parent,
        level_nodes=level_nodes,
        level_segments=level_segments,
        branch_heads=child_heads[by_parent],
        branch_parent=new_parent[child_heads][by_parent],
        n_frames=n_frames,
    )
