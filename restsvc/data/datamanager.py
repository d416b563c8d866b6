"""The data manager: the only way to load, save and delete entities.

Every call takes an ``Access`` (the caller's permissions and session) and
applies entity, attribute and row-level policies; results come back as JSON
text (``jsonio.RawJson``), already serialized along the fetch plan. Its
writes are in writes.py (``DataWrites``).
"""
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, cast, overload

from ..db import read_rows
from ..errors import BadRequest, NotFound, entity_name_not_found, entity_not_found
from ..jsonio import JsonValue, RawJson, dumps
from ..model.fetchplan import resolve_request_plan
from .answer.rowwriters import names_only
from .access import require
from .read.cursors import Cursors, FilterSpec, SortValue, sort_key
from .read.filters import Condition, Group, Node, parse_filter
from .write.history import HISTORY_ITEM
from .ids import parse_id
from .read.loader import count_rows, select_rows
from .read.reading import load, one, one_tag, reading, tag, write_all, write_each
from .read.records import Record, records
from .read.rows import KeyRows, RawRows, Values
from .read.request import UNPAGED, Budget, Load, Page
from .read.query import check_limit, check_sort
from .read.textsearch import TextSearch, text_search
from .writes import DataWrites

if TYPE_CHECKING:
    import peewee

    from ..model.fetchplan import FetchPlan
    from ..model.metadata import MetaClass, Metadata
    from ..security.gate import Principal
    from ..settings import Settings
    from .access import Access
    from .write.operation import Operation


_KEPT_FILTERS = 1000          # URL filters kept at most
_KEPT_TREES = 64              # filter trees kept per caller at most
_KEPT_FILTER_TEXT = 2000      # characters of a URL filter that is kept


def _searched(access: "Access", meta: "MetaClass", page: Page) -> TextSearch | None:
    """The ranked full-text search a page asks (``q``), or None."""
    if page.text is None:
        return None
    return text_search(meta, access.permissions, page.text, page.snippet)


