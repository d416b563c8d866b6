"""The data manager: the only way to load, save and delete entities.

Every call takes an ``Access`` (the caller's permissions and session) and
applies entity, attribute and row-level policies; results come back as JSON
text (``jsonio.RawJson``), already serialized along the fetch plan.
"""
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..db import is_sqlite, write_transaction
from ..errors import (BadRequest, NotFound, PreconditionFailed, ValidationFailed,
                      entity_name_not_found, entity_not_found)
from ..jsonio import RawJson, dumps
from ..model.fetchplan import resolve_request_plan
from .answer.rowwriters import names_only
from .access import require
from .read.cursors import Cursors, sort_key
from .read.filters import Condition, Group, parse_filter
from .write import softdelete
from .write.history import HISTORY_ITEM
from .write.importer import Importer, parse_id, too_many_entities
from .read.loader import count_rows, select_rows, visible_ids
from .read.reading import load, one, one_tag, reading, tag, write_all, write_each
from .read.records import records
from .read.rows import KeyRows
from .read.request import UNPAGED, Budget, Load
from .read.query import check_limit, check_sort
from .write.writer import Writer

if TYPE_CHECKING:
    from ..model.fetchplan import FetchPlan
    from ..model.metadata import MetaClass
    from .access import Access
    from .write.importer import Operation


_KEPT_FILTERS = 1000          # URL filters kept at most
_KEPT_TREES = 64              # filter trees kept per caller at most
_KEPT_FILTER_TEXT = 2000      # characters of a URL filter that is kept


