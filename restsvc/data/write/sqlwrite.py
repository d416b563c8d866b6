"""The write path's SQL (writer.py decides which steps run and in what
order): an INSERT's text kept per column set, the statements of a lone write
sent as one (``Writer.flush``, PostgreSQL), and what the database refuses or
an UPDATE misses, as the client's error."""
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import peewee

from ...db import execute, in_list, instant_param, is_sqlite, keyed, list_param
from ...errors import ApiError, BadRequest, PreconditionFailed, Text, entity_not_found
from ..access import Access
from ..columns import key_type
from ..answer.etags import version_is

if TYPE_CHECKING:
    from .operation import Operation

# One statement as the driver takes it: SQL text and its parameters.
Statement = tuple[str, list[object]]
# Parameters per multi-row INSERT: within SQLite's limit (32766 since 3.32);
# psycopg2 sends the values in the text, without a limit of its own.
MAX_PARAMS = 32766


class refusals:
    """What the database refuses, as the client's error (a context manager
    entered once per written row: a class, not a generator's)."""

    __slots__ = ("operation",)

    def __init__(self, operation: "Operation") -> None:
        self.operation = operation

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: object) -> None:
        if kind is None or not issubclass(kind, (peewee.IntegrityError, peewee.DataError)):
            return
        failure = "Entity creation failed" if self.operation.creating else "Entity update failed"
        if issubclass(kind, peewee.IntegrityError):
            raise BadRequest(failure, "The values conflict with stored data "
                                      "(for example a value that must be unique)") from None
        raise BadRequest(failure, "A value does not fit its database column") from None


def after_update(access: Access, insert_text: str) -> str:
    """An INSERT ... VALUES as INSERT ... SELECT from the WITH's "updated"
    (one row when the UPDATE changed one, else none); its text made once."""
    key = ("after-update", insert_text)
    text: str | None = access.sql_cache.get(key)
    if text is None:
        columns, _, values = insert_text.partition(" VALUES ")
        text = access.sql_cache[key] = f'{columns} SELECT {values[1:-1]} FROM "updated"'
    return text


def insert_sql(access: Access, model: type[peewee.Model], data: dict[str, object]) -> Statement:
    """(SQL, parameters) of one row's INSERT (``data``: field name -> value).
    Its text and the columns' conversions are worked out once per column set
    (a bulk's rows share one): building them costs more than running the
    statement, and it runs while SQLite holds its write lock. A text column's
    conversion keeps a string as it is: not called for one."""
    key = ("insert", model, tuple(data))
    compiled: tuple[str, list[tuple[str, Any, bool]]] | None = access.sql_cache.get(key)
    if compiled is not None:
        sql, converters = compiled
        return sql, [value if text and value.__class__ is str else convert(value)
                     for name, convert, text in converters for value in (data[name],)]
    instant = instant_param(access.database)
    converters = [(field.name, _converter(field, instant), type(field) in _TEXT_FIELDS)
                  for field in model._meta.sorted_fields if field.name in data]
    params: list[object] = [convert(data[name]) for name, convert, _ in converters]
    sql, built = model.insert(**data).returning().sql()     # no RETURNING: nothing reads it
    if [instant(value) for value in built] != params:
        return sql, list(built)
    access.sql_cache[key] = (sql, converters)
    return sql, params


class _UpdateText(NamedTuple):
    """What an UPDATE of one column set keeps (``update_sql``): its text, the
    columns' conversions, where the version's raise sits among the SET
    parameters, and the key's conversion."""
    sql: str
    converters: list[tuple[str, Any, bool]]
    raised_at: int
    convert_key: Callable[[object], object]


def update_sql(access: Access, model: type[peewee.Model], key: object, values: dict[str, object],
               expected: int | tuple[int, ...] | None, returning: bool) -> Statement:
    """(SQL, parameters) of one row's UPDATE setting ``values`` and raising
    its version, of the row ``key`` (at the ``expected`` version or versions,
    if any), returning the version it leaves when ``returning``. Its text is
    worked out once per column set and kind of version check, as an
    INSERT's (``insert_sql``)."""
    shape = None if expected is None else len(expected) if isinstance(expected, tuple) else -1
    cache_key = ("update", model, tuple(values), shape, returning)
    compiled: _UpdateText | None = access.sql_cache.get(cache_key)
    checked: list[object] = [] if expected is None else \
        list(expected) if isinstance(expected, tuple) else [expected]
    built: Sequence[object] = ()
    if compiled is None:
        fields: Any = model     # a Peewee model: its fields are class attributes
        instant = instant_param(access.database)
        condition = fields.id == key
        if expected is not None:
            condition &= version_is(fields, expected)
        query = model.update(**values, version=fields.version + 1).where(condition)
        sql, built = (query.returning(fields.version) if returning else query).sql()
        text = _UpdateText(
            sql, [(field.name, _converter(field, instant), type(field) in _TEXT_FIELDS)
                  for field in model._meta.sorted_fields if field.name in values],
            _raised_at(model, tuple(values)), fields.id.db_value)
    else:
        text = compiled
    params = [value if is_text and value.__class__ is str else convert(value)
              for name, convert, is_text in text.converters for value in (values[name],)]
    params.insert(text.raised_at, 1)
    params += [text.convert_key(key), *checked]
    if compiled is None:
        if [instant(value) for value in built] != params:
            return text.sql, list(built)
        access.sql_cache[cache_key] = text
    return text.sql, params


