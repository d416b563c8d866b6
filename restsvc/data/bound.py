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

from ..db import write_transaction
from ..errors import NotFound
from ..model.metadata import MetaClass
from ..model.serialize import serialize


class Record(dict):
    """One loaded entity: a dict of attribute values, readable as attributes too."""

    __slots__ = ("meta", "plan")

    def __init__(self, meta, plan, values):
        super().__init__(values)
        self.meta = meta
        self.plan = plan

    def __getattr__(self, name):
        try:
            value = self[name]
        except KeyError:
            raise AttributeError(f"{self.meta.name}.{name} is not loaded") from None
        prop = self.meta.properties.get(name)
        if prop is None or not prop.is_reference or value is None:
            return value
        nested = self.plan.properties.get(name) if self.plan is not None else None
        if prop.is_collection:
            return [Record(prop.target, nested, child) for child in value]
        return Record(prop.target, nested, value)


def to_entity_json(record, permissions, skip_denied=True, return_nulls=False):
    """Entity JSON of a Record along the plan it was loaded with.
    ``skip_denied`` (the default) leaves out every attribute the caller may not read,
    also in nested references; only turn it off for data the caller may see whole."""
    if not skip_denied:
        everything = permissions.memo.get("everything")
        if everything is None:
            everything = permissions.memo["everything"] = _Everything(permissions)
        permissions = everything
    return serialize(record.meta, record, record.plan, permissions, return_nulls)


class _Everything:
    """Permissions that show every attribute (``skip_denied=False``); one per
    Permissions, living as long as it (serializers keep what they work out
    for permissions in ``memo``)."""

    def __init__(self, permissions):
        self._permissions = permissions
        self._levels = {}
        self.memo = {}

    def attribute_levels(self, entity_name):
        levels = self._levels.get(entity_name)
        if levels is None:
            levels = self._levels[entity_name] = {
                name: 2 for name in self._permissions.attribute_levels(entity_name)}
        return levels


class DataAccess:
    """``DataManager`` calls with the caller's ``Access`` filled in.

    Writes are recorded (audit fields, history, ``deletedBy``) under the
    caller's name. Two explicit exceptions, for application code only:

        with data.as_service():         # in the service's own name ("orderService")
            data.save(Order, {...})
        with data.importing():          # createdBy/createdDate/lastModifiedBy/
            data.save(Customer, row)    #   lastModifiedDate from the body, where given

    Neither changes what the caller may do: its permissions and row rules
    still apply to every read and write."""

    def __init__(self, data_manager, access, service=None):
        self._data = data_manager
        self.access = access
        self.service = service      # the name of the service it was given to, if any
        self._unit = None           # None: outside a unit of work; False: no write yet

    def for_service(self, name):
        """The same caller's DataAccess, handed to the service ``name``."""
        return DataAccess(self._data, self.access, name)

    @contextlib.contextmanager
    def as_service(self, name=None):
        """Writes inside the block are recorded in the service's own name
        (``name``, by default the name the service is registered under) instead
        of the caller's: audit fields, history items' ``username``, ``deletedBy``."""
        name = name or self.service
        if not name or not isinstance(name, str):
            raise ValueError("as_service() needs a name outside a service method")
        with self._changed(writer=name):
            yield self

    @contextlib.contextmanager
    def importing(self):
        """Inside the block, saves keep the audit fields (``createdBy``,
        ``createdDate``, ``lastModifiedBy``, ``lastModifiedDate``) a body gives,
        as imports of rows from elsewhere need; those it leaves out are filled
        as always. Clients never can: the Entities API ignores them."""
        with self._changed(keeps_audit=True):
            yield self

    @contextlib.contextmanager
    def _changed(self, **values):
        before = self.access
        self.access = dataclasses.replace(before, **values)
        try:
            yield self
        finally:
            self.access = before

    @contextlib.contextmanager
    def unit_of_work(self):
        """Everything written inside is committed together at the end, or
        rolled back when the block raises. The transaction begins at the first
        write (a call that only reads costs no BEGIN/COMMIT), as a write
        transaction (SQLite: the write lock is taken then, not upgraded later)."""
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

    def _writing(self):
        if self._unit is False:
            self._unit = write_transaction(self.access.database)
            self._unit.__enter__()

    def entity(self, entity):
        """MetaClass of an entity name or a declared model class."""
        if isinstance(entity, str):
            return self._data.entity(entity)
        if isinstance(entity, MetaClass):
            return entity
        meta = self._data.metadata.of_model(entity)
        if meta is None:
            raise TypeError(f"{getattr(entity, '__name__', type(entity).__name__)} is not a declared entity")
        return meta

    def load(self, entity, entity_id, fetch_plan="_base"):
        """One entity by id; NotFound (404) when it does not exist or the caller cannot see it."""
        meta = self.entity(entity)
        plan = self._data.plan(meta, fetch_plan)
        row = self._data.select_by_id(self.access, meta, plan, entity_id)
        if row is None:
            raise NotFound("Entity not found", f"Entity {meta.name} with id {entity_id} not found")
        return Record(meta, plan, row)

    def search(self, entity, filter=None, fetch_plan="_base", sort=None, limit=None, offset=None):
        """Entities matching a search filter of the Entities API (None: all the caller sees)."""
        return self._records(self.entity(entity), fetch_plan, filter, sort, limit, offset)

    def count(self, entity, filter=None):
        return self._data.count(self.access, self.entity(entity), filter)

    def save(self, entity, body, entity_id=None, fetch_plan="_base"):
        """Create (or, with ``entity_id``, update) from entity JSON as the
        Entities API accepts it, compositions included; the stored entity."""
        meta = self.entity(entity)
        self._writing()
        saved = self._data.save(self.access, meta, [body],
                                entity_ids=[entity_id] if entity_id is not None else None,
                                creating=False if entity_id is not None else None)
        return self.load(meta, saved[0].id, fetch_plan)

    def delete(self, entity, entity_id):
        self._writing()
        self._data.delete(self.access, self.entity(entity), [entity_id])

    def validate(self, entity, body, path=""):
        self._data.validate(self.access, self.entity(entity), body, path)

    def _records(self, meta, fetch_plan, filter_spec, sort=None, limit=None, offset=None):
        plan = self._data.plan(meta, fetch_plan)
        rows, _ = self._data.select(self.access, meta, plan, filter_spec, sort, limit, offset)
        return [Record(meta, plan, row) for row in rows]
