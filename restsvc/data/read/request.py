"""What a read asks: a list's page (``Page``), a load of the loader (``Load``,
``By``), and the answer's entity budget."""
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ...errors import BadRequest

if TYPE_CHECKING:
    from .textsearch import TextSearch

RESPONSE_TOO_LARGE = "Response too large"    # the error of an answer beyond its entity budget


@dataclass(frozen=True, slots=True)
class Page:
    """What a list or a search asks beyond its entity, plan and filter: the
    sort, ``limit``/``offset`` or ``after`` (a page's cursor), whether nulls
    are written and whether the total is counted."""
    sort: str | None = None
    limit: int | None = None
    offset: int | None = None
    after: str | None = None
    return_nulls: bool = False
    return_count: bool = False
    text: str | None = None     # ``q``: a ranked full-text search (textsearch.py)
    snippet: bool = False       # with each hit's ``_snippet``


UNPAGED = Page()     # every row (up to the maximum fetch size), no count


class Budget:
    """How many entities one answer may hold (svc.rest.max-response-entities).
    Loading counts the rows it reads and asks no query for more than are
    left; the serializer counts the objects it would write before writing."""

    def __init__(self, limit: int, spare: int = 0) -> None:
        # ``spare`` rows more may be loaded to see whether a next page
        # exists; they are dropped before writing, and each holds at least
        # one entity, so what is written stays within ``limit``.
        self.limit = limit
        self.spare = spare
        self.left = limit + spare

    def take(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise self.exceeded()

    def exceeded(self) -> BadRequest:
        return BadRequest(RESPONSE_TOO_LARGE,
                          f"The answer would hold more than {self.limit} entities "
                          "(svc.rest.max-response-entities); ask for fewer rows or a "
                          "smaller fetch plan")


class Load(NamedTuple):
    """What one statement of a load asks besides the plan: ``where``, a
    filter tree; ``after``, a sort key (cursors.py): only rows after it in
    the sort; ``key_field IN keys``; ``parent_column``: selected too, as
    each child's owner (compositions); ``budget``: the answer's, counted
    (None: no bound); ``with_deleted``: soft-deleted rows too (a to-one
    reference from a live row); ``shown``: an answer's load, of only what
    its flat page shows (else what the caller may read: members of hidden
    attributes too, for transient attributes and Python code); ``search``:
    a ranked full-text search (textsearch.TextSearch), its rows first by
    relevance, with their snippets when it asks. A tuple:
    made per statement, by one C call."""
    where: Any = None
    sort: str | None = None
    limit: int | None = None
    offset: int | None = None
    key_field: Any = None
    keys: list[Any] | None = None
    parent_column: Any = None
    budget: "Budget | None" = None
    with_deleted: bool = False
    after: Any = None
    shown: bool = False
    search: "TextSearch | None" = None


class By(NamedTuple):
    """How ``_by_ids`` loads besides its keys (``Load``'s fields of the same names)."""
    parent_column: Any = None
    budget: "Budget | None" = None
    with_deleted: bool = False
    shown: bool = False


PLAIN = By()     # a load by ids of nothing but its keys