# Fields whose conversion gives a string back as it is (peewee's _StringField.adapt).
_TEXT_FIELDS = (peewee.CharField, peewee.TextField)


def _converter(field: peewee.Field, instant: Callable[[object], object]) -> Callable[[object], object]:
    """A column's conversion of a value to its parameter; a datetime column's
    also sends the instant as the database takes it (``db.instant_param``)."""
    to_db: Callable[[object], object] = field.db_value
    if not isinstance(field, peewee.DateTimeField):
        return to_db
    return lambda value: instant(to_db(value))


def many_rows(sql: str, rows: Sequence[Sequence[object]], param: str) -> list[Statement] | None:
    """One-row INSERT ``sql`` (every value a parameter ``param``) as
    multi-row INSERTs of ``rows``, as few as ``MAX_PARAMS`` allows:
    ``ceil(len(rows) * columns / MAX_PARAMS)`` statements; None when the
    text holds anything but parameters in its VALUES (then one row at a time)."""
    if not rows:
        return []
    head, _, values = sql.partition(" VALUES ")
    row = "(" + ", ".join([param] * len(rows[0])) + ")"
    if values != row:
        return None
    per = max(1, MAX_PARAMS // len(rows[0]))
    return [(f"{head} VALUES {', '.join([row] * len(rows[start:start + per]))}",
             [value for one in rows[start:start + per] for value in one])
            for start in range(0, len(rows), per)]


def insert_rows(access: Access, sql: str, rows: Sequence[Sequence[object]]) -> None:
    """Rows of the one-row INSERT ``sql`` (each its parameters) in as few
    statements as ``many_rows`` allows, else one statement per row."""
    if len(rows) == 1:
        execute(access.database, sql, rows[0])
        return
    for text, values in many_rows(sql, rows, access.database.param) or [
            (sql, list(one)) for one in rows]:
        execute(access.database, text, values)


def _raised_at(model: type[peewee.Model], names: Sequence[str]) -> int:
    """Where Peewee's SET of the columns ``names`` puts the version's raise:
    it lists the columns in the model's order, "version" among them."""
    version = model._meta.fields["version"]
    return sum(1 for field in model._meta.sorted_fields
               if field.name in names and field._sort_key < version._sort_key)


def update_rows(access: Access, model: type[peewee.Model], names: Sequence[str],
                rows: Sequence[Sequence[object]]) -> None:
    """Rows of ``model`` that set the columns ``names`` and raise their
    versions, each row ``update_sql``'s parameters without a version check
    (the values, the version's raise among them, the key last), locked and
    known to be there (``Pending.read_before``). Rows that take the same
    values: one UPDATE of them all (their keys one parameter,
    ``db.in_list``); else ``UPDATE ... FROM (VALUES ...)``, one per
    ``MAX_PARAMS`` parameters (``_update_from``)."""
    database = access.database
    raised_at = _raised_at(model, names)
    values = [[*row[:raised_at], *row[raised_at + 1:-1]] for row in rows]   # without the raise, the key
    if all(row == values[0] for row in values):
        kind = key_type(_key(model))
        head = _update_head(model, names, lambda number, field: database.param)
        sql = f'{head} WHERE {_key_column(model)} {in_list(database, kind)}'
        keys = [cast("str | int", row[-1]) for row in rows]
        _updated(database, sql, [*values[0], list_param(database, keys, kind)], len(rows))
        return
    per = max(1, MAX_PARAMS // (len(values[0]) + 1))
    for start in range(0, len(rows), per):
        chunk = range(start, min(start + per, len(rows)))
        _updated(database, _update_from(database, model, names, len(chunk)),
                 [value for at in chunk for value in (rows[at][-1], *values[at])], len(chunk))


def _update_head(model: type[peewee.Model], names: Sequence[str],
                 value: "Callable[[int, peewee.Field[Any]], str]") -> str:
    """``UPDATE "table" SET`` the columns ``names`` (in the model's order,
    the n-th one's value ``value(n, field)``) and the version's raise."""
    table = model._meta.table_name
    fields = [field for field in model._meta.sorted_fields if field.name in names]
    version = model._meta.fields["version"].column_name
    sets = [f'"{field.column_name}" = {value(number, field)}' for number, field in enumerate(fields)]
    sets.append(f'"{version}" = "{table}"."{version}" + 1')      # alone when nothing else is set
    return f'UPDATE "{table}" SET {", ".join(sets)}'


def _key(model: type[peewee.Model]) -> "peewee.Field[Any]":
    return cast("peewee.Field[Any]", model._meta.primary_key)


def _key_column(model: type[peewee.Model]) -> str:
    return f'"{model._meta.table_name}"."{_key(model).column_name}"'


def _update_from(database: peewee.Database, model: type[peewee.Model], names: Sequence[str],
                 count: int) -> str:
    """``UPDATE ... FROM (VALUES ...)`` of ``count`` rows, each (key, values
    of ``names`` in the model's order). PostgreSQL types the VALUES' columns
    from what they hold (text, or nothing known for NULL): each is cast to
    its column's type, without its length or precision (a cast to
    ``VARCHAR(200)`` cuts a longer text where the assignment refuses it)."""
    sqlite = is_sqlite(database)

    def value(number: int, field: "peewee.Field[Any] | None") -> str:
        column = f'"v"."column{number + 1}"'
        if sqlite:
            return column
        if field is None:       # the key: an auto-increment column's type is no type to cast to
            kind = key_type(_key(model))
        else:
            context = database.get_sql_context()
            ddl = context.sql(field.ddl_datatype(context))  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
            kind = ddl.query()[0].split("(")[0]
        return f"CAST({column} AS {kind})"

    row = "(" + ", ".join([database.param] * (len(names) + 1)) + ")"
    return (f'{_update_head(model, names, lambda number, field: value(number + 1, field))}'
            f' FROM (VALUES {", ".join([row] * count)}) AS "v"'
            f' WHERE {_key_column(model)} = {value(0, None)}')


def _updated(database: peewee.Database, sql: str, params: list[object], expected: int) -> None:
    changed = execute(database, sql, params).rowcount
    if changed != expected:
        raise RuntimeError(f"{sql[:200]}: {changed} of {expected} locked rows updated")


def one_statement(access: Access, batch: Sequence[Statement], creating: bool) -> Statement:
    """(SQL, parameters) sending a lone write's ``batch`` of (SQL, parameters)
    as one: a create's statements one after the other (one Query message runs
    as one transaction), an update's INSERTs as parts of a data-modifying WITH
    that only insert when the UPDATE changed the row. Statements without
    parameters that are no INSERT (the outbox's ``NOTIFY``) go first, as
    statements of their own: the last one's row count is the write's. The
    INSERTs, and an update's WITH, are keyed statements (``db.keyed``)."""
    first = [text for text, values in batch if not values and not text.startswith("INSERT")]
    batch = [statement for statement in batch if statement[1] or statement[0] not in first]
    database = access.database
    if creating:
        sql = "; ".join(first + [keyed(database, text) for text, _ in batch])
    else:
        (update, _), inserts = batch[0], [text for text, _ in batch[1:]]
        sql = update
        if inserts:
            sql = f'WITH "updated" AS ({update} RETURNING 1)'
            for number, text in enumerate(inserts[:-1]):
                sql += f', "written{number}" AS ({after_update(access, text)})'
            sql += " " + after_update(access, inserts[-1])
        sql = "; ".join(first + [keyed(database, sql)])
    return sql, [value for _, values in batch for value in values]


def update_refused(entity_name: str, entity_id: str | int,
                   expected: int | tuple[int, ...] | None) -> ApiError:
    """The error of an UPDATE that changed no row: the ``If-Match`` versions
    (a tuple) or the body's version (optimistic lock) missed, else the row is gone."""
    if isinstance(expected, tuple):
        return PreconditionFailed(entity_name, entity_id)
    if expected is not None:
        return ApiError("Optimistic lock", Text(
            "optimisticLock", "Object of class [{entity}] with identifier [{id}]: "
            "optimistic locking failed", entity=entity_name, id=entity_id))
    missing: ApiError = entity_not_found(entity_name, entity_id)
    return missing
