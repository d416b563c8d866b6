"""Each owner row's many-to-many link keys, stored on the row and kept by
database triggers on the link table.

For every many-to-many attribute declared on an entity (the owning side,
``Product.tags``; not its backref ``Tag.products``), the owner's table has a
text column ``<attribute>_link_keys``: the JSON array of the member keys
linked to the row, in the order the database sorts the member column, NULL
when there are none. A page of owners reads it as one more column
(data/read/members.py) instead of aggregating the link table per row. It is no
attribute: restsvc never writes it, and nothing but the members' loading
reads it.

Triggers keep it, so that links written any way (restsvc's write path, a
deleted member's links, a bulk load, raw SQL) cannot leave it stale:

SQLite: three row triggers (insert, delete, update of a link) recompute the
owner's array from the link table, through its (owner, member) index. SQLite
runs one writer at a time, so what a trigger reads is what is committed.

PostgreSQL: statement triggers with transition tables (insert, delete,
update; truncate empties every array) call one function. It first locks the
statement's owner rows in id order (two statements touching the same owners
wait for each other instead of deadlocking), then updates each owner once,
incrementally: the new array is the row's current array plus (or minus) the
statement's own links, never a recomputation from the link table. Under READ
COMMITTED a transaction that waited for another's lock on the row goes on
with the row as the other committed it (the function's next statement takes
a new snapshot, and an UPDATE meeting a row changed meanwhile re-reads it),
so two transactions adding or removing links of one owner each apply their
change to the other's result. An UPDATE recomputing the array from the link
table would read it in its statement's snapshot, which lacks the links of a
transaction it waited for, and lose them (tests/test_link_keys.py). Under REPEATABLE READ the second one fails to
serialize, as any concurrent update does. Keys are counted, not merged: a
link table without a unique (owner, member) key may hold a link twice, and
so does the array, as the link table would give it.

Both are part of the declared schema (``declared.py``): ``init-schema`` and
``restsvc migrate`` create them, and fill the column from the link table in
the same transaction, after the triggers (a link written meanwhile waits for
the migration's lock, then fires them).
"""
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import peewee

from ..db import is_sqlite
from .inspect import Trigger

SUFFIX = "_link_keys"
_OURS = re.compile(rf"{SUFFIX}_(?:ins|del|upd|trunc)\Z")


def keys_column(m2m: peewee.ManyToManyField) -> str | None:
    """The owner's column holding a many-to-many field's link keys, or None
    for a backref (the inverse side aggregates the link table when it loads)."""
    # peewee-stubs leave out the field's private _is_backref.
    return None if m2m._is_backref else f"{m2m.name}{SUFFIX}"  # type: ignore[attr-defined]


def is_ours(trigger_name: str) -> bool:
    """Whether a trigger is one of the link keys' (an extra one is dropped by migrate)."""
    return _OURS.search(trigger_name) is not None


@dataclass(frozen=True)
class LinkKeys:
    """The triggers keeping one owner column, and what makes and removes them."""
    owner_table: str
    column: str
    link_table: str
    triggers: tuple[str, ...]       # their names, on the link table
    create: tuple[str, ...]         # statements: remove, create, fill the column
    drop: tuple[str, ...]

    @property
    def description(self) -> str:
        return f"{self.owner_table}.{self.column} (from {self.link_table})"


def declared(database: peewee.Database, models: Sequence[type[peewee.Model]],
             type_sql: Callable[[peewee.Field], str],
             ) -> tuple[dict[str, list[str]], dict[str, list[LinkKeys]]]:
    """({owner table: [column]}, {link table: [LinkKeys]}) of the models'
    own many-to-many fields whose link tables are among ``models``.
    ``type_sql``: a field -> its SQL type (the member column's, for PostgreSQL)."""
    present = set(models)
    columns: dict[str, list[str]] = {}
    units: dict[str, list[LinkKeys]] = {}
    for model in models:
        for m2m in model._meta.manytomany.values():
            column = keys_column(m2m)
            through = m2m.get_through_model()
            if column is None or through not in present:
                continue
            owner, member = _link_fields(model, m2m, through)
            unit = _unit(database, model, column, through, owner, member, type_sql(member))
            columns.setdefault(model._meta.table_name, []).append(column)
            units.setdefault(through._meta.table_name, []).append(unit)
    return columns, units


def _link_fields(model: type[peewee.Model], m2m: peewee.ManyToManyField,
                 through: type[peewee.Model]) -> tuple[peewee.ForeignKeyField, peewee.ForeignKeyField]:
    keys: list[peewee.ForeignKeyField] = [field for field in through._meta.sorted_fields
                                          if hasattr(field, "rel_model")]
    owner = next(field for field in keys if field.rel_model is model)
    member = next(field for field in keys if field is not owner)
    return owner, member


