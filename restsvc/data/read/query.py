"""SQL for one entity: joins along dotted paths, filters, sort, row-level conditions.

Joins to referenced entities are LEFT OUTER and their ON clause admits only
the referenced rows the caller's row-level roles let it see (a subquery), so
a hidden row behaves like a missing one in filters and sort keys: nothing
about it leaks through ordering or matching. A condition whose path crosses a
collection (``lines.product.name``, ``tags.name``) means "at least one member
the caller can see matches": ``EXISTS (...)``, never a join, so rows are not
repeated and counts and pages stay right.
"""
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import peewee

from ...db import is_sqlite, lower
from ...errors import BadRequest
from ...schema import trigram
from ..tenancy import scoped, tenant_condition
from .filters import Condition, Group, Node, attribute_visible, compares_values, parse_filter

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty
    from ..access import Access

Expression = peewee.Node       # a condition, a column or a subquery of Peewee's
Path = tuple["MetaProperty", ...]

# LIKE patterns escape their wildcards with "!", so % and _ in values are literal.
_LIKE_ESCAPE = peewee.SQL("ESCAPE '!'")
MAX_SORT_TERMS = 32


def like_literal(text: str) -> str:
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


class EntityQuery:
    """Builds the joins, WHERE and ORDER BY of one query rooted at ``meta``."""

    def __init__(self, meta: "MetaClass", access: "Access", resolving: tuple[str, ...] = (),
                 alias_prefix: str = "j", with_deleted: bool = False) -> None:
        self.meta = meta
        # Soft-deleted rows of the root too: the caller asked (and may), or a
        # reference from a live row is loaded (it stays readable by id).
        self.with_deleted = with_deleted or access.include_deleted
        self.model = meta.model
        self.access = access            # data.access.Access: permissions + session + database
        self._aliases: dict[tuple[str, ...], Any] = {}      # join key -> aliased model
        self._joins: list[tuple[Any, Expression]] = []      # (alias, on) in join order
        # Entities whose visibility is being worked out around this query: a
        # composition cycle (a tree of one entity) stops there.
        self._resolving = resolving + (meta.name,)
        # Joins inside an EXISTS get names of their own: its condition may
        # refer to the enclosing query's joins.
        self._alias_prefix = alias_prefix

    # -- paths and joins -------------------------------------------------
    def column(self, path: Path) -> peewee.ColumnBase:
        source: Any = self.model
        key: tuple[str, ...] = ()
        for prop in path[:-1]:
            key = key + (prop.name,)
            if prop.is_embedded:        # its columns are the owner's
                continue
            alias = self._aliases.get(key)
            if alias is None:
                alias = self._join(source, prop, key)
            source = alias
        found: peewee.ColumnBase = getattr(source, path[-1].field.name)
        return found

    def _join(self, source: Any, prop: "MetaProperty", key: tuple[str, ...]) -> Any:
        target = prop.related
        alias = target.model.alias(f"{self._alias_prefix}{len(self._joins)}")
        self._aliases[key] = alias
        on = getattr(source, prop.field.name) == alias.id
        if not self.access.permissions.row_restricted(target.name) and scoped(self.access, target):
            # Only the tenant (and soft delete) limit the row: its own columns, on the
            # joined row itself (a subquery of every id of the tenant costs a scan of them).
            on = on & (alias.tenantId == self.access.tenant)
            if target.soft_delete:
                on = on & alias.deletedDate.is_null()
        else:
            visible = self.visible_ids(target)
            if visible is not None:
                on = on & alias.id.in_(visible)
        self._joins.append((alias, on))
        return alias

    def visible_ids(self, meta: "MetaClass") -> peewee.Select | None:
        """A subquery of the ids of ``meta`` the caller's row-level roles let it
        see, or None when they do not restrict ``meta``."""
        if not self.access.permissions.row_restricted(meta.name) and not scoped(self.access, meta):
            return None
        inner = EntityQuery(meta, self.access, self._resolving)
        condition = inner.row_condition(meta)
        ids: peewee.Select = inner.apply_joins(meta.model.select(meta.model.id)).where(condition)
        return ids

    def apply_joins(self, select: Any, root: Any = None) -> Any:
        for alias, on in self._joins:
            select = select.join_from(root or self.model, alias, peewee.JOIN.LEFT_OUTER, on=on)
        return select

    # -- conditions ------------------------------------------------------
    def compile(self, node: Node) -> Expression | None:
        """A parsed filter tree -> Peewee expression, or None for "everything"."""
        if isinstance(node, Group):
            return _all((self.compile(item) for item in node.items), node.is_or)
        return self._condition(node)

    def _condition(self, condition: Condition) -> Expression:
        crossing = next((index for index, prop in enumerate(condition.path)
                         if prop.is_collection), None)
        if crossing is not None:
            return self._some_member(condition, crossing)
        column = self.column(condition.path)
        op, value = condition.operator, condition.value
        if op == "isNull":
            return column.is_null(value)
        if op == "notEmpty":
            return column.is_null(not value)
        if op == "in":
            return column.in_(list(value))
        if op == "notIn":
            return column.not_in(list(value))
        if op in ("contains", "doesNotContain", "startsWith", "endsWith"):
            return self._text_match(column, op, value, condition.path[-1].field)
        compared: Expression = {"=": column.__eq__, "<>": column.__ne__, ">": column.__gt__,
                                ">=": column.__ge__, "<": column.__lt__, "<=": column.__le__}[op](value)
        return compared

    def _some_member(self, condition: Condition, crossing: int) -> Expression:
        """EXISTS (a member of the collection at ``crossing`` that the
        caller's row-level roles let it see and that meets the rest of the
        condition); further collections on the way nest the same way."""
        path = condition.path
        prop = path[crossing]
        target = prop.related
        owner_id = self.column(path[:crossing] + (prop.owner.properties["id"],))
        inner = EntityQuery(target, self.access, self._resolving, self._alias_prefix + "x")
        matches = inner.compile(Condition(path[crossing + 1:], condition.operator,
                                          condition.value))
        visible = inner.row_condition(target)
        members = target.model.select(peewee.SQL("1"))
        if prop.link is not None:
            link = prop.link
            members = members.join_from(target.model, link.through,
                                        on=(link.member_field == target.model.id))
            owned = link.owner_field == owner_id
        else:
            owned = prop.back_field == owner_id
        members = inner.apply_joins(members).where(_all((owned, visible, matches)))
        exists: Expression = peewee.fn.EXISTS(members)
        return exists

    def _text_match(self, column: Any, op: str, value: str, field: peewee.Field) -> Expression:
        """The case-insensitive text operators, on the same lower-cased expression
        as the search index (``db.lower``). A ``startsWith`` must stay a prefix
        search the index serves: SQLite applies its LIKE optimization to plain
        columns only, so there it is a range; PostgreSQL derives the range
        from ``LIKE 'prefix%'`` itself (text_pattern_ops index). A ``contains``
        or ``endsWith`` uses the trigram index: PostgreSQL's serves the LIKE
        itself, SQLite's FTS5 table (its column's FTS column) narrows the rows
        the LIKE then checks (``schema/trigram.py``)."""
        database = self.access.database
        lowered = lower(database, column)
        if op == "startsWith" and is_sqlite(database):
            low, high = prefix_bounds(value.lower())
            condition: Expression = lowered >= low
            return condition if high is None else condition & (lowered < high)
        like = peewee.NodeList((lowered, peewee.SQL("LIKE"),
                                lower(database, like_pattern(op, value)), _LIKE_ESCAPE))
        if op == "doesNotContain":
            negated: Expression = ~like
            return negated
        match = trigram.match(database, op, field, value)
        if match is None:
            return like
        fts = peewee.Table(match.table)
        rowid = peewee.Column(column.source if isinstance(column, peewee.FieldAlias)
                              else column.model._meta.table, "rowid")
        narrowed = rowid.in_(fts.select(peewee.SQL("rowid")).where(
            peewee.NodeList((peewee.Entity(match.table), peewee.SQL("MATCH"), match.query))))
        return peewee.NodeList((like, narrowed), " AND ", parens=True)     # _all of the two

    def row_condition(self, meta: "MetaClass") -> Expression | None:
        """The caller's row-level conditions for this query's root entity: its
        tenant's rows only (data/tenancy.py), its own filters, and for a
        composition child, that its owner is visible."""
        session = self.access.session
        permissions = self.access.permissions
        own = (self.compile(parse_filter(meta, spec, None, session))
               for spec in permissions.row_filters(meta.name))
        owners = (back_field.in_(self.visible_ids(owner))
                  for owner, back_field in permissions.row_owners(meta.name)
                  if owner.name not in self._resolving)
        rule = getattr(meta.model, "row_rule", None)      # e.g. HistoryItem
        live = meta.model._meta.fields["deletedDate"].is_null() if meta.soft_delete and not (
            self.with_deleted and meta is self.meta) else None
        return _all([tenant_condition(self.access, meta)] + list(own) + list(owners)
                    + ([rule(self)] if rule is not None else []) + [live])

    def where(self, filter_tree: Node | None = None) -> Expression | None:
        return _all((self.row_condition(self.meta),
                     self.compile(filter_tree) if filter_tree is not None else None))

    # -- sort --------------------------------------------------------------
    def sort_terms(self, sort: str | None) -> list[tuple[Any, bool]]:
        """``name,-date,+customer.name`` -> (column, descending) pairs of ORDER
        BY, the id last to break ties (may add joins). Unknown, hidden and
        to-many properties are skipped (reference 2.3), and so are JSON
        values (``filters.compares_values``)."""
        terms: list[tuple[Any, bool]] = []
        for item in (sort or "").split(","):
            item = item.strip()
            if not item:
                continue
            descending = item.startswith("-")
            path = self._sort_path(item.lstrip("+-"))
            if path is None:
                continue
            for expanded in self._expand(path, set()):
                terms.append((self.column(expanded), descending))
        terms.append((self.model.id, False))
        return terms

    def _sort_path(self, dotted: str) -> Path | None:
        meta: MetaClass | None = self.meta
        chain: list[MetaProperty] = []
        owner: tuple[str, str] | None = None
        permissions = self.access.permissions
        names = dotted.split(".")
        for position, name in enumerate(names):
            prop = meta.property(name) if meta else None
            if (meta is None or prop is None or not prop.persistent or prop.is_collection
                    or (prop.is_embedded and position == len(names) - 1)
                    or not attribute_visible(permissions, meta, name, owner)
                    or (position == len(names) - 1 and not compares_values(prop))):
                return None
            chain.append(prop)
            owner = (meta.name, name) if prop.is_embedded else None
            meta = prop.target
        return tuple(chain)

    def _expand(self, path: Path, seen: set["MetaClass"]) -> list[Path]:
        """A to-one reference sorts by its target's instance-name attributes."""
        prop = path[-1]
        if not prop.is_reference:
            return [path]
        target = prop.related
        permissions = self.access.permissions
        names = [n for n in target.instance_name if attribute_visible(permissions, target, n)]
        if not names or target in seen:
            return [path]
        expanded: list[Path] = []
        for name in names:
            sub = target.properties[name]
            if sub.is_collection or not sub.persistent:
                continue
            expanded.extend(self._expand(path + (sub,), seen | {target}))
        return expanded or [path]