class DataManager(DataWrites):
    def __init__(self, settings: "Settings", metadata: "Metadata", database: "peewee.Database") -> None:
        self.settings = settings
        self.metadata = metadata
        self.database = database
        self.sql_cache: dict[Hashable, object] = {}     # Access.sql_cache: SQL of statement shapes
        self.accesses: dict[int, tuple[Principal, Access]] = {}   # access.access_for: id(principal)
        self.url_filters: dict[str, FilterSpec] = {}    # url_filter: JSON text -> its filter
        self._shared: dict[int, FilterSpec] = {}        # id -> a filter of url_filters
        self.cursors = Cursors(settings.secret_key)

    def entity(self, name: str) -> "MetaClass":
        meta = self.metadata.entity(name)
        if meta is None:
            raise entity_name_not_found(name)
        return meta

    def plan(self, meta: "MetaClass", value: JsonValue, default: str = "_base") -> "FetchPlan":
        """The plan a request names: a name, an inline plan or its JSON text (None, "": ``default``)."""
        return resolve_request_plan(meta, value, self.settings.inline_fetch_plans, default,
                                    self.settings.max_fetch_plan_depth)

    # -- reading -----------------------------------------------------------
    def load(self, access: "Access", meta: "MetaClass", entity_id: JsonValue, plan: "FetchPlan | None",
             return_nulls: bool = False) -> RawJson:
        body, _ = self.load_tagged(access, meta, entity_id, plan, return_nulls)
        return cast(RawJson, body)      # written: no ``unchanged`` to leave it out

    def load_tagged(self, access: "Access", meta: "MetaClass", entity_id: JsonValue,
                    plan: "FetchPlan | None", return_nulls: bool = False,
                    unchanged: "Callable[[str], bool] | None" = None) -> "tuple[RawJson | None, str | None]":
        """(JSON text, ETag) of one entity; the ETag is None for an entity
        without a version. When ``unchanged(etag)`` holds, the body is not
        written (None): the caller already has it."""
        require(access, meta, "read")
        found = self._tagged(access, meta, parse_id(meta, entity_id), plan, return_nulls,
                             unchanged)
        if found is None:
            raise entity_not_found(meta.name, entity_id)
        return found

    def _tagged(self, access: "Access", meta: "MetaClass", key: object, plan: "FetchPlan | None",
                return_nulls: bool, unchanged: "Callable[[str], bool] | None" = None,
                values: "Values | None" = None) -> "tuple[RawJson | None, str | None] | None":
        """``load_tagged``'s answer for a parsed id; None when the caller
        cannot see the row. ``values``: its row, when the write that saved it
        read it already (``DataWrites.save``'s ``answer``)."""
        read = reading(access, meta, plan, return_nulls, tagged=True)
        found = one(access, read, key)
        if found is not None:       # the plan's load by id, worked out once
            if values is None:
                values = read_rows(access.database, found.sql, found.params(access, key),
                                   keyed=True).fetchone()
            if values is None:
                return None
            etag = one_tag(access, read, found, values)
            if etag is not None and unchanged is not None and unchanged(etag):
                return None, etag
            return RawJson(found.write(values)), etag
        rows = load(access, read, Budget(self.settings.max_response_entities),
                    Load(key_field=meta.model.id, keys=[key]))
        if not rows:
            return None
        etag = tag(access, read, rows)
        if etag is not None and unchanged is not None and unchanged(etag):
            return None, etag
        return write_each(access, read, rows)[0][1], etag

    def search(self, access: "Access", meta: "MetaClass", plan: "FetchPlan | None", filter_spec: FilterSpec = None,
               page: Page = UNPAGED) -> tuple[RawJson, int | None, str | None]:
        """A page of entities (JSON text), the total count when asked (None
        otherwise) and, when ``page.limit`` was given and more rows follow, the
        cursor of the next page (None otherwise). ``page.after``: a cursor from
        an earlier page of the same entity, sort and filter. A ranked search
        (``page.text``) pages by ``offset``: it has no cursor."""
        sort, limit, return_nulls = page.sort, page.limit, page.return_nulls
        if page.text is not None and page.after is not None:
            raise BadRequest("Invalid parameter value",
                             "Parameters after and q cannot be used together: a ranked search "
                             "pages by offset")
        key = self.after_key(page.after, page.offset, meta, sort, filter_spec)
        # One row more than asked for: whether a next page exists.
        rows, tree = self.select(access, meta, plan, filter_spec, page, key,
                                 spare=int(limit is not None), answer=return_nulls)
        cursor = None
        if limit is not None and len(rows) > limit:
            del rows[limit:]
            # limit=0: an empty page, and no cursor (nothing to continue from)
            last = sort_key(access, meta, sort or "", KeyRows(rows)) \
                if rows and page.text is None else None
            if last is not None:
                cursor = self.cursors.token(meta, sort, filter_spec, last)
        total = count_rows(access, meta, tree, _searched(access, meta, page)) \
            if page.return_count else None
        return write_all(access, reading(access, meta, plan, return_nulls), rows), total, cursor

    def after_key(self, after: str | None, offset: int | None, meta: "MetaClass", sort: str | None,
                  filter_spec: FilterSpec) -> list[SortValue] | None:
        """The sort key of a cursor from a request (None without one)."""
        if after is None:
            return None
        if offset:
            raise BadRequest("Invalid parameter value",
                             "Parameters after and offset cannot be used together")
        return self.cursors.key(after, meta, sort, filter_spec)

    @overload
    def select(self, access: "Access", meta: "MetaClass", plan: "FetchPlan | None", filter_spec: FilterSpec = None,
               page: Page = UNPAGED, after: Sequence[SortValue] | None = None, spare: int = 0,
               answer: None = None) -> "tuple[list[Record], Group | None]": ...
    @overload
    def select(self, access: "Access", meta: "MetaClass", plan: "FetchPlan | None", filter_spec: FilterSpec = None,
               page: Page = UNPAGED, after: Sequence[SortValue] | None = None, spare: int = 0, *,
               answer: bool) -> "tuple[RawRows, Group | None]": ...

    def select(self, access: "Access", meta: "MetaClass", plan: "FetchPlan | None", filter_spec: FilterSpec = None,
               page: Page = UNPAGED, after: Sequence[SortValue] | None = None, spare: int = 0,
               answer: bool | None = None) -> "tuple[RawRows | list[Record], Group | None]":
        """Rows along ``plan`` and the parsed filter, as ``page`` sorts and
        limits them (its cursor and counts are ``search``'s); ``after``: a sort
        key (cursors.py); ``spare``: rows loaded beyond ``limit``; ``answer``:
        None for Python values (what the caller may read, converted by
        records.py), else the rows of an answer with that ``returnNulls``
        (what it shows: flatrows.RawRows), as reading.py reads them."""
        require(access, meta, "read")
        sort, limit = page.sort, page.limit
        maximum = self.settings.max_fetch_size(meta.name)
        check_limit(limit, maximum)
        check_sort(sort)
        tree = self.filter(access, meta, filter_spec)
        read = reading(access, meta, plan, bool(answer), answer=answer is not None)
        rows = load(access, read, Budget(self.settings.max_response_entities, spare), Load(
            where=tree, sort=sort or "", limit=(limit if limit is not None else maximum) + spare,
            offset=page.offset, after=after, search=_searched(access, meta, page)))
        return (rows if answer is not None else records(rows)), tree

    def select_by_id(self, access: "Access", meta: "MetaClass", plan: "FetchPlan | None",
                     entity_id: JsonValue) -> Record | None:
        """The row of one entity (Python values, not yet serialized), or None."""
        require(access, meta, "read")
        read = reading(access, meta, plan, answer=False)
        rows = load(access, read, Budget(self.settings.max_response_entities),
                    Load(key_field=meta.model.id, keys=[parse_id(meta, entity_id)]))
        return records(rows)[0] if rows else None

    def batches(self, access: "Access", meta: "MetaClass", plan: "FetchPlan | None", filter_spec: FilterSpec = None,
                sort: str | None = "", size: int = 1000) -> Iterator[list[Record]]:
        """Every row matching the filter, ``size`` rows at a time, for outputs
        too long to hold at once (reports). Rows are loaded along ``plan`` under
        the caller's entity and row-level policies but not serialized: the
        caller writes only attributes the permissions let it show. Without a
        sort the rows come in id order, each batch after the last id (keyset);
        with one, by offset."""
        require(access, meta, "read")
        tree = self.filter(access, meta, filter_spec)
        loading = reading(access, meta, plan, answer=False).loading
        id_path = (meta.properties["id"],)
        offset = 0
        after: SortValue = None     # the last id of the batch before (keyset)
        while True:
            where: Node | None = tree
            if after is not None:
                after_last = Condition(id_path, ">", after)
                where = after_last if tree is None else Group(False, (tree, after_last))
            rows = records(select_rows(access, meta, loading,
                                       Load(where, sort or "", size, offset if sort else None)))
            if rows:
                yield rows
            if len(rows) < size:
                return
            if sort:
                offset += size
            else:
                after = rows[-1]["id"]

    def entity_history(self, access: "Access", meta: "MetaClass", entity_id: JsonValue,
                       page: Page = UNPAGED) -> tuple[RawJson, int | None, str | None]:
        """The HistoryItems of one entity (newest first unless ``sort`` says
        otherwise), as ``search`` answers; the caller needs to read both."""
        if meta.history is None:
            raise NotFound("History not found", f"Entity {meta.name} keeps no history")
        require(access, meta, "read")
        key = parse_id(meta, entity_id)
        items = self.entity(HISTORY_ITEM)
        spec = {"conditions": [
            {"property": "entityName", "operator": "=", "value": meta.name},
            {"property": "entityId", "operator": "=", "value": str(key)}]}
        return self.search(access, items, self.plan(items, None), spec,
                           replace(page, sort=page.sort or "-changedDate,-id"))

    def count(self, access: "Access", meta: "MetaClass", filter_spec: FilterSpec = None) -> int:
        require(access, meta, "read")
        counted: int = count_rows(access, meta, self.filter(access, meta, filter_spec))
        return counted

    def url_filter(self, text: str, parse: Callable[[str], FilterSpec]) -> FilterSpec:
        """The filter of a URL's JSON text, ``parse``d once per text: the same
        object for the same text, which nobody changes, so that the tree each
        caller parses from it is kept too (``filter``)."""
        spec = self.url_filters.get(text)
        if spec is None:
            spec = parse(text)
            if isinstance(spec, dict) and len(text) <= _KEPT_FILTER_TEXT:
                if len(self.url_filters) >= _KEPT_FILTERS:
                    self.url_filters.clear()
                    self._shared.clear()
                self.url_filters[text] = self._shared[id(spec)] = spec
        return spec

    def filter(self, access: "Access", meta: "MetaClass", filter_spec: FilterSpec) -> Group | None:
        """The parsed tree of a filter (query.py compiles it) for this caller,
        kept per caller for a filter of ``url_filter``."""
        if filter_spec is None:
            return None
        if self._shared.get(id(filter_spec)) is not filter_spec:
            return parse_filter(meta, filter_spec, access.permissions, access.session)
        memo, key = access.memo, (meta.name, id(filter_spec))
        found: tuple[FilterSpec, Group] | None = memo.get(key)
        if found is None or found[0] is not filter_spec:
            tree = parse_filter(meta, filter_spec, access.permissions, access.session)
            if len(memo) >= 2 * _KEPT_TREES:      # each tree: two entries
                memo.clear()
            found = memo[key] = (filter_spec, tree)
            memo[id(tree)] = (tree, None)       # its SQL shape: loader.kept_shape
        return found[1]

    def saved_entity(self, access: "Access", meta: "MetaClass", operation: "Operation",
                     plan: "FetchPlan | None",
                     return_nulls: bool = False) -> "tuple[RawJson | None, str | None]":
        """(JSON text, ETag) of what a create or update of one entity answers.
        Along a plan it is the entity as a GET along that plan reads it: the
        same body and the same ETag. Without a plan, or for a row the caller
        may not read, it is ``saved_response``'s short form, without a tag:
        it does not hold the entity's representation."""
        if plan is not None and access.permissions.can(meta.name, "read"):
            found = self._tagged(access, meta, operation.id, plan, return_nulls,
                                 values=operation.answered)
            if found is not None:
                return found
        return self.saved_response(access, meta, [operation], plan, return_nulls)[0], None

    def saved_response(self, access: "Access", meta: "MetaClass", saved: "Sequence[Operation]",
                       plan: "FetchPlan | None", return_nulls: bool = False) -> list[RawJson]:
        """What create/update answer for the saved operations, one JSON text
        each: the entities reloaded along ``plan``, or only ``_entityName``,
        ``_instanceName`` and ``id`` when ``plan`` is None. A row the caller may
        not read (entity policy or row-level role) is answered with
        ``_entityName`` and ``id``."""
        readable = access.permissions.can(meta.name, "read")
        if readable and plan is None and _name_from_values(meta, saved):
            write = names_only(meta, access.permissions, return_nulls)
            return [RawJson(write({**op.values, "id": op.id})) for op in saved]
        ids = [op.id for op in saved]
        by_id: dict[object, RawJson] = {}
        if readable:
            read = reading(access, meta, plan, return_nulls)
            rows = load(access, read, Budget(self.settings.max_response_entities),
                        Load(key_field=meta.model.id, keys=ids))
            by_id = dict(write_each(access, read, rows))
        return [by_id[key] if key in by_id else RawJson(dumps({"_entityName": meta.name, "id": key}))
                for key in ids]


def _name_from_values(meta: "MetaClass", saved: "Sequence[Operation]") -> bool:
    """Whether the written values alone make the instance name (no reload)."""
    names = meta.instance_name
    return bool(names) and all(
        not meta.properties[name].is_reference and name in op.values
        for op in saved for name in names)
