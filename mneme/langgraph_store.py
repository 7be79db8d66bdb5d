"""``MnemeStore``: Mneme's memory as a LangGraph ``BaseStore``, for any graph and for ``langgraph dev``.

Namespaces, keys and values map onto Mneme's records as ``mneme.store_items`` describes. Reads are
scoped to the one user a namespace names (a prefix without a user, ``("memories",)``, is for an admin
store only); the shared documents are read-only unless the store is an admin's. Search *with* a query
is Mneme's hybrid recall (dense + keyword, time window, forgetting curve; traced like the agent's) and
does not count as an access; search *without* one lists items newest first. Writes go through
``IndexedStore`` like the agent's, so the keyword index and caches stay exact.

As ``InMemoryStore``: reads in a batch see the state before the batch's writes, and of several puts to
one key in a batch the last wins; sync ``batch`` and async ``abatch`` share the same helpers (the async
one runs them in a worker thread: Chroma's client is synchronous). TTLs are not supported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from mneme import tracing
from mneme.errors import InvalidInputError
from mneme.memory.base import SHARED_TENANT, Kind, MemoryRecord
from mneme.memory.service import MemoryService, RecallOptions
from mneme.store_items import (
    MEMORIES,
    Scope,
    ends_with,
    item_id,
    key_of,
    matches,
    namespace_of,
    new_record,
    scope_of,
    to_item,
    under,
    updated_at,
)

MAX_RECALL = 200
"""Most items one search with a query ranks (``offset + limit`` beyond it is cut)."""


class MnemeStore(BaseStore):
    """A LangGraph store over a ``MemoryService``: the environment's (default) or the one given.

    ``admin=True`` may read across users (``("memories",)``, ``list_namespaces()``) and write documents;
    the LangGraph server's store (``langgraph.json``) is one, its ``/store`` API gated by the auth handlers.
    """

    supports_ttl = False

    def __init__(self, service: MemoryService | None = None, *, admin: bool = False) -> None:
        if service is None:
            from mneme.stores import shared_service

            service = shared_service()
        self.service = service
        self.admin = admin

    # -- batch ----------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; reads see the state before this batch's writes."""
        results, puts = self._read_ops(ops)
        self._apply_puts(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of ``batch`` (same helpers, in a worker thread)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _read_ops(self, ops: Iterable[Op]) -> tuple[list[Result], dict[tuple[tuple[str, ...], str], PutOp]]:
        ops = list(ops)
        drain = getattr(self.service, "drain", None)
        if callable(drain) and any(not isinstance(op, PutOp) for op in ops):
            drain()  # read-your-writes: turns still queued for the store are applied before a read
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                self._check_write(scope_of(op.namespace))
                puts[(op.namespace, op.key)] = op
                results.append(None)
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        return results, puts

    # -- reads ----------------------------------------------------------------------------------
    def _scope(self, namespace: tuple[str, ...]) -> Scope:
        scope = scope_of(namespace)
        if scope.tenant is None and not self.admin:
            raise InvalidNamespaceError("name the user: ('memories', user_id, ...) (all users: admin only)")
        return scope

    def _find(self, scope: Scope, namespace: tuple[str, ...], key: str) -> MemoryRecord | None:
        if scope.tenant is None:
            return None
        ids = list(dict.fromkeys([key, item_id(scope.tenant, namespace, key)]))
        for record in self.service.store.get(scope.tenant, ids):
            if namespace_of(record) == namespace and key_of(record) == key:
                return record
        return None

    def _get(self, op: GetOp) -> Item | None:
        record = self._find(self._scope(op.namespace), op.namespace, op.key)
        return to_item(record) if record is not None else None

    def _tenants(self, scope: Scope) -> list[str]:
        if scope.tenant is not None:
            return [scope.tenant]
        return [t for t in self.service.store.tenants() if not t.startswith("~")]

    def _records(self, scope: Scope) -> Iterator[MemoryRecord]:
        for tenant in self._tenants(scope):
            yield from self.service.store.scan(tenant, kinds=scope.kinds)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        scope = self._scope(op.namespace_prefix)
        want = max(0, op.offset) + max(0, op.limit)
        if op.query and op.query.strip():
            return self._recall(scope, op, want)
        found = [r for r in self._records(scope)
                 if under(namespace_of(r), op.namespace_prefix)]
        items = [to_item(r) for r in sorted(found, key=lambda r: (-updated_at(r), r.id))]
        kept = [it for it in items if matches(it.value, op.filter)]
        return [_search_item(it, None) for it in kept[op.offset:want]]

    def _recall(self, scope: Scope, op: SearchOp, want: int) -> list[SearchItem]:
        query = str(op.query)
        k = min(MAX_RECALL, max(want * (3 if op.filter or scope.kind else 1), 10))
        scored: list[tuple[MemoryRecord, float]] = []
        if scope.tenant == SHARED_TENANT:
            scored = self._recall_documents(query, k)
        else:
            options = RecallOptions(k=k, include_documents=scope.kind in (None, Kind.DOCUMENT), reinforce=False,
                                    max_context_tokens=10**9)
            for tenant in self._tenants(scope):
                hits = tracing.recall(self.service, tenant, query, options=options, source="store")
                records = {r.id: r for r in self.service.store.get(tenant, [h.id for h in hits])}
                scored += [(records[h.id], h.score) for h in hits if h.id in records]
            scored.sort(key=lambda pair: -pair[1])
        out = []
        for record, score in scored:
            item = to_item(record)
            if under(item.namespace, op.namespace_prefix) and matches(item.value, op.filter):
                out.append(_search_item(item, score))
        return out[op.offset:want]

    def _recall_documents(self, query: str, k: int) -> list[tuple[MemoryRecord, float]]:
        """The shared documents for ``query``: the dense and keyword channels fused, as recall does."""
        from mneme.memory.fusion import weighted_fusion

        store = self.service.store
        self.service.indexed.catch_up(SHARED_TENANT)
        vector = store.embedder.embed([query])[0]
        dense = {h.record.id: h.score for h in store.search(SHARED_TENANT, vector, kinds=[Kind.DOCUMENT], k=k)}
        keyword = dict(self.service.keyword.search(SHARED_TENANT, query, kinds=[str(Kind.DOCUMENT)], k=k))
        ranked = weighted_fusion({"dense": dense, "keyword": keyword}, {"dense": 0.3, "keyword": 0.7})[:k]
        records = {r.id: r for r in store.get(SHARED_TENANT, [i for i, _ in ranked])}
        return [(records[i], s) for i, s in ranked if i in records]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
        scopes: list[Scope]
        if prefix and "*" not in prefix[:2]:
            scopes = [self._scope(prefix)]
        elif self.admin:
            scopes = [scope_of((MEMORIES,)), scope_of(("documents",))]
        else:
            raise InvalidNamespaceError("list namespaces under ('memories', user_id) (all users: admin only)")
        found: set[tuple[str, ...]] = set()
        for scope in scopes:
            found.update(namespace_of(r) for r in self._records(scope))
        for cond in conditions:
            test = under if cond.match_type == "prefix" else ends_with
            found = {ns for ns in found if test(ns, cond.path)}
        if op.max_depth is not None:
            found = {ns[:op.max_depth] for ns in found}
        return sorted(found)[op.offset:op.offset + op.limit]

    # -- writes ---------------------------------------------------------------------------------
    def _check_write(self, scope: Scope) -> None:
        if scope.tenant is None:
            raise InvalidNamespaceError("name the user to write to: ('memories', user_id[, kind])")
        if scope.kind == Kind.DOCUMENT and not self.admin:
            raise InvalidNamespaceError("documents are read-only here (admin stores may write them)")

    def _apply_puts(self, puts: dict[tuple[tuple[str, ...], str], PutOp]) -> None:
        records: list[MemoryRecord] = []
        for (namespace, key), op in puts.items():
            scope = scope_of(namespace)
            previous = self._find(scope, namespace, key)
            if op.value is None:
                if previous is not None and scope.tenant is not None:
                    if scope.tenant == SHARED_TENANT:  # an admin's shared document: not a user's record
                        self.service.indexed.delete(scope.tenant, [previous.id])
                    else:  # as every delete of a user's record: queued turn, process caches
                        self.service.delete(scope.tenant, [previous.id])
                continue
            index = None if op.index is None or op.index is False else list(op.index)
            records.append(new_record(scope, key, op.value, index=index, now=self.service.clock(),
                                      previous=previous, policy=self.service.writing.redaction))
        if records:
            vectors = self.service.store.embedder.embed([r.text for r in records])
            for record, vector in zip(records, vectors, strict=True):
                record.embedding = vector
            self.service.indexed.add(records)


def _search_item(item: Item, score: float | None) -> SearchItem:
    return SearchItem(namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at,
                      updated_at=item.updated_at, score=score)


def make_store() -> MnemeStore:
    """The LangGraph server's store (``langgraph.json`` ``store.path``): the process's Mneme memory, admin."""
    return MnemeStore(admin=True)
