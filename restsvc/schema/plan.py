"""Differences -> ordered steps, each with its exact SQL. Deterministic: the
same model and database give the same plan.

Additive steps (new tables, columns, indexes, a widened type, a declared
rename, a relaxed NOT NULL) apply without asking. Destructive ones (dropping,
narrowing, making a column required, a changed foreign key, dropping an index)
need ``--allow-destructive``. A step that cannot run on the data as it is
(``blocked``) says why. SQLite does what ``ALTER TABLE`` cannot by rebuilding
the table: new table, copy, drop, rename, indexes.

The triggers keeping link keys columns (linkkeys.py) come last, once their
tables and columns are there, each with the column's filling; a SQLite
rebuild of their owner's table removes them first (SQLite refuses to rename
a table into place while a trigger names a table that is gone) and they are
made again. Link keys triggers the model no longer declares are removed
first (destructive: an older instance may still read their column).
"""
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

import peewee

from ..db import execute, is_sqlite
from . import fulltext, linkkeys, trigram
from .compare import Difference
from .declared import (DeclaredTable, column_sql, create_table_sql, datatype_sql, foreign_key_sql,
                       internal_column_sql)
from .inspect import Index, Table, index_covers

Declared = dict[str, DeclaredTable]
Actual = dict[str, Table]


@dataclass(frozen=True)
class Step:
    description: str
    sql: tuple[str, ...]
    destructive: bool = False
    blocked: str | None = None       # why it cannot run on the rows as they are
    rebuild: bool = False     # a SQLite table rebuild

    def text(self) -> str:
        flags = " [destructive]" if self.destructive else ""
        flags += f" [blocked: {self.blocked}]" if self.blocked else ""
        return "\n".join([f"-- {self.description}{flags}"] + [f"{sql};" for sql in self.sql])


def plan(database: peewee.Database, declared: Declared, actual: Actual,
         differences: Iterable[Difference]) -> list[Step]:
    """[Step] that bring the database to the declared schema."""
    by_table: dict[str, list[Difference]] = {}
    for difference in differences:
        by_table.setdefault(difference.table, []).append(difference)
    steps = _extra_link_keys(database, declared, actual)
    new = [d.model for name, d in declared.items() if name not in actual]
    for model in peewee.sort_models(new):  # type: ignore[attr-defined]  # not in peewee-stubs
        wanted = declared[model._meta.table_name]
        steps.append(Step(f"create table {wanted.table.name}", (create_table_sql(
            database, model, internal=wanted.internal),) + _creating(
                wanted.table.indexes.values())))
    rebuilt: set[str] = set()
    for name, wanted in declared.items():
        if name in actual and by_table.get(name):
            for step in _table_steps(database, wanted, actual[name], by_table[name]):
                if step.rebuild:
                    step = _without_link_keys(step, name, declared)
                    rebuilt.add(name)
                steps.append(step)
    steps += _link_keys_steps(declared, actual, rebuilt)
    for name in sorted(set(actual) - set(declared)):
        steps.append(Step(f"drop table {name} ({_count(database, name)} rows)",
                          (f"DROP TABLE {_q(name)}",), destructive=True))
    return steps


def _units(declared: Declared) -> list[linkkeys.LinkKeys]:
    return [unit for wanted in declared.values() for unit in wanted.link_keys]


def _link_keys_steps(declared: Declared, actual: Actual, rebuilt: set[str]) -> list[Step]:
    """The link keys triggers to make (again), each with its column's filling:
    missing (a new table or column included), or removed by a rebuild."""
    steps: list[Step] = []
    for unit in _units(declared):
        owner, link = actual.get(unit.owner_table), actual.get(unit.link_table)
        if (owner is None or link is None or unit.column not in owner.columns
                or any(name not in link.triggers for name in unit.triggers)
                or {unit.owner_table, unit.link_table} & rebuilt):
            steps.append(Step(f"create the triggers keeping {unit.description}, and fill it",
                              unit.create))
    return steps


def _without_link_keys(step: Step, table: str, declared: Declared) -> Step:
    """A SQLite rebuild of ``table`` that first removes the link keys triggers
    naming it (``_link_keys_steps`` makes them again)."""
    drops = tuple(sql for unit in _units(declared) if table in (unit.owner_table,
                                                                 unit.link_table)
                  for sql in unit.drop)
    return dataclasses.replace(step, sql=drops + step.sql) if drops else step


def _extra_link_keys(database: peewee.Database, declared: Declared, actual: Actual) -> list[Step]:
    """Link keys triggers the model does not declare (on any table, one the
    model no longer has included), removed first."""
    steps: list[Step] = []
    for name, table in actual.items():
        wanted = {trigger for unit in (declared[name].link_keys if name in declared else ())
                  for trigger in unit.triggers}
        for trigger in table.triggers.values():
            if linkkeys.is_ours(trigger.name) and trigger.name not in wanted:
                steps.append(Step(f"drop trigger {trigger.name} (its column is no longer kept)",
                                  linkkeys.drop_extra(database, name, trigger), destructive=True))
    return steps