def _q(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _unit(database: peewee.Database, model: type[peewee.Model], column: str,
          through: type[peewee.Model], owner: peewee.ForeignKeyField,
          member: peewee.ForeignKeyField, member_type: str) -> LinkKeys:
    table: str = model._meta.table_name
    link: str = through._meta.table_name
    base = f"{table}_{column}"
    names = {kind: (base[:63 - len(kind) - 1] + "_" + kind)
             for kind in (("ins", "del", "upd") if is_sqlite(database)
                          else ("ins", "del", "upd", "trunc"))}
    t, k, lt = _q(table), _q(column), _q(link)
    i, o, m = _q(owner.rel_field.column_name), _q(owner.column_name), _q(member.column_name)
    if is_sqlite(database):
        # The array of the owner row being updated, read through the link
        # table's (owner, member) index; NULL for none.
        keys = (f"(SELECT nullif(json_group_array(member), '[]') FROM (SELECT {m} AS member "
                f"FROM {lt} WHERE {o} = {t}.{i} ORDER BY {m}))")
        update = f"UPDATE {t} SET {k} = {keys} WHERE {i}"
        drop = tuple(f"DROP TRIGGER IF EXISTS {_q(name)}" for name in names.values())
        create = drop + (
            f"CREATE TRIGGER {_q(names['ins'])} AFTER INSERT ON {lt} "
            f"BEGIN {update} = new.{o}; END",
            f"CREATE TRIGGER {_q(names['del'])} AFTER DELETE ON {lt} "
            f"BEGIN {update} = old.{o}; END",
            f"CREATE TRIGGER {_q(names['upd'])} AFTER UPDATE OF {o}, {m} ON {lt} "
            f"BEGIN {update} IN (old.{o}, new.{o}); END",
            _fill(t, k, lt, i, o, keys))
        return LinkKeys(table, column, link, tuple(names.values()), create, drop)
    function = _q(base[:60] + "_fn")
    # The row's array as typed keys (sorted as the member column sorts).
    current = f"SELECT (e #>> '{{}}')::{member_type} AS key FROM json_array_elements(o.{k}::json) AS e"
    added = (f"UPDATE {t} AS o SET {k} = (SELECT json_agg(key ORDER BY key)::text FROM "
             f"({current} UNION ALL SELECT unnest(n.keys)) AS s) "
             f"FROM (SELECT {o} AS owner, array_agg({m}) AS keys FROM new_links GROUP BY {o} "
             f"ORDER BY {o}) AS n WHERE o.{i} = n.owner")
    # Each key as often as the row holds it, less as often as the statement removed it.
    removed = (f"UPDATE {t} AS o SET {k} = (SELECT json_agg(key ORDER BY key)::text FROM "
               f"(SELECT key, row_number() OVER (PARTITION BY key) AS nth FROM ({current}) AS c)"
               f" AS s WHERE nth > coalesce(array_length(array_positions(d.keys, key), 1), 0)) "
               f"FROM (SELECT {o} AS owner, array_agg({m}) AS keys FROM old_links GROUP BY {o} "
               f"ORDER BY {o}) AS d WHERE o.{i} = d.owner")
    lock = (f"PERFORM 1 FROM {t} WHERE {i} IN (SELECT {o} FROM {{links}}) ORDER BY {i} "
            f"FOR NO KEY UPDATE")
    body = (f"BEGIN "
            f"IF TG_OP = 'TRUNCATE' THEN UPDATE {t} SET {k} = NULL WHERE {k} IS NOT NULL; "
            f"RETURN NULL; END IF; "
            f"IF TG_OP = 'INSERT' THEN {lock.format(links='new_links')}; ELSE "
            f"{lock.format(links='old_links')}; END IF; "
            f"IF TG_OP <> 'INSERT' THEN {removed}; END IF; "
            f"IF TG_OP <> 'DELETE' THEN {added}; END IF; "
            f"RETURN NULL; END")
    drop = (f"DROP FUNCTION IF EXISTS {function}() CASCADE",)
    create = drop + (
        # The search path of its creation: raw SQL from a session with
        # another one still finds the owner's table.
        f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql "
        f"SET search_path FROM CURRENT AS $$ {body} $$",
        f"CREATE TRIGGER {_q(names['ins'])} AFTER INSERT ON {lt} REFERENCING NEW TABLE AS "
        f"new_links FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        f"CREATE TRIGGER {_q(names['del'])} AFTER DELETE ON {lt} REFERENCING OLD TABLE AS "
        f"old_links FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        f"CREATE TRIGGER {_q(names['upd'])} AFTER UPDATE ON {lt} REFERENCING OLD TABLE AS "
        f"old_links NEW TABLE AS new_links FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        f"CREATE TRIGGER {_q(names['trunc'])} AFTER TRUNCATE ON {lt} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        _fill(t, k, lt, i, o, f"(SELECT json_agg({m} ORDER BY {m})::text FROM {lt} "
                              f"WHERE {o} = {t}.{i})"))
    return LinkKeys(table, column, link, tuple(names.values()), create, drop)


def _fill(t: str, k: str, lt: str, i: str, o: str, keys: str) -> str:
    """Fills the column from the link table: the rows with links, and those
    that hold keys they no longer have."""
    return f"UPDATE {t} SET {k} = {keys} WHERE {k} IS NOT NULL OR {i} IN (SELECT {o} FROM {lt})"


def drop_extra(database: peewee.Database, table: str, trigger: Trigger) -> tuple[str, ...]:
    """Statements removing a link keys trigger the model no longer declares
    (PostgreSQL: with its function, which goes with all its triggers)."""
    if is_sqlite(database) or trigger.function is None:
        return (f"DROP TRIGGER IF EXISTS {_q(trigger.name)}",)
    return (f"DROP TRIGGER IF EXISTS {_q(trigger.name)} ON {_q(table)}",
            f"DROP FUNCTION IF EXISTS {_q(trigger.function)}() CASCADE")