def prefix_bounds(prefix: str) -> tuple[str, str | None]:
    """(low, high): a text starts with ``prefix`` exactly when ``low <= text < high``.
    Text compares by code point (SQLite: UTF-8 bytes), so ``high`` is the prefix
    with its last character one higher (None when it is all U+10FFFF)."""
    stem = prefix.rstrip("\U0010ffff")
    if not stem:
        return prefix, None
    code = ord(stem[-1]) + 1
    code = 0xE000 if 0xD800 <= code <= 0xDFFF else code      # no surrogates in UTF-8
    return prefix, stem[:-1] + chr(code)


_LIKE_PATTERNS = {"contains": "%{}%", "doesNotContain": "%{}%", "startsWith": "{}%",
                  "endsWith": "%{}"}


def like_pattern(op: str, value: str) -> str:
    return _LIKE_PATTERNS[op].format(like_literal(value))


def filter_shape(database: peewee.Database, node: Node) -> tuple[Any, list[Any]]:
    """(shape, parameters) of a parsed filter tree: trees of one shape compile to
    the same SQL text, which then takes these parameters in this order (what
    ``EntityQuery.compile`` binds; the loader checks that once per shape)."""
    if isinstance(node, Group):
        parts = [filter_shape(database, item) for item in node.items]
        return ((node.is_or, tuple(shape for shape, _ in parts)),
                [param for _, params in parts for param in params])
    op, value, field = node.operator, node.value, node.path[-1].field
    params: list[Any]
    if op in ("isNull", "notEmpty"):
        params = []
    elif op in ("in", "notIn"):
        params = [field.db_value(item) for item in value]
    elif op == "startsWith" and is_sqlite(database):
        params = [bound for bound in prefix_bounds(value.lower()) if bound is not None]
    elif op in _LIKE_PATTERNS:
        params = [like_pattern(op, value)]
        match = trigram.match(database, op, field, value)
        if match is not None:
            params.append(match.query)
    else:
        params = [field.db_value(value)]
    names = tuple(prop.name for prop in node.path)
    return (names, op, len(params), value if op in ("isNull", "notEmpty") else None), params


