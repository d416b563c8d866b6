"""Predefined queries (reference section 3): named, parameterized searches.

A query is a search filter template or a Python query function, bound to an
entity and a fetch plan; ``queryconfig.py`` reads them from XML. Running one
binds the request's parameters to their declared types, fills them into the
filter and hands the result to ``DataManager.search``/``count``, so entity,
attribute and row-level policies apply exactly as for ``/entities`` searches.
"""
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ...errors import BadRequest, NotFound
from ...jsonio import loads
from ...model.datatypes import DATATYPES
from ...model.fetchplan import FetchPlanError, parse_plan
from ...model.valuetypes import value_type
from ..access import Access, require
from .request import UNPAGED, Page

if TYPE_CHECKING:
    from ...model.fetchplan import FetchPlan
    from ...model.metadata import MetaClass, Metadata

ALL = "all"                     # the implicit query: every row, plan _instance_name
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SESSION_PARAMETERS = {"username": "username", "userLogin": "username", "userId": "userId"}



@dataclass(frozen=True)
class QueryParam:
    name: str
    type: str            # as declared in the configuration file
    value_type: Any      # model.valuetypes: raw value -> typed value
    sample: Any       # a value of the type in its JSON form, for checking filters at startup

    @property
    def is_array(self) -> bool:
        return self.type.endswith("[]")

    def bind(self, raw: Any) -> Any:
        """One raw value (JSON, or text from a query string) -> its JSON form in a filter."""
        return self.value_type.to_json(self.value_type.from_json(raw))


def invalid_parameter(name: str) -> BadRequest:
    """The 400 for a value a parameter cannot take; query functions raise it too."""
    return BadRequest("Invalid parameter value", f"Invalid parameter value for {name}")


def make_param(metadata: "Metadata", name: str, declared: str) -> QueryParam | None:
    """A QueryParam for a declared type, or None when the type is unknown.

    Types: a restsvc datatype name, a Java class name of the reference, an
    enum's qualified name or an entity name (the value is an id); ``[]``
    after any of them makes an array (model.valuetypes)."""
    param_type = value_type(metadata, declared)
    if param_type is None or getattr(param_type, "datatype", None) is DATATYPES["fileRef"]:
        return None
    return QueryParam(name, declared, param_type, param_type.to_json(
        param_type.from_json(param_type.sample)))


def parameter_reference(value: Any) -> str | None:
    """``":status"`` -> ``"status"``; None for anything else (literals, session values)."""
    if isinstance(value, str) and value.startswith(":") and PARAM_NAME.match(value[1:]):
        return value[1:]
    return None


def fill_filter(spec: Any, values: Mapping[str, Any]) -> Any:
    """The filter template with ``:name`` values replaced (also inside arrays)."""
    if isinstance(spec, list):
        return [fill_filter(item, values) for item in spec]
    if not isinstance(spec, dict):
        return spec
    filled = {key: fill_filter(item, values) for key, item in spec.items() if key != "value"}
    if "value" in spec:
        filled["value"] = _fill_value(spec["value"], values)
    return filled


