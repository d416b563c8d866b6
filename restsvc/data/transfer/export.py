"""Exports: every row a list, search or predefined query matches, read in
bounded chunks and written by the one row writer the JSON list uses.

A chunk is one ``DataManager.select`` (the caller's entity, attribute and
row-level policies, scopes and soft-delete rules as for any page), the next
one starting after the sort key of the chunk's last row (keyset, as the
list's cursor continues): memory holds one chunk, however many rows match,
and the list size limits do not cap the export. A chunk whose fetch plan
would hold more entities than ``svc.rest.max-response-entities`` allows is
read again with half the rows.

No transaction spans the chunks: each is a statement of its own on the
connection the export holds while it streams. SQLite (WAL) readers never
block writers nor wait for them, and no long read snapshot keeps the WAL
from being checkpointed; PostgreSQL holds no snapshot that would keep
VACUUM from cleaning up. Rows that exist throughout come exactly once (the
keyset never repeats or skips one); rows written while the export runs come
when their sort key lies ahead of the chunk being read.
"""
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import BadRequest
from ...jsonio import JsonValue
from ..read.cursors import sort_key
from ..read.flatrows import write_flat, write_flat_each
from ..read.rows import KeyRows, RawRows
from ..read.request import RESPONSE_TOO_LARGE, Page

if TYPE_CHECKING:
    from ...model.fetchplan import FetchPlan
    from ...model.metadata import MetaClass
    from ..access import Access
    from ..datamanager import DataManager

CHUNK_ROWS = 1000       # rows per statement: few statements, a few hundred KiB held


@dataclass(frozen=True)
class Export:
    """What an export reads: a list's entity, plan, filter and sort; ``offset``
    and ``limit`` only when the request gave them (no limit: every row);
    ``after``: a sort key to start after (a list page's cursor)."""
    meta: "MetaClass"
    plan: "FetchPlan"
    filter_spec: JsonValue = None
    sort: str = ""
    offset: int | None = None
    limit: int | None = None
    after: "list[JsonValue] | None" = None
    return_nulls: bool = False


def row_chunks(data: "DataManager", access: "Access", export: Export) -> Iterator[RawRows]:
    """The matching rows, a chunk at a time, in the list's order; each chunk
    as ``select`` gives it (``flatrows.RawRows``)."""
    meta, sort = export.meta, export.sort
    size = min(CHUNK_ROWS, data.settings.max_fetch_size(meta.name),
               data.settings.max_response_entities)
    offset, after, left = export.offset, export.after, export.limit
    while left is None or left > 0:
        wanted = size if left is None else min(size, left)
        rows: RawRows
        try:
            rows, _ = data.select(access, meta, export.plan, export.filter_spec,
                                  Page(sort=sort, limit=wanted, offset=offset), after,
                                  answer=export.return_nulls)
        except BadRequest as exc:
            if exc.error != RESPONSE_TOO_LARGE or wanted == 1:
                raise
            size = max(1, wanted // 2)
            continue
        if rows:
            yield rows
        if len(rows) < wanted:
            return
        if left is not None:
            left -= len(rows)
        offset = None
        after = sort_key(access, meta, sort, KeyRows(rows))
        if after is None:
            return


def json_arrays(data: "DataManager", access: "Access", export: Export) -> Iterator[str]:
    """Each chunk as the JSON list writes a page: a JSON array of entities."""
    meta, plan, permissions = export.meta, export.plan, access.permissions
    for rows in row_chunks(data, access, export):
        yield write_flat(meta, rows, plan, permissions, export.return_nulls)


def entity_texts(data: "DataManager", access: "Access", export: Export) -> Iterator[list[str]]:
    """Each chunk as the JSON texts of its entities, each as the JSON list
    writes it."""
    meta, plan, permissions = export.meta, export.plan, access.permissions
    for rows in row_chunks(data, access, export):
        yield [text for _, text in write_flat_each(meta, rows, plan, permissions,
                                                     export.return_nulls)]