def _table_steps(database: peewee.Database, wanted: DeclaredTable, table: Table,
                 differences: list[Difference]) -> list[Step]:
    kinds = {d.kind for d in differences if d.column}
    rebuild_kinds = {"wider_type", "narrower_type", "changed_type", "nullable", "required",
                     "foreign_key", "extra_column"}
    if is_sqlite(database) and kinds & rebuild_kinds:
        return [_rebuild(database, wanted, table, differences)] + _index_steps(
            wanted, table, differences, rebuilt=True)
    steps: list[Step] = []
    name, model = wanted.table.name, wanted.model
    fields: dict[str, peewee.Field] = {field.column_name: field for field in model._meta.sorted_fields}
    for d in differences:
        column = d.column
        if column is None:
            continue        # an index's: _index_steps
        if d.kind == "renamed_column":
            old = wanted.renames[column]
            drops = tuple(sql for index in table.indexes.values()
                          if index.name not in wanted.table.indexes and index_covers(index, old)
                          for sql in _dropping(index))
            steps.append(Step(_describe(d, wanted), drops + (
                f"ALTER TABLE {_q(name)} RENAME COLUMN {_q(old)} TO {_q(column)}",)))
        elif d.kind == "missing_column" and column in wanted.internal:
            steps.append(Step(_describe(d, wanted), (
                f"ALTER TABLE {_q(name)} ADD COLUMN {internal_column_sql(column)}",)))
        elif d.kind == "missing_column":
            steps.append(Step(_describe(d, wanted), (
                f"ALTER TABLE {_q(name)} ADD COLUMN {column_sql(database, fields[column])}",),
                blocked=_needs_default(database, wanted, table, column)))
        elif d.kind in ("narrower_type", "wider_type", "changed_type"):
            want = datatype_sql(database, fields[column])
            steps.append(Step(_describe(d, wanted), (f"ALTER TABLE {_q(name)} ALTER COLUMN {_q(column)} TYPE {want} "
                 f"USING {_q(column)}::{want}",), destructive=d.kind != "narrower_type"))
        elif d.kind == "nullable":
            steps.append(Step(_describe(d, wanted), (
                f"ALTER TABLE {_q(name)} ALTER COLUMN {_q(column)} DROP NOT NULL",)))
        elif d.kind == "required":
            steps.append(Step(_describe(d, wanted), (
                f"ALTER TABLE {_q(name)} ALTER COLUMN {_q(column)} SET NOT NULL",),
                destructive=True, blocked=_nulls(database, name, column)))
        elif d.kind == "extra_column":
            steps.append(Step(f"{_describe(d, wanted)} (its values in "
                              f"{_count(database, name)} rows are lost)",
                              (f"ALTER TABLE {_q(name)} DROP COLUMN {_q(column)}",),
                              destructive=True))
        elif d.kind == "foreign_key":
            steps.append(_foreign_key_step(database, fields[column], table))
    return steps + _index_steps(wanted, table, differences)


def _foreign_key_step(database: peewee.Database, field: peewee.Field, table: Table) -> Step:
    name, have = table.name, table.foreign_keys.get(field.column_name)
    sql: tuple[str, ...] = (f"ALTER TABLE {_q(name)} DROP CONSTRAINT {_q(str(have.name))}",) \
        if have else ()
    if isinstance(field, peewee.ForeignKeyField):
        sql += (f"ALTER TABLE {_q(name)} ADD " + foreign_key_sql(database, field),)
    return Step(f"change the foreign key of {name}.{field.column_name}", sql, destructive=True)


def _index_steps(wanted: DeclaredTable, table: Table, differences: list[Difference],
                 rebuilt: bool = False) -> list[Step]:
    steps: list[Step] = []
    for d in differences:
        if not d.kind.endswith("_index"):
            continue
        index = d.detail.split()[1]
        if d.kind == "missing_index" and not rebuilt:
            steps.append(Step(f"create index {index}", wanted.table.indexes[index].creating()))
        elif d.kind == "changed_index" and not rebuilt:
            steps.append(Step(f"recreate index {index}", _dropping(table.indexes[index])
                              + wanted.table.indexes[index].creating()))
        elif d.kind == "extra_index" and not rebuilt:
            old = _renamed_column(wanted, table, index)
            if old is None and index.endswith((trigram.SUFFIX, fulltext.SUFFIX)):
                # restsvc's own derived indexes no longer declared: a substring index
                # (HistoryItem's; on SQLite, the per-column FTS tables of before issue
                # 41) or a full-text index of an older declaration
                one = trigram.index_name(table.name)
                why = ("a full-text index no longer declared" if index.endswith(fulltext.SUFFIX)
                       else f"replaced by {one}" if one in wanted.table.indexes
                       else "a substring index no longer declared")
                steps.append(Step(f"drop index {index} ({why})", _dropping(table.indexes[index])))
            elif old is None:
                steps.append(Step(f"drop index {index} (no data is lost)",
                                  _dropping(table.indexes[index]), destructive=True))
            elif old not in table.columns:
                # Left behind by a rename made before (a SQLite per-column
                # trigram index of before names the old column): a part of the rename.
                steps.append(Step(f"drop index {index} (left from the rename of "
                                  f"{wanted.table.name}.{old})", _dropping(table.indexes[index])))
            # else the rename's own step drops it first
    return steps


