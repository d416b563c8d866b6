"""Declared model vs live database -> the differences, each with what it means
for a running service.

``breaks``: requests would trip over it (a missing table or column, a column
too narrow, of another type, or NOT NULL where the model writes NULL); the
service refuses to start. A database *ahead* of the model by additive changes
(extra tables, extra nullable or defaulted columns, extra indexes, wider
columns) does not break an older instance during a rolling deploy. A missing
index is a warning.
"""
import re
from dataclasses import dataclass

import peewee

from ..db import is_sqlite
from .declared import DeclaredTable
from .inspect import Table
from .linkkeys import is_ours

BREAKS, WARNING, TOLERATED = "breaks", "warning", "tolerated"


@dataclass(frozen=True)
class Difference:
    table: str
    column: str | None
    kind: str           # missing_table, extra_table, missing_column, renamed_column,
                        # extra_column, wider_type, narrower_type, changed_type, nullable,
                        # required, missing_index, changed_index, extra_index, foreign_key,
                        # missing_link_keys, extra_link_keys
    detail: str
    severity: str       # BREAKS, WARNING or TOLERATED

    def __str__(self) -> str:
        where = f"{self.table}.{self.column}" if self.column else self.table
        return f"{where}: {self.detail}"


def compare(database: peewee.Database, declared: dict[str, DeclaredTable],
            actual: dict[str, Table]) -> list[Difference]:
    """[Difference] between the declared schema and the inspected one, in model order."""
    found: list[Difference] = []
    for name, wanted in declared.items():
        table = actual.get(name)
        if table is None:
            found.append(Difference(name, None, "missing_table", "table missing", BREAKS))
            continue
        found += _columns(database, wanted, table)
        found += _indexes(wanted.table, table)
        found += _foreign_keys(wanted.table, table)
        found += _link_keys(wanted, table, actual)
    for name in sorted(set(actual) - set(declared)):
        found.append(Difference(name, None, "extra_table", "table not in the model", TOLERATED))
    return found


def _columns(database: peewee.Database, wanted: DeclaredTable, table: Table) -> list[Difference]:
    found: list[Difference] = []
    name = table.name
    renamed_from: set[str] = set()
    for column, want in wanted.table.columns.items():
        have = table.columns.get(column)
        old = wanted.renames.get(column)
        if have is None and old is not None and old in table.columns:
            renamed_from.add(old)
            found.append(Difference(name, column, "renamed_column",
                                    f"to be renamed from {old}", BREAKS))
            have = table.columns[old]
        elif have is None:
            found.append(Difference(name, column, "missing_column", "column missing", BREAKS))
            continue
        relation = type_relation(have.type, want.type)
        if relation != "same":
            # SQLite stores any value in any column: only PostgreSQL trips over a type.
            severity = {"narrower": TOLERATED, "changed": BREAKS}.get(
                relation, WARNING if is_sqlite(database) else BREAKS)
            kind = {"narrower": "wider_type", "wider": "narrower_type"}.get(relation,
                                                                           "changed_type")
            found.append(Difference(name, column, kind,
                                    f"type {have.type} in the database, {want.type} in the model",
                                    severity))
        if want.null and not have.null:
            found.append(Difference(name, column, "nullable",
                                    "NOT NULL in the database, optional in the model", BREAKS))
        elif have.null and not want.null:
            found.append(Difference(name, column, "required",
                                    "optional in the database, required in the model", TOLERATED))
    for column, have in table.columns.items():
        if column in wanted.table.columns or column in renamed_from:
            continue
        severity = TOLERATED if have.null or have.default is not None else BREAKS
        detail = "column not in the model" + (
            "" if severity == TOLERATED else " (NOT NULL without a default: inserts fail)")
        found.append(Difference(name, column, "extra_column", detail, severity))
    return found


