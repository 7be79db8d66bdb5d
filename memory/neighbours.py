"""Conversation neighbours: an exchange next to a strong match in the same sitting shares its topic.

People split one topic over consecutive turns: "今天我遇到了一个麻烦" is followed by what the trouble was;
"Is this your own painting?" by "Yeah, I painted that lake sunrise last year". Matching scores each turn
alone, so the turn that holds the answer can rank far below its neighbour that matches the question's
words. ``lift_neighbours`` lets each recalled item inherit part of the lead of the item next to it in the
same thread: ``score += share · max(0, score(neighbour) − score(item))``.

- *Next to* means adjacent in time among the recalled candidates of that thread (records written by one
  turn — an exchange and the facts drawn from it — share a time and count as one position), at most
  ``max_gap`` seconds apart (one sitting): turns of another day are another conversation.
- With ``share < 1`` a lifted item stays below the item that lifted it, so the best match keeps its rank
  (recall@1 cannot drop because of a lift); an item already as relevant as its neighbour gains nothing.
- Pure and cheap: a pass over the candidates already scored, no store read.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import replace

from mneme.memory.ranking import Recalled

_NEVER = float("-inf")
SITTING_SECONDS = 30 * 60.0
"""Two turns further apart than this are not neighbours (another sitting of the conversation)."""


def lift_neighbours(ranked: Sequence[Recalled], *, share: float = 0.5,
                    max_gap: float = SITTING_SECONDS) -> list[Recalled]:
    """``ranked`` re-scored as the module docstring says, best first (ties by id); ``share`` 0 changes nothing.

    A lifted item carries the signal ``neighbour`` (the lift added to its score).
    """
    items = list(ranked)
    if share <= 0 or len(items) < 2:
        return items
    # per thread: the best score at each distinct time of its candidates, then those times in order
    best_at: dict[str, dict[float, float]] = {}
    for it in items:
        if it.thread_id:
            at = best_at.setdefault(it.thread_id, {})
            at[it.created_at] = max(at.get(it.created_at, _NEVER), it.score)
    lines = {tid: (sorted(at), at) for tid, at in best_at.items() if len(at) > 1}
    out: list[Recalled] = []
    for it in items:
        line = lines.get(it.thread_id) if it.thread_id else None
        if line is None:
            out.append(it)
            continue
        ts, at = line
        t = it.created_at
        pos = bisect_left(ts, t)
        lead = 0.0
        if pos > 0 and abs(ts[pos - 1] - t) <= max_gap:
            lead = max(lead, at[ts[pos - 1]] - it.score)
        if pos + 1 < len(ts) and abs(ts[pos + 1] - t) <= max_gap:
            lead = max(lead, at[ts[pos + 1]] - it.score)
        if lead > 0:
            lift = share * lead
            it = replace(it, score=it.score + lift, signals={**it.signals, "neighbour": lift})
        out.append(it)
    out.sort(key=lambda x: (-x.score, x.id))
    return out