def _all(parts: Iterable[Expression | None], any_of: bool = False) -> Expression | None:
    """AND (or OR) of the expressions that are not None; None when there are none.
    One flat list in parentheses, not Peewee's ``a & b`` (a left-nested binary
    tree, which nests the SQL one level per condition: SQLite's parser
    overflows at 84 of them, Peewee's recursive SQL builder near 480), so the
    SQL nests only as deep as the filter's groups."""
    present = [part for part in parts if part is not None]
    if len(present) < 2:
        return present[0] if present else None
    return peewee.NodeList(present, " OR " if any_of else " AND ", parens=True)


def check_sort(sort: str | None) -> None:
    """At most MAX_SORT_TERMS terms (empty ones do not count), checked before
    the sort is parsed: each becomes an ORDER BY term or more (SQLite refuses
    more than 2,000)."""
    if sort and sort.count(",") >= MAX_SORT_TERMS and sum(
            1 for term in sort.split(",") if term.strip()) > MAX_SORT_TERMS:
        raise BadRequest("Invalid parameter value",
                         f"Parameter sort may have at most {MAX_SORT_TERMS} terms")


def check_limit(limit: int | None, maximum: int) -> None:
    if limit is not None and limit > maximum:
        raise BadRequest("The value of limit exceeded",
                         "The value of the limit exceeds the maximum possible value from "
                         "application.properties")