def _creating(indexes: Iterable[Index]) -> tuple[str, ...]:
    return tuple(sql for index in indexes for sql in index.creating())


def _dropping(index: Index) -> tuple[str, ...]:
    return index.drop or (f"DROP INDEX {_q(index.name)}",)


def _renamed_column(wanted: DeclaredTable, table: Table, index: str) -> str | None:
    """The old name of a declared rename that ``index`` covers, or None: such
    an index goes with the rename, which applies without asking."""
    return next((old for old in wanted.renames.values()
                 if index_covers(table.indexes[index], old)), None)


def _rebuild(database: peewee.Database, wanted: DeclaredTable, table: Table,
             differences: list[Difference]) -> Step:
    """SQLite's table rebuild (https://sqlite.org/lang_altertable.html#otheralter)."""
    name, model = wanted.table.name, wanted.model
    new = f"{name}__rebuild"
    targets: list[str] = []
    sources: list[str] = []
    blocked: list[str | None] = []
    for field in model._meta.sorted_fields:
        column = field.column_name
        source = column if column in table.columns else wanted.renames.get(column)
        if source is not None and source in table.columns:
            targets.append(_q(column))
            sources.append(_q(source))
        else:
            blocked.append(_needs_default(database, wanted, table, column))
    kept = [_q(column) for column in wanted.internal if column in table.columns]
    targets += kept
    sources += kept
    blocked += [_nulls(database, name, d.column) for d in differences
                if d.kind == "required" and d.column is not None]
    destructive = [d for d in differences if d.column and d.kind not in (
        "renamed_column", "missing_column", "narrower_type", "nullable")]
    what = "; ".join(_describe(d, wanted) for d in differences if d.column)
    # Dropping the table drops its triggers; a trigram index the model no
    # longer declares would leave its FTS table behind, holding the old text.
    orphaned = tuple(sql for index in table.indexes.values()
                     if index.name not in wanted.table.indexes for sql in index.drop)
    sql = orphaned + (create_table_sql(database, model, new, wanted.internal),
           f"INSERT INTO {_q(new)} ({', '.join(targets)}) SELECT {', '.join(sources)} "
           f"FROM {_q(name)}",
           f"DROP TABLE {_q(name)}",
           f"ALTER TABLE {_q(new)} RENAME TO {_q(name)}") + _creating(
               wanted.table.indexes.values())
    return Step(f"rebuild table {name} ({_count(database, name)} rows): {what}", sql,
                destructive=bool(destructive), blocked="; ".join(b for b in blocked if b) or None,
                rebuild=True)


_VERBS = {"missing_column": "add column", "narrower_type": "widen column",
          "wider_type": "narrow column", "changed_type": "change the type of column",
          "nullable": "make optional column", "required": "make required column",
          "extra_column": "drop column", "foreign_key": "change the foreign key of"}


def _describe(difference: Difference, wanted: DeclaredTable) -> str:
    where = f"{difference.table}.{difference.column}"
    if difference.kind == "renamed_column" and difference.column is not None:
        return (f"rename column {difference.table}.{wanted.renames[difference.column]} "
                f"to {difference.column}")
    if difference.kind.endswith("_type"):
        return f"{_VERBS[difference.kind]} {where} ({difference.detail})"
    return f"{_VERBS[difference.kind]} {where}"


def _needs_default(database: peewee.Database, wanted: DeclaredTable, table: Table,
                   column: str) -> str | None:
    field: peewee.Field = wanted.model._meta.columns[column]
    if field.null or wanted.table.columns[column].default is not None:
        return None
    if is_sqlite(database) or _count(database, table.name):
        return (f"{column} is required and has no constant default: give it one, or make it "
                f"optional, fill it, then required")
    return None


def _nulls(database: peewee.Database, table: str, column: str) -> str | None:
    count = _counted(database, f"SELECT COUNT(*) FROM {_q(table)} WHERE {_q(column)} IS NULL")
    return f"{count} rows of {table} hold NULL in {column}" if count else None


def _count(database: peewee.Database, table: str) -> int:
    return _counted(database, f"SELECT COUNT(*) FROM {_q(table)}")


def _counted(database: peewee.Database, sql: str) -> int:
    row = execute(database, sql).fetchone()
    assert row is not None      # COUNT(*) has one row
    count: int = row[0]
    return count


def _q(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
