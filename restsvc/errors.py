"""The one error family.

Domain code raises these with plain values; ``web.error_response`` turns them
into HTTP. Nothing here knows Werkzeug.
"""
from collections.abc import Callable
from typing import Any

from .jsonio import JsonObject, JsonValue


MESSAGE_PREFIX = "restsvc.message."


class Text(str):
    """A message the message bundles may give in the caller's language: the
    English text as it always was, plus its key and values. The bundle key
    ``restsvc.message.<key>`` holds the template of another language, with
    the same ``{placeholders}``; without one the English text stays."""

    key: str
    values: dict[str, Any]

    def __new__(cls, key: str, template: str, **values: Any) -> "Text":
        text = super().__new__(cls, template.format(**values) if values else template)
        text.key, text.values = key, values
        return text

    def translated(self, lookup: Callable[[str], str | None]) -> str:
        """The text in the language of ``lookup(bundle key) -> template or None``."""
        template = lookup(MESSAGE_PREFIX + self.key)
        if template is None:
            return str(self)
        try:
            return template.format(**self.values)
        except (KeyError, IndexError, ValueError, AttributeError):     # a broken bundle entry
            return str(self)


def localized_body(error: "ApiError", lookup: Callable[[str], str | None]) -> JsonValue:
    """``error.body()`` with its ``details`` (or each violation's ``message``)
    in the language of ``lookup`` where the text is a ``Text``."""
    body = error.body()
    if isinstance(body, list):
        return [{**item, "message": item["message"].translated(lookup)}
                if isinstance(item.get("message"), Text) else item for item in body]
    if isinstance(body.get("details"), Text):
        return {**body, "details": body["details"].translated(lookup)}
    return body


class ApiError(Exception):
    """An error the client is told about: ``{"error": ..., "details": ...}``."""

    status = 400

    def __init__(self, error: str, details: str = "", status: int | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.details = details
        if status is not None:
            self.status = status
        self.headers = headers or {}

    def body(self) -> JsonValue:
        return {"error": self.error, "details": self.details}


class BadRequest(ApiError):
    status = 400


class MalformedBody(BadRequest):
    """A request body that cannot be read: broken framing, or it broke off."""

    def __init__(self) -> None:
        super().__init__("Malformed request body",
                         "The request body could not be read: its framing is broken "
                         "(for example a malformed chunk size) or it broke off")


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class PreconditionFailed(ApiError):
    status = 412

    def __init__(self, entity_name: str, entity_id: object) -> None:
        super().__init__("Precondition Failed", Text(
            "entityChanged", "Entity {entity} with id {id} has changed since the "
            "ETag given in If-Match was made", entity=entity_name, id=entity_id))


MUST_NOT_BE_NULL = Text("notNull", "must not be null")


def invalid_value(type_name: str, error: object) -> Text:
    return Text("invalidValue", "Invalid {type} value: {error}", type=type_name, error=error)


def entity_name_not_found(entity_name: str) -> NotFound:
    return NotFound("Entity not found", Text("entityNameNotFound", "Entity {entity} not found",
                                             entity=entity_name))


def invalid_parameter_value(name: str) -> BadRequest:
    return BadRequest("Invalid parameter value", Text(
        "invalidParameterValue", "Invalid value of parameter {name}", name=name))


def entity_not_found(entity_name: str, entity_id: object) -> NotFound:
    return NotFound("Entity not found", Text("entityNotFound", "Entity {entity} with id {id} "
                                             "not found", entity=entity_name, id=entity_id))


class PayloadTooLarge(ApiError):
    status = 413


class UnsupportedMediaType(ApiError):
    status = 415


class ServiceUnavailable(ApiError):
    status = 503


class ValidationFailed(ApiError):
    """400 with the array form ``[{"message", "messageTemplate", "path", "invalidValue"}]``."""

    status = 400

    def __init__(self, violations: list[JsonObject]) -> None:
        super().__init__("Validation failed")
        self.violations = violations

    def body(self) -> JsonValue:
        return self.violations


class Invalid(ValidationFailed):
    """What application code raises to refuse values (a lifecycle hook, a
    service): 400 in the validation array form, one violation with
    ``message`` at ``path`` (an attribute name, "" for the whole entity)."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__([{"message": message, "messageTemplate": "{restsvc.validation.Custom}",
                           "path": path, "invalidValue": None}])


class ImportRefused(ApiError):
    """400 of an import that wrote nothing: ``details`` lists the bad rows,
    each ``{"line", "errors"}`` with errors in the validation array form."""

    status = 400

    def __init__(self, rows: list[JsonObject], truncated: bool = False) -> None:
        super().__init__("Import failed")
        self.rows = rows
        self.truncated = truncated

    def body(self) -> JsonValue:
        return {"error": self.error, "details": self.rows, "errorsTruncated": self.truncated}


class OAuthError(ApiError):
    """RFC 6749 section 5.2 error object, used by the /oauth2 endpoints."""

    def __init__(self, error: str, description: str = "", status: int = 400,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(error, description, status, headers)

    def body(self) -> JsonValue:
        body = {"error": self.error}
        if self.details:
            body["error_description"] = self.details
        return body


class Unauthorized(ApiError):
    """401 from the resource server (RFC 6750 plus the JSON body SPEC.md asks for)."""

    status = 401

    def __init__(self, realm: str, error: str, description: str) -> None:
        header = f'Bearer realm="{realm}", error="{error}", error_description="{description}"'
        super().__init__(error, description, headers={"WWW-Authenticate": header})

    def body(self) -> JsonValue:
        return {"error": self.error, "error_description": self.details}


# The database is busy (a lock not had within the busy timeout) or out of reach.
DATABASE_UNAVAILABLE = ServiceUnavailable(
    "Service unavailable", "The database is busy or cannot be reached; try again later",
    headers={"Retry-After": "2"})


class SettingsError(Exception):
    """A configuration problem found at startup; the message names the key."""