class DataManager:
    def __init__(self, settings, metadata, database):
        self.settings = settings
        self.metadata = metadata
        self.database = database
        self.sql_cache = {}
        self.accesses = {}      # access.access_for: principal -> Access
        self.url_filters = {}   # url_filter: JSON text -> its filter
        self._shared = {}       # id -> a filter of url_filters
        self.cursors = Cursors(settings.secret_key)

    def entity(self, name):
        meta = self.metadata.entity(name)
        if meta is None:
            raise entity_name_not_found(name)
        return meta

    def plan(self, meta, value, default="_base"):
        return resolve_request_plan(meta, value, self.settings.inline_fetch_plans, default,
                                    self.settings.max_fetch_plan_depth)

    # -- reading -----------------------------------------------------------
    def load(self, access, meta, entity_id, plan, return_nulls=False):
        return self.load_tagged(access, meta, entity_id, plan, return_nulls)[0]

    def load_tagged(self, access, meta, entity_id, plan, return_nulls=False, unchanged=None):
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
                ) -> "tuple[RawJson | None, str | None] | None":
        """``load_tagged``'s answer for a parsed id; None when the caller
        cannot see the row."""
        read = reading(access, meta, plan, return_nulls, tagged=True)
        found = one(access, read, key)
        if found is not None:       # the plan's load by id, worked out once
            values = access.database.execute_sql(found.sql, [found.stored(key)]).fetchone()
            if values is None:
                return None
            etag = one_tag(access, read, found, values)
            if etag is not None and unchanged is not None and unchanged(etag):
                return None, etag
            return RawJson(found.write(values)), etag
        model: Any = meta.model        # a Peewee model: its fields are class attributes
        rows = load(access, read, Budget(self.settings.max_response_entities),
                    Load(key_field=model.id, keys=[key]))
        if not rows:
            return None
        etag = tag(access, read, rows)
        if etag is not None and unchanged is not None and unchanged(etag):
            return None, etag
        return write_each(access, read, rows)[0][1], etag

    def search(self, access, meta, plan, filter_spec=None, page=UNPAGED):
        """A page of entities (JSON text), the total count when asked (None
        otherwise) and, when ``page.limit`` was given and more rows follow, the
        cursor of the next page (None otherwise). ``page.after``: a cursor from
        an earlier page of the same entity, sort and filter."""
        sort, limit, return_nulls = page.sort, page.limit, page.return_nulls
        key = self.after_key(page.after, page.offset, meta, sort, filter_spec)
        # One row more than asked for: whether a next page exists.
        rows, tree = self.select(access, meta, plan, filter_spec, page, key,
                                 spare=int(limit is not None), answer=return_nulls)
        cursor = None
        if limit is not None and len(rows) > limit:
            del rows[limit:]
            # limit=0: an empty page, and no cursor (nothing to continue from)
            last = sort_key(access, meta, sort or "", KeyRows(rows)) if rows else None
            if last is not None:
                cursor = self.cursors.token(meta, sort, filter_spec, last)
        total = count_rows(access, meta, tree) if page.return_count else None
        return write_all(access, reading(access, meta, plan, return_nulls), rows), total, cursor

    def after_key(self, after, offset, meta, sort, filter_spec):
        """The sort key of a cursor from a request (None without one)."""
        if after is None:
            return None
        if offset:
            raise BadRequest("Invalid parameter value",
                             "Parameters after and offset cannot be used together")
        return self.cursors.key(after, meta, sort, filter_spec)

    def select(self, access, meta, plan, filter_spec=None, page=UNPAGED, after=None, spare=0,
               answer=None):
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
            offset=page.offset, after=after))
        return (rows if answer is not None else records(rows)), tree

    def select_by_id(self, access, meta, plan, entity_id):
        """The row of one entity (Python values, not yet serialized), or None."""
        require(access, meta, "read")
        read = reading(access, meta, plan, answer=False)
        rows = load(access, read, Budget(self.settings.max_response_entities),
                    Load(key_field=meta.model.id, keys=[parse_id(meta, entity_id)]))
        return records(rows)[0] if rows else None

    def batches(self, access, meta, plan, filter_spec=None, sort="", size=1000):
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
        offset, after = 0, None
        while True:
            where = tree
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

    def entity_history(self, access, meta, entity_id, page=UNPAGED):
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

    def count(self, access, meta, filter_spec=None):
        require(access, meta, "read")
        return count_rows(access, meta, self.filter(access, meta, filter_spec))

    def url_filter(self, text, parse):
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

    def filter(self, access, meta, filter_spec):
        """The parsed tree of a filter (query.py compiles it) for this caller,
        kept per caller for a filter of ``url_filter``."""
        if filter_spec is None:
            return None
        if self._shared.get(id(filter_spec)) is not filter_spec:
            return parse_filter(meta, filter_spec, access.permissions, access.session)
        memo, key = access.memo, (meta.name, id(filter_spec))
        found = memo.get(key)
        if found is None or found[0] is not filter_spec:
            tree = parse_filter(meta, filter_spec, access.permissions, access.session)
            if len(memo) >= 2 * _KEPT_TREES:      # each tree: two entries
                memo.clear()
            found = memo[key] = (filter_spec, tree)
            memo[id(tree)] = (tree, None)       # its SQL shape: loader.kept_shape
        return found[1]

    # -- writing -----------------------------------------------------------
    def validate(self, access, meta, body, path=""):
        """Check entity JSON as a save would (permissions, values, references,
        validators) without writing; ValidationFailed lists the violations."""
        importer = Importer(access, self.settings.optimistic_locking, self.settings.max_bulk_size)
        importer.plan(meta, body, path)
        if importer.violations:
            raise ValidationFailed(importer.violations)

    def save(self, access, meta, bodies, entity_ids=None, creating=None, bulk=False,
             if_match=None):
        """Create or update entities in one transaction; returns the operations
        (each with its ``id`` and the ``values`` written).

        ``entity_ids`` gives the ids from URLs (updates); ``creating`` None means
        upsert by the body's id (create), False means the rows must exist (update).
        ``if_match``: the versions an update's ``If-Match`` names (412 otherwise)."""
        limit = self.settings.max_bulk_size
        if len(bodies) > limit:
            raise too_many_entities(limit)
        importer = Importer(access, self.settings.optimistic_locking, limit)
        # Checked before the write transaction, so SQLite's single write lock is
        # held only for the writes; what can change in between is caught by the
        # writes themselves (foreign keys, the version and row count of UPDATE).
        operations = []
        for index, body in enumerate(bodies):
            prefix = f"entities[{index}]." if bulk else ""
            entity_id = entity_ids[index] if entity_ids else None
            if creating is False and entity_id is None:
                entity_id = _required_id(meta, body)
            operations.append(importer.plan(meta, body, prefix, entity_id, creating))
        if importer.violations:
            raise ValidationFailed(importer.violations)
        if if_match is not None:
            for operation in operations:
                _check_versioned(meta, operation.id)
                operation.expected_version = if_match
        single = operations[0] if len(operations) == 1 and operations[0].is_one_statement else None
        # Row rules on writes need the transaction: a refusal after the
        # statement rolls it back.
        alone = single is not None and not access.permissions.write_checked(meta.name)
        if alone and single.meta.history is None and not single.meta.events:
            # No BEGIN/COMMIT around a single statement: SQLite's write lock is
            # then held only while the statement runs, and concurrent writers
            # wait for each other far less.
            Writer(access).save(single)
        elif alone and not is_sqlite(self.database) and _at_once(single) and \
                Writer(access).save_at_once(single):
            pass        # its statement, its history item and its event sent as one
        else:
            writer = Writer(access)
            with write_transaction(self.database):
                for operation in operations:
                    writer.save(operation)
        return operations

    def delete(self, access, meta, entity_ids, if_match=None):
        """Delete rows by id, all or nothing; ``if_match`` as for ``save``."""
        require(access, meta, "delete")
        if len(entity_ids) > self.settings.max_bulk_size:
            raise too_many_entities(self.settings.max_bulk_size)
        keys = [parse_id(meta, entity_id) for entity_id in entity_ids]
        with write_transaction(self.database):
            found = visible_ids(access, meta, keys)
            for key, entity_id in zip(keys, entity_ids):
                if key not in found:
                    raise entity_not_found(meta.name, entity_id)
                if hasattr(meta.model, "check_change"):     # e.g. User
                    meta.model.check_change(access, key, None)
            if if_match is not None:
                _check_versioned(meta, entity_ids[0])
            Writer(access).delete(meta, keys, if_match)

    def restore(self, access, meta, entity_id):
        """Bring a soft-deleted row back with the children deleted with it;
        its id. 409 when it is not deleted or a live row took its unique key."""
        with write_transaction(self.database):
            key, deleted = softdelete.deleted_row(access, meta, entity_id,
                                                  softdelete.RESTORE, "update")
            Writer(access).restore(meta, key, deleted)
        return key

    def purge(self, access, meta, entity_id):
        """Remove a soft-deleted row for good (409 while other rows refer to it)."""
        with write_transaction(self.database):
            key, _ = softdelete.deleted_row(access, meta, entity_id, softdelete.PURGE, "delete")
            Writer(access).delete(meta, [key], purge=True)

    def saved_entity(self, access: "Access", meta: "MetaClass", operation: "Operation",
                     plan: "FetchPlan | None",
                     return_nulls: bool = False) -> "tuple[RawJson | None, str | None]":
        """(JSON text, ETag) of what a create or update of one entity answers.
        Along a plan it is the entity as a GET along that plan reads it: the
        same body and the same ETag. Without a plan, or for a row the caller
        may not read, it is ``saved_response``'s short form, without a tag:
        it does not hold the entity's representation."""
        if plan is not None and access.permissions.can(meta.name, "read"):
            found = self._tagged(access, meta, operation.id, plan, return_nulls)
            if found is not None:
                return found
        return self.saved_response(access, meta, [operation], plan, return_nulls)[0], None

    def saved_response(self, access, meta, saved, plan, return_nulls=False):
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
        by_id = {}
        if readable:
            read = reading(access, meta, plan, return_nulls)
            rows = load(access, read, Budget(self.settings.max_response_entities),
                        Load(key_field=meta.model.id, keys=ids))
            by_id = dict(write_each(access, read, rows))
        return [by_id[key] if key in by_id else RawJson(dumps({"_entityName": meta.name, "id": key}))
                for key in ids]


def _at_once(operation):
    """Whether ``Writer.save_at_once`` may try a lone write: a create of a row
    whose id it knows, an update of a versioned row that publishes no events
    (an event is read from the row as written: the UPDATE's WITH would show
    it the row as it was)."""
    meta = operation.meta
    if operation.creating:
        return not meta.database_assigns_id
    return "version" in meta.properties and not meta.events


def _name_from_values(meta, saved):
    """Whether the written values alone make the instance name (no reload)."""
    names = meta.instance_name
    return names and all(
        not meta.properties[name].is_reference and name in op.values
        for op in saved for name in names)


def _check_versioned(meta, entity_id):
    """An entity without a version has no ETag: no If-Match can match it."""
    if "version" not in meta.properties:
        raise PreconditionFailed(meta.name, entity_id)


def _required_id(meta, body):
    if not isinstance(body, dict) or body.get("id") is None:
        raise BadRequest("Required attribute id is not presented",
                         "Required attribute id is not presented")
    return body["id"]
