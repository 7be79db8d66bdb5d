"""The store and its keyword index kept in step: every write that changes what is searchable goes here.

The memory store is the truth; the keyword (BM25) index and this process's record of other writers'
change stamps are derived from it. ``IndexedStore`` owns that invariant so that the memory service,
maintenance (``mneme gc``) and ``MnemeStore`` cannot update one without the other: writes go to the store
first, then to the index (a write interrupted between the two is marked pending and repaired at
start-up); deletes and archive moves reach both; ``catch_up`` brings a tenant's index up to what other
processes wrote (server mode), and ``sync`` rebuilds wherever the two disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mneme.memory.base import MemoryRecord, MemoryStore
from mneme.memory.indexing import search_text
from mneme.memory.keyword import KeywordEntry, KeywordIndex


class IndexedStore:
    """A ``MemoryStore`` with its ``KeywordIndex``: writes, deletes and archive moves that keep both exact."""

    def __init__(self, store: MemoryStore, keyword: KeywordIndex) -> None:
        self.store = store
        self.keyword = keyword
        self._seen: dict[str, tuple[Any, ...]] = {}
        """Server mode: per tenant, the other writers' counters the keyword index was last brought up to."""

    @staticmethod
    def entry(record: MemoryRecord) -> KeywordEntry:
        """The keyword entry of ``record`` (indexed by the same text the dense channel embeds)."""
        return KeywordEntry(record.id, record.user_id, str(record.kind), search_text(record), record.archived)

    # -- writes ---------------------------------------------------------------------------------
    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Insert or replace ``records`` (embedded) in the store, then in the index."""
        if not records:
            return
        # a crash before end_write leaves these tenants pending: repaired at start-up
        tokens = [self.keyword.begin_write(u) for u in sorted({r.user_id for r in records})]
        self.store.add(records)  # the store is the truth: write it first, then the derived index
        self.keyword.add([self.entry(r) for r in records])
        for token in tokens:
            self.keyword.end_write(token)

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete these records of ``user_id`` (live or archived) from both; return the store's count."""
        if not ids:
            return 0
        n = self.store.delete(user_id, ids=list(ids), archived=None)
        self.keyword.delete(list(ids))
        return n

    def delete_user(self, user_id: str) -> int:
        """Delete every record of ``user_id`` (the archive too) from both; return the store's count."""
        n = self.store.delete(user_id, archived=None)
        self.keyword.delete_user(user_id)
        return n

    def archive(self, user_id: str, ids: Sequence[str]) -> int:
        """Move records of ``user_id`` to the archive, in the store and in the index."""
        if not ids:
            return 0
        n = self.store.archive(user_id, list(ids))
        self.keyword.set_archived(list(ids), True)
        return n

    def restore(self, user_id: str, ids: Sequence[str]) -> int:
        """Move archived records of ``user_id`` back to live, in the store and in the index."""
        if not ids:
            return 0
        n = self.store.restore(user_id, list(ids))
        self.keyword.set_archived(list(ids), False)
        return n

    def drop_stale(self, ids: Sequence[str]) -> None:
        """Forget index entries whose records are gone from the store (deleted elsewhere, a crash)."""
        if ids:
            self.keyword.delete(list(ids))

    # -- consistency ----------------------------------------------------------------------------
    def sync(self, *, force: bool = False, only_if_needed: bool = False) -> int:
        """Rebuild the keyword index from the store where they disagree (or everywhere, ``force``).

        Every user's counts are compared, which reads the whole store; ``only_if_needed`` (start-up) does that
        only when the index was never checked or its tokenizer changed, and otherwise checks just the users
        whose write was interrupted between the store and the index. Returns the entries rebuilt.
        """
        full = force or not only_if_needed or not self.keyword.synced or self.keyword.needs_rebuild
        pending = self.keyword.pending_tenants()
        tenants = sorted(set(self.store.tenants()) | set(self.keyword.tenants())) if full else sorted(pending)
        rebuilt = 0
        for tenant in tenants:
            live = self.store.count(tenant, kinds=None, archived=None)
            if not force and not self.keyword.needs_rebuild and tenant not in pending \
                    and live == self.keyword.count(tenant):
                continue
            records = self.store.scan(tenant, kinds=None, archived=None)
            rebuilt += self.keyword.rebuild((self.entry(r) for r in records), user_id=tenant)
        self.keyword.mark_synced(None if full else tenants)
        return rebuilt

    def catch_up(self, user_id: str) -> None:
        """Server mode: bring one tenant's keyword index up to what other processes changed.

        The store's change stamp (one primary-key read) says who wrote what; this process's own writes
        are indexed as they happen, so only other writers' counters matter. A few changes behind, it
        re-reads just the changed records (the stamp logs their ids); further behind, it rebuilds the
        tenant. A process meeting a tenant for the first time trusts its index file if the file was
        rebuilt under the stamp still current.
        """
        stamp = self.store.change_stamp(user_id)
        previous = self._seen.get(user_id)
        if stamp is None or previous == stamp.foreign:
            return
        changed = stamp.changed_since(previous) if previous is not None else None
        if changed is not None:  # a few logged changes: re-read just those records
            current = self.store.get(user_id, sorted(changed)) if changed else []
            self.keyword.add([self.entry(r) for r in current])
            gone = sorted(changed - {r.id for r in current})
            if gone:
                self.keyword.delete(gone)
        elif previous is not None or self.keyword.synced_stamp(user_id) != stamp.full:
            records = self.store.scan(user_id, kinds=None, archived=None)
            self.keyword.rebuild((self.entry(r) for r in records), user_id=user_id, stamp=stamp.full)
        self._seen[user_id] = stamp.foreign

    def close(self) -> None:
        """Close the store and the keyword index."""
        self.store.close()
        self.keyword.close()
