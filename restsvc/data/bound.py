"""The data manager bound to one caller, for application code (services and
custom endpoints).

    order = data.load("Order", order_id, "order-with-details")
    order.amount, order.customer.name, [line.quantity for line in order.lines]
    data.search(Order, {"conditions": [...]}, sort="-date", limit=10)
    saved = data.save("Order", {"number": "A-1", ...})         # create (or update with entity_id=)

Every load and save applies the caller's entity, attribute and row-level
policies exactly as the Entities API does: rows the caller may not see are
not found, writes need the caller's create/update permissions and attribute
rights. Entities come back as ``Record``s: Python values (Decimal, date,
enum members; ids as strings) by attribute name, references and
compositions as nested Records. What the caller may not read is still
loaded (services compute with it); ``to_entity_json`` -- and every service
result -- leaves it out.
"""
import contextlib
import dataclasses
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

from ..db import write_transaction
from ..errors import entity_not_found
from ..jsonio import JsonObject
from ..model.metadata import MetaClass
from .answer.recordjson import record_json
from .read.request import Page

if TYPE_CHECKING:
    import peewee

    from ..model.entity import Entity
    from ..model.meta import FetchPlan as Plan
    from ..security.roles import Permissions, PermissionsMemo
    from .access import Access
    from .datamanager import DataManager

E = TypeVar("E", bound="Entity")
# A fetch plan: a plan's name ("_base", "_local", "order-with-details") or an
# inline plan in the JSON format ({"properties": [...]}).
FetchPlan = str | Mapping[str, Any]
# A search filter of the Entities API ({"conditions": [...]}).
Filter = Mapping[str, Any]
# An attribute's value in a Record: the database's value converted for Python
# code (records.py: Decimal, date, enum member, ids as text), a reference's
# values by name (a list of them for a collection), or a transient value.
Value = Any


class Record(dict[str, Value]):
    """One loaded entity: a dict of attribute values, readable as attributes too."""

    __slots__ = ("meta", "plan")

    def __init__(self, meta: MetaClass, plan: "Plan | None", values: Mapping[str, Value]) -> None:
        super().__init__(values)
        self.meta = meta
        self.plan = plan

    def __getattr__(self, name: str) -> Value:
        try:
            value = self[name]
        except KeyError:
            raise AttributeError(f"{self.meta.name}.{name} is not loaded") from None
        prop = self.meta.properties.get(name)
        if prop is None or not prop.is_reference or value is None:
            return value
        nested = self.plan.properties.get(name) if self.plan is not None else None
        if prop.is_collection:
            return [Record(prop.related, nested, child) for child in value]
        return Record(prop.related, nested, value)


def to_entity_json(record: "Record | Entity", permissions: "Permissions", skip_denied: bool = True,
                   return_nulls: bool = False) -> JsonObject:
    """Entity JSON of a Record along the plan it was loaded with.
    ``skip_denied`` (the default) leaves out every attribute the caller may not read,
    also in nested references; only turn it off for data the caller may see whole."""
    if not skip_denied:
        everything: _Everything | None = permissions.memo.get("everything")
        if everything is None:
            everything = permissions.memo["everything"] = _Everything(permissions)
        # What record_json reads of a Permissions, _Everything has: attribute_levels and memo.
        permissions = cast("Permissions", everything)
    record = cast(Record, record)       # loads typed as the entity are Records at run time
    return record_json(record.meta, record, record.plan, permissions, return_nulls)


class _Everything:
    """Permissions that show every attribute (``skip_denied=False``); one per
    Permissions, living as long as it (serializers keep what they work out
    for permissions in ``memo``)."""

    def __init__(self, permissions: "Permissions") -> None:
        self._permissions = permissions
        self._levels: dict[str, dict[str, int]] = {}
        self.memo: PermissionsMemo = {}

    def attribute_levels(self, entity_name: str) -> dict[str, int]:
        levels = self._levels.get(entity_name)
        if levels is None:
            levels = self._levels[entity_name] = {
                name: 2 for name in self._permissions.attribute_levels(entity_name)}
        return levels


