"""A small application that uses every name ``restsvc`` exports: the demo plus
a note entity, its roles, a service and an endpoint.

``mypy --strict`` checks it (tests/test_lint.py) and tests/test_typed_app.py
serves it; that test also fails when a public name is not used here.
"""
import enum
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import peewee
from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from restsvc import (Access, ApiError, Application, BadRequest, Caller, Conflict, Context, DataAccess,
                     DateTimeField, Embedded, Entity, EnumField, FileRef, FileRefField, Forbidden,
                     Invalid, NotFound, Record, ResourceRole, RowLevelRole, Tenant, User, create_app,
                     embeddable,
                     entity, hash_secret, invalid_parameter, rest_method, rest_service,
                     to_entity_json, transient)
from restsvc.demo import application as demo

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication


class Priority(enum.Enum):
    LOW = "L"
    HIGH = "H"


@embeddable
class Place:
    room = peewee.CharField(max_length=50, null=True)
    floor = peewee.IntegerField(null=True)


def check_title(note: "TypedNote") -> list[tuple[str, str]]:
    return [("title", "must not be blank")] if not note.title.strip() else []


@entity(instance_name="title", validators=(check_title,), audited=True,
        fetch_plans=({"name": "note-full", "extends": "_local", "properties": ["titleLength", "place"]},))
class TypedNote(Entity):
    title = peewee.CharField(max_length=100)
    priority = EnumField(Priority, null=True)
    attachment = FileRefField(null=True)
    due = DateTimeField(null=True)
    place = Embedded(Place)
    # An audit field (audited adds it): declared so that code may name it.
    createdBy = peewee.CharField(max_length=255, null=True)

    @transient("int")
    def titleLength(self) -> int:
        return len(self.title)

    @classmethod
    def before_save(cls, values: dict[str, Any], creating: bool, entity_id: object) -> None:
        """A lifecycle hook: a title that is reserved is refused (400)."""
        if str(values.get("title", "")).strip().lower() == "reserved":
            raise Invalid("this title is reserved", "title")


NOTE_WRITER = ResourceRole(
    "typed-note-writer", "Notes: write",
    entities={"TypedNote": "*"}, attributes={"TypedNote": {"*": "modify"}},
    specifics=("rest.enabled",), scope=("API",), services=("typedNotes.*",))


def created_by_caller(row: TypedNote, session: Mapping[str, str]) -> bool:
    return row.createdBy == session["username"]


OWN_NOTES = RowLevelRole(
    "typed-own-notes", "Own notes",
    filters={"TypedNote": {"conditions": [
        {"property": "createdBy", "operator": "=", "value": ":session$username"}]}},
    writes={"TypedNote": {"delete": created_by_caller}})


def notes_since(params: Mapping[str, Any], access: Access) -> dict[str, Any]:
    """A query function: notes due since a day, for the caller."""
    if not isinstance(params.get("day"), str):
        raise invalid_parameter("day")
    return {"conditions": [{"property": "due", "operator": ">=", "value": params["day"]},
                           {"property": "createdBy", "operator": "=", "value": access.username}]}


def notes_by_priority(params: Mapping[str, Any], data: DataAccess) -> Iterator[dict[str, Any]]:
    """A report band function."""
    for priority in Priority:
        condition = {"property": "priority", "operator": "=", "value": priority.name}
        yield {"priority": priority.name, "notes": data.count(TypedNote, {"conditions": [condition]})}


ERRORS: dict[str, ApiError] = {
    "bad": BadRequest("Bad note", "The note is bad"),
    "conflict": Conflict("Note conflict", "The note conflicts"),
    "forbidden": Forbidden("Note forbidden", "The note is forbidden"),
    "missing": NotFound("Note not found", "No such note"),
}


@rest_service(name="typedNotes")
class NoteService:
    @rest_method(http_methods=("POST",))
    def create(self, title: str, caller: Caller, data: DataAccess,
               attachment: FileRef | None = None) -> TypedNote:
        with data.unit_of_work():
            note = data.save(TypedNote, {
                "title": f"{title} ({caller.username})", "priority": Priority.HIGH.name,
                "attachment": str(attachment) if attachment is not None else None,
                "place": {"room": "A1", "floor": 1}})
        return data.load(TypedNote, note.id, "note-full")

    @rest_method
    def titles(self, data: DataAccess, limit: int = 10) -> list[str]:
        return [note.title for note in data.search(TypedNote, None, sort="title", limit=limit)]

    @rest_method(name="count", http_methods="GET")
    def count_notes(self, data: DataAccess) -> int:
        return data.count("TypedNote")

    @rest_method
    def userNames(self, data: DataAccess) -> list[str]:
        records: list[Record] = data.search("User", fetch_plan="_local")
        return sorted(str(record["username"]) for record in records)

    @rest_method
    def fail(self, kind: str) -> None:
        raise ERRORS.get(kind) or invalid_parameter("kind")


def note_text(ctx: Context, note_id: str) -> Response:
    """A custom endpoint: a note as plain text, what the caller may read of it."""
    note = to_entity_json(ctx.data.load(TypedNote, note_id, "_local"), ctx.permissions)
    return Response(f"{note.get('title', '')} [{ctx.caller.username}, {ctx.locale}]\n",
                    content_type="text/plain;charset=UTF-8")


def load_data(database: peewee.Database) -> bool:
    loaded = bool(demo.load_demo_data and demo.load_demo_data(database))
    if not User.select().where(User.username == "typed").exists():
        # A user of the demo's first tenant (TypedNote is shared: it reads every note).
        first: Tenant | None = Tenant.select().order_by(Tenant.tenantId).first()
        User.insert(id=uuid.uuid4(), username="typed", password=hash_secret("typed-password"),
                    roles="rest-minimal,typed-note-writer,typed-own-notes", locale="en",
                    tenantId=first.tenantId if first is not None else None).execute()
        loaded = True
    return loaded


application = Application(
    entities=(*demo.entities, TypedNote),
    enums=(Priority,),
    resource_roles=(*demo.resource_roles, NOTE_WRITER),
    row_level_roles=(*demo.row_level_roles, OWN_NOTES),
    load_demo_data=load_data,
    services=(*demo.services, NoteService()),
    endpoints=(*demo.endpoints, Rule("/api/notes/<note_id>", methods=["GET"], endpoint=note_text)),
)


def wsgi_app() -> "WSGIApplication":
    """The WSGI application serving this module's application."""
    return create_app(application=application)