def _indexes(wanted: Table, table: Table) -> list[Difference]:
    found: list[Difference] = []
    for index, want in wanted.indexes.items():
        have = table.indexes.get(index)
        if have is None:
            found.append(Difference(wanted.name, None, "missing_index",
                                    f"index {index} missing", WARNING))
        elif have.unique != want.unique:
            found.append(Difference(wanted.name, None, "changed_index",
                                    f"index {index} is {'' if have.unique else 'not '}unique "
                                    f"in the database", WARNING))
        elif want.covers and have.covers != want.covers:    # a SQLite trigram index's FTS table
            found.append(Difference(wanted.name, None, "changed_index",
                                    f"index {index} covers {', '.join(have.covers) or 'nothing'} "
                                    f"in the database, {', '.join(want.covers)} in the model",
                                    WARNING))
    for index in sorted(set(table.indexes) - set(wanted.indexes)):
        found.append(Difference(wanted.name, None, "extra_index",
                                f"index {index} not in the model", TOLERATED))
    return found


def _link_keys(wanted: DeclaredTable, table: Table, actual: dict[str, Table]) -> list[Difference]:
    """The triggers keeping link keys columns (linkkeys.py), on a link table:
    missing ones break reads (the column would go stale); extra ones are an
    older model's, which an older instance may still rely on."""
    found: list[Difference] = []
    declared: set[str] = set()
    for unit in wanted.link_keys:
        declared.update(unit.triggers)
        owner = actual.get(unit.owner_table)
        if owner is None or unit.column not in owner.columns:
            continue        # the column's own difference says so; migrate fills it
        if any(name not in table.triggers for name in unit.triggers):
            found.append(Difference(table.name, None, "missing_link_keys",
                                    f"triggers keeping {unit.description} missing", BREAKS))
    for name in sorted(table.triggers):
        if is_ours(name) and name not in declared:
            found.append(Difference(table.name, None, "extra_link_keys",
                                    f"trigger {name} not in the model", TOLERATED))
    return found


def _foreign_keys(wanted: Table, table: Table) -> list[Difference]:
    found: list[Difference] = []
    for column, want in wanted.foreign_keys.items():
        have = table.foreign_keys.get(column)
        if column in table.columns and (have is None or (have.table, have.to_column) != (
                want.table, want.to_column)):
            target = f"{have.table}.{have.to_column}" if have else "none"
            found.append(Difference(wanted.name, column, "foreign_key",
                                    f"references {target} in the database, "
                                    f"{want.table}.{want.to_column} in the model", TOLERATED))
    for column in sorted(set(table.foreign_keys) - set(wanted.foreign_keys)):
        if column in wanted.columns:
            have = table.foreign_keys[column]
            found.append(Difference(wanted.name, column, "foreign_key",
                                    f"references {have.table}.{have.to_column} in the database, "
                                    f"nothing in the model", TOLERATED))
    return found


_RANKS = {"smallint": 1, "integer": 2, "bigint": 3, "real": 1, "double precision": 2,
          "float": 2}
_FAMILY = {"smallint": "int", "integer": "int", "bigint": "int", "real": "float",
           "double precision": "float", "float": "float"}
_SIZED = re.compile(r"(varchar|char|numeric)(?:\((\d+)(?:,(\d+))?\))?\Z")


def type_relation(have: str, want: str) -> str:
    """``same``, ``wider`` (the model's type holds more: a widening migration),
    ``narrower`` (the database's holds more) or ``changed``."""
    if have == want:
        return "same"
    if have in _FAMILY and _FAMILY[have] == _FAMILY.get(want):
        return "wider" if _RANKS[want] > _RANKS[have] else "narrower"
    if want == "text" and have.startswith(("varchar", "char")):
        return "wider"
    if have == "text" and want.startswith(("varchar", "char")):
        return "narrower"
    a, b = _SIZED.match(have), _SIZED.match(want)
    if not (a and b) or (a.group(1) == "numeric") != (b.group(1) == "numeric"):
        return "changed"
    if a.group(1) != "numeric":
        if a.group(2) is None or b.group(2) is None:
            return "wider" if a.group(2) else "narrower"
        return "wider" if int(b.group(2)) > int(a.group(2)) else "narrower"
    if a.group(2) is None or b.group(2) is None:
        return "wider" if a.group(2) else "narrower"
    (p1, s1), (p2, s2) = [(int(m.group(2)), int(m.group(3) or 0)) for m in (a, b)]
    return "wider" if s2 >= s1 and p2 - s2 >= p1 - s1 else "narrower"