class DataAccess:
    """``DataManager`` calls with the caller's ``Access`` filled in.

    For type checkers, what a call given an entity class loads is an instance
    of that class (``data.load(Order, ...)`` is an ``Order``: its attributes
    are checked against the model's fields); at run time it is a ``Record``.
    Given an entity name, it is a ``Record``.

    Writes are recorded (audit fields, history, ``deletedBy``) under the
    caller's name. Two explicit exceptions, for application code only:

        with data.as_service():         # in the service's own name ("orderService")
            data.save(Order, {...})
        with data.importing():          # createdBy/createdDate/lastModifiedBy/
            data.save(Customer, row)    #   lastModifiedDate from the body, where given

    Neither changes what the caller may do: its permissions and row rules
    still apply to every read and write."""

    def __init__(self, data_manager: "DataManager", access: "Access",
                 service: str | None = None) -> None:
        self._data = data_manager
        self.access = access
        self.service = service      # the name of the service it was given to, if any
        # None: outside a unit of work; False: no write yet; else its transaction
        self._unit: peewee._atomic | Literal[False] | None = None

    def for_service(self, name: str) -> "DataAccess":
        """The same caller's DataAccess, handed to the service ``name``."""
        return DataAccess(self._data, self.access, name)

    @contextlib.contextmanager
    def as_service(self, name: str | None = None) -> Iterator["DataAccess"]:
        """Writes inside the block are recorded in the service's own name
        (``name``, by default the name the service is registered under) instead
        of the caller's: audit fields, history items' ``username``, ``deletedBy``."""
        name = name or self.service
        if not name or not isinstance(name, str):
            raise ValueError("as_service() needs a name outside a service method")
        with self._changed(dataclasses.replace(self.access, writer=name)):
            yield self

    @contextlib.contextmanager
    def importing(self) -> Iterator["DataAccess"]:
        """Inside the block, saves keep the audit fields (``createdBy``,
        ``createdDate``, ``lastModifiedBy``, ``lastModifiedDate``) a body gives,
        as imports of rows from elsewhere need; those it leaves out are filled
        as always. Clients never can: the Entities API ignores them."""
        with self._changed(dataclasses.replace(self.access, keeps_audit=True)):
            yield self

    @contextlib.contextmanager
    def _changed(self, access: "Access") -> Iterator["DataAccess"]:
        before = self.access
        self.access = access
        try:
            yield self
        finally:
            self.access = before

    @contextlib.contextmanager
    def unit_of_work(self) -> Iterator["DataAccess"]:
        """Everything written inside is committed together at the end, or
        rolled back when the block raises. The transaction begins at the first
        write (a call that only reads costs no BEGIN/COMMIT), as a write
        transaction (SQLite: the write lock is taken then, not upgraded later).
        Inside another unit of work (a service method's, an after-commit
        hook's) it is part of that one."""
        if self._unit is not None:
            yield self
            return
        self._unit = False
        try:
            yield self
        except BaseException:
            if self._unit:
                self._unit.__exit__(*sys.exc_info())
            raise
        else:
            if self._unit:
                self._unit.__exit__(None, None, None)
        finally:
            self._unit = None

    def _writing(self) -> None:
        if self._unit is False:
            self._unit = write_transaction(self.access.database)
            self._unit.__enter__()

    def entity(self, entity: "str | type[Entity] | MetaClass") -> MetaClass:
        """MetaClass of an entity name or a declared model class."""
        if isinstance(entity, str):
            return self._data.entity(entity)
        if isinstance(entity, MetaClass):
            return entity
        meta = self._data.metadata.of_model(entity)
        if meta is None:
            raise TypeError(f"{getattr(entity, '__name__', type(entity).__name__)} is not a declared entity")
        return meta

    @overload
    def load(self, entity: type[E], entity_id: object, fetch_plan: FetchPlan = "_base") -> E: ...
    @overload
    def load(self, entity: str | MetaClass, entity_id: object,
             fetch_plan: FetchPlan = "_base") -> Record: ...

    def load(self, entity: "str | type[E] | MetaClass", entity_id: object,
             fetch_plan: FetchPlan = "_base") -> "Record | E":
        """One entity by id; NotFound (404) when it does not exist or the caller cannot see it."""
        meta = self.entity(entity)
        plan = self._data.plan(meta, fetch_plan)
        row = self._data.select_by_id(self.access, meta, plan, entity_id)
        if row is None:
            raise entity_not_found(meta.name, entity_id)
        return Record(meta, plan, row)

    @overload
    def search(self, entity: type[E], filter: Filter | None = None, fetch_plan: FetchPlan = "_base",
               sort: str | None = None, limit: int | None = None,
               offset: int | None = None) -> list[E]: ...
    @overload
    def search(self, entity: str | MetaClass, filter: Filter | None = None,
               fetch_plan: FetchPlan = "_base", sort: str | None = None, limit: int | None = None,
               offset: int | None = None) -> list[Record]: ...

    def search(self, entity: "str | type[E] | MetaClass", filter: Filter | None = None,
               fetch_plan: FetchPlan = "_base", sort: str | None = None, limit: int | None = None,
               offset: int | None = None) -> "list[Record] | list[E]":
        """Entities matching a search filter of the Entities API (None: all the caller sees)."""
        return self._records(self.entity(entity), fetch_plan, filter, sort, limit, offset)

    def count(self, entity: "str | type[Entity] | MetaClass", filter: Filter | None = None) -> int:
        return self._data.count(self.access, self.entity(entity), filter)

    @overload
    def save(self, entity: type[E], body: "Mapping[str, Any] | Entity", entity_id: object = None,
             fetch_plan: FetchPlan = "_base") -> E: ...
    @overload
    def save(self, entity: str | MetaClass, body: "Mapping[str, Any] | Entity",
             entity_id: object = None, fetch_plan: FetchPlan = "_base") -> Record: ...

    def save(self, entity: "str | type[E] | MetaClass", body: "Mapping[str, Any] | Entity",
             entity_id: object = None, fetch_plan: FetchPlan = "_base") -> "Record | E":
        """Create (or, with ``entity_id``, update) from entity JSON as the
        Entities API accepts it, compositions included; the stored entity."""
        meta = self.entity(entity)
        self._writing()
        saved = self._data.save(self.access, meta, [body],
                                entity_ids=[entity_id] if entity_id is not None else None,
                                creating=False if entity_id is not None else None)
        return self.load(meta, saved[0].id, fetch_plan)

    def delete(self, entity: "str | type[Entity] | MetaClass", entity_id: object) -> None:
        self._writing()
        self._data.delete(self.access, self.entity(entity), [entity_id])

    def validate(self, entity: "str | type[Entity] | MetaClass", body: Mapping[str, Any],
                 path: str = "") -> None:
        self._data.validate(self.access, self.entity(entity), body, path)

    def _records(self, meta: MetaClass, fetch_plan: FetchPlan, filter_spec: Filter | None,
                 sort: str | None = None, limit: int | None = None, offset: int | None = None) -> list[Record]:
        plan = self._data.plan(meta, fetch_plan)
        rows, _ = self._data.select(self.access, meta, plan, filter_spec,
                                    Page(sort=sort, limit=limit, offset=offset))
        return [Record(meta, plan, row) for row in rows]
