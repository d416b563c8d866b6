"""Ranked full-text search (``/search?q=``): the words of a query matched on
an entity's searchable attributes (``@entity(search=...)``), the rows
ordered by relevance, each with a highlighted snippet when asked.

Only the searchable attributes the caller may read take part
(``attribute_visible``, the one rule of what may be read): a word found
only in another neither makes a row a hit nor changes its rank, and no
snippet is cut from it. SQLite matches with an FTS5 column filter
(``{readable columns}: ...``) and ranks with ``bm25`` weighing the other
columns 0; PostgreSQL matches the index's vector of every searchable
column (which the GIN index serves) and the vector of the readable ones
(checked on the rows the index found), and ranks with ``ts_rank_cd`` over
the readable ones. Several words mean all of them. The words are taken out
of the query text (runs of letters, digits and ``_``) and each is quoted:
no text is FTS5 or tsquery syntax.

The filter, the caller's row-level roles and soft deletion apply as to any
search (query.py): the statement's WHERE holds them all (AND).
"""
import re
from typing import TYPE_CHECKING, Any, NamedTuple

import peewee

from ...db import is_sqlite
from ...errors import BadRequest, ServiceUnavailable
from ...schema import fulltext
from ..answer.rowwriters import SNIPPET
from .filters import attribute_visible

if TYPE_CHECKING:
    from ...model.metadata import MetaClass
    from ...security.roles import Permissions
    from ...schema.fulltext import FullText
    from ..access import Access

__all__ = ["SNIPPET", "Ranked", "TextSearch", "ranked", "search_parameters", "text_search"]

MAX_TEXT = 1000     # characters of a query text
MAX_WORDS = 32
_WORD = re.compile(r"\w+")
START, STOP, ELLIPSIS = "<mark>", "</mark>", "…"    # a snippet's highlight and cut marks
SNIPPET_WORDS = 16      # words of a snippet (SQLite: tokens; PostgreSQL: MaxWords)


class TextSearch(NamedTuple):
    """A parsed ``q``: the entity's index, the words, the positions of the
    index's columns the caller may read, and whether snippets are written."""
    indexed: "FullText"
    words: tuple[str, ...]
    readable: tuple[int, ...]
    snippet: bool


    @property
    def shape(self) -> tuple[str, tuple[int, ...], bool]:
        """What its statement's text depends on (not the words: parameters)."""
        return self.indexed.name, self.readable, self.snippet


class Ranked(NamedTuple):
    """What a search adds to a statement: its condition, its first ORDER BY
    term, the snippet column (None: not asked) and the join (SQLite)."""
    condition: peewee.Node
    order: peewee.Node
    snippet: peewee.Node | None
    join: tuple[Any, peewee.Node] | None


def text_search(meta: "MetaClass", permissions: "Permissions", text: str,
                snippet: bool = False) -> TextSearch:
    """A query text -> TextSearch; 400 when it holds no word, too many, or the
    caller may read none of the entity's searchable attributes (told apart
    from an entity without any no more than a hidden attribute from an
    unknown one)."""
    index = meta.search
    readable = tuple(at for at, name in enumerate(meta.searchable)
                     if attribute_visible(permissions, meta, name))
    if index is None or not readable:
        raise BadRequest("Invalid parameter value",
                         f"Entity {meta.name} has no searchable attributes")
    if len(text) > MAX_TEXT:
        raise BadRequest("Invalid parameter value",
                         f"Parameter q may have at most {MAX_TEXT} characters")
    words = tuple(_WORD.findall(text))
    if not words:
        raise BadRequest("Invalid parameter value",
                         "Parameter q must hold at least one word (letters or digits)")
    if len(words) > MAX_WORDS:
        raise BadRequest("Invalid parameter value",
                         f"Parameter q may have at most {MAX_WORDS} words")
    return TextSearch(index, words, readable, snippet)