def _fill_value(value: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(value, list):
        return [_fill_value(item, values) for item in value]
    name = parameter_reference(value)
    return values[name] if name is not None else value


@dataclass(frozen=True)
class Query:
    name: str
    entity: "MetaClass"
    fetch_plan: str
    limit: int | None = None
    offset: int | None = None
    params: tuple[QueryParam, ...] = ()
    filter: dict[str, Any] | None = None   # a filter template; None with a function, or for all rows
    function: Callable[[dict[str, Any], Access], Any] | None = None  # -> filter JSON or None

    def descriptor(self) -> dict[str, Any]:
        return {"name": self.name, "entityName": self.entity.name,
                "viewName": self.fetch_plan, "fetchPlanName": self.fetch_plan,
                "limit": self.limit, "offset": self.offset,
                "params": [{"name": p.name, "type": p.type} for p in self.params]}

    def bind(self, raw_values: Mapping[str, Any]) -> dict[str, Any]:
        """Declared parameter -> converted value; a 400 for a missing or bad one."""
        values: dict[str, Any] = {}
        for param in self.params:
            raw = raw_values.get(param.name)
            if raw is None:
                raise BadRequest("Query parameter not found", f"Query parameter {param.name} not found")
            try:
                values[param.name] = param.bind(raw)
            except (ValueError, TypeError, ArithmeticError):
                raise invalid_parameter(param.name) from None
        return values

    def search_filter(self, values: Mapping[str, Any], access: Access) -> Any:
        if self.function is not None:
            return self.function(dict(values), access)
        return fill_filter(self.filter, values) if self.filter is not None else None


def query_string_values(query: Query, args: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Raw values from a query string (name -> list of strings): an array
    parameter is a JSON array (``ids=["a","b"]``) or the parameter repeated."""
    raw: dict[str, Any] = {}
    for param in query.params:
        given = args.get(param.name)
        if not given:
            continue
        if not param.is_array:
            raw[param.name] = given[0]
        elif len(given) == 1 and given[0].lstrip().startswith("["):
            try:
                raw[param.name] = loads(given[0])
            except (ValueError, RecursionError):
                raise invalid_parameter(param.name) from None
        else:
            raw[param.name] = list(given)
    return raw


class PredefinedQueries:
    """The configured queries by entity, run through the data manager."""

    def __init__(self, data: Any, queries: Iterable[Query] = ()) -> None:
        self.data = data         # the DataManager
        self._by_entity: dict[str, dict[str, Query]] = {}
        for query in queries:
            self._by_entity.setdefault(query.entity.name, {})[query.name] = query

    def describe(self, access: Access, meta: "MetaClass") -> list[dict[str, Any]]:
        require(access, meta, "read")
        return [query.descriptor() for query in self._by_entity.get(meta.name, {}).values()]

    def find(self, access: Access, meta: "MetaClass", name: str) -> Query:
        require(access, meta, "read")
        if name == ALL:
            return Query(ALL, meta, "_instance_name")
        query = self._by_entity.get(meta.name, {}).get(name)
        if query is None:
            raise NotFound("Query not found", f"Query with name {name} for entity {meta.name} not found")
        return query

    def run(self, access: Access, query: Query, raw_values: Mapping[str, Any],
            fetch_plan: str | None = None, page: Page = UNPAGED) -> Any:
        """A page of results, the total count when asked (None otherwise) and
        the next page's cursor (DataManager.search).
        Request limit/offset win over the query's; without both, the maximum
        fetch size applies (and caps both). ``after``: a cursor, as for searches."""
        plan, search_filter, page = self.search_of(access, query, raw_values, fetch_plan, page)
        return self.data.search(access, query.entity, plan, search_filter, page)

    def search_of(self, access: Access, query: Query, raw_values: Mapping[str, Any],
                  fetch_plan: str | None = None, page: Page = UNPAGED,
                  ) -> tuple["FetchPlan", Any, Page]:
        """(plan, filter, page) of a run: what ``run`` searches, and what an
        export of the query reads (api/export.py). The request's limit and
        offset win over the query's own."""
        plan = _named_plan(query.entity, fetch_plan or query.fetch_plan)
        search_filter = query.search_filter(query.bind(raw_values), access)
        # A cursor continues where the query's own offset started.
        return plan, search_filter, replace(
            page, limit=page.limit if page.limit is not None else query.limit,
            offset=page.offset if page.offset is not None or page.after is not None
            else query.offset)

    def count(self, access: Access, query: Query, raw_values: Mapping[str, Any]) -> int:
        counted: int = self.data.count(access, query.entity,
                                       query.search_filter(query.bind(raw_values), access))
        return counted


def _named_plan(meta: "MetaClass", name: str) -> "FetchPlan":
    """Queries take plan names only; inline JSON is looked up as a name (reference 1.6)."""
    try:
        return parse_plan(meta, name)
    except FetchPlanError as exc:
        raise BadRequest("Fetch plan not found", str(exc)) from None