def ranked(access: "Access", model: Any, search: TextSearch) -> Ranked:
    """The condition, relevance and snippet of ``search`` over ``model``'s rows
    (the root of a statement)."""
    if is_sqlite(access.database):
        return _sqlite(access, model, search)
    return _postgres(model, search)


def search_parameters(database: peewee.Database, search: TextSearch,
                      ) -> tuple[list[Any], list[Any], list[Any]]:
    """The parameters ``ranked``'s nodes bind, worked out without Peewee (the
    loader's kept statements, loader.statement): those in the select list
    (the snippet), in the WHERE and in the ORDER BY."""
    snippet = search.snippet
    if is_sqlite(database):
        return [START, STOP, ELLIPSIS] if snippet else [], [_match(search)], []
    words = " ".join(search.words)
    hidden = len(search.readable) < len(search.indexed.columns)
    return [f" {ELLIPSIS} ", words] if snippet else [], [words] * (1 + hidden), [words]


def _match(search: TextSearch) -> str:
    """FTS5's MATCH text: each word quoted (a phrase of its tokens), all of
    them (implicit AND), in the readable columns only when some are not."""
    index = search.indexed
    phrases = " ".join('"' + word.replace('"', '""') + '"' for word in search.words)
    if len(search.readable) < len(index.columns):
        names = " ".join('"' + index.columns[at].replace('"', '""') + '"'
                         for at in search.readable)
        phrases = f"{{{names}}}: ({phrases})"
    return phrases


def _sqlite(access: "Access", model: Any, search: TextSearch) -> Ranked:
    index = search.indexed
    if not fulltext.present(access.database, index):
        raise ServiceUnavailable("Search index missing",
                                 f"The full-text index of {index.table} is not in the database "
                                 "yet: run `restsvc migrate`")
    fts = peewee.Table(index.name, alias="fts")
    table = peewee.Column(fts, index.name)      # FTS5's hidden column named as its table
    condition = peewee.NodeList((table, peewee.SQL("MATCH"), peewee.Value(_match(search))))
    weights = [fulltext.WEIGHTS[weight] if at in search.readable else 0.0
               for at, weight in enumerate(index.weights)]
    order = peewee.fn.bm25(table, *map(peewee.SQL, map(repr, weights))).asc()
    snippet = peewee.fn.snippet(
        table, peewee.SQL(str(search.readable[0] if len(search.readable) == 1 else -1)),
        START, STOP, ELLIPSIS, peewee.SQL(str(SNIPPET_WORDS))) if search.snippet else None
    rowid = peewee.Column(model._meta.table, "rowid")
    return Ranked(condition, order, snippet, (fts, peewee.Column(fts, "rowid") == rowid))


def _postgres(model: Any, search: TextSearch) -> Ranked:
    index = search.indexed
    columns = [model._meta.columns[column] for column in index.columns]
    language = peewee.SQL(f"'{index.language}'::regconfig")
    query = peewee.fn.plainto_tsquery(language, " ".join(search.words))
    everything = fulltext.vector(index, columns, range(len(columns)))
    readable = fulltext.vector(index, columns, search.readable)
    condition: peewee.Node = peewee.NodeList((everything, peewee.SQL("@@"), query))
    if len(search.readable) < len(columns):
        condition = peewee.NodeList(
            (condition, peewee.NodeList((readable, peewee.SQL("@@"), query))), " AND ",
            parens=True)
    snippet = peewee.fn.ts_headline(
        language, peewee.fn.concat_ws(f" {ELLIPSIS} ", *[columns[at] for at in search.readable]),
        query, peewee.SQL(f"'StartSel={START}, StopSel={STOP}, MaxWords={SNIPPET_WORDS}, "
                          f"MinWords={SNIPPET_WORDS // 2}'")) if search.snippet else None
    return Ranked(condition, peewee.fn.ts_rank_cd(readable, query).desc(), snippet, None)
