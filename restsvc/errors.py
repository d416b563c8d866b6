"""The one error family.

Domain code raises these with plain values; ``web.error_response`` turns them
into HTTP. Nothing here knows Werkzeug.
"""
from typing import Any


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

    def body(self) -> Any:
        return {"error": self.error, "details": self.details}


class BadRequest(ApiError):
    status = 400


class MalformedBody(BadRequest):
    """A request body that cannot be read: broken framing, or it broke off."""

    def __init__(self):
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

    def __init__(self, entity_name, entity_id):
        super().__init__("Precondition Failed",
                         f"Entity {entity_name} with id {entity_id} has changed since the "
                         "ETag given in If-Match was made")


class PayloadTooLarge(ApiError):
    status = 413


class UnsupportedMediaType(ApiError):
    status = 415


class ServiceUnavailable(ApiError):
    status = 503


class ValidationFailed(ApiError):
    """400 with the array form ``[{"message", "messageTemplate", "path", "invalidValue"}]``."""

    status = 400

    def __init__(self, violations):
        super().__init__("Validation failed")
        self.violations = violations

    def body(self):
        return self.violations


class OAuthError(ApiError):
    """RFC 6749 section 5.2 error object, used by the /oauth2 endpoints."""

    def __init__(self, error, description="", status=400, headers=None):
        super().__init__(error, description, status, headers)

    def body(self):
        body = {"error": self.error}
        if self.details:
            body["error_description"] = self.details
        return body


class Unauthorized(ApiError):
    """401 from the resource server (RFC 6750 plus the JSON body SPEC.md asks for)."""

    status = 401

    def __init__(self, realm, error, description):
        header = f'Bearer realm="{realm}", error="{error}", error_description="{description}"'
        super().__init__(error, description, headers={"WWW-Authenticate": header})

    def body(self):
        return {"error": self.error, "error_description": self.details}


# The database is busy (a lock not had within the busy timeout) or out of reach.
DATABASE_UNAVAILABLE = ServiceUnavailable(
    "Service unavailable", "The database is busy or cannot be reached; try again later",
    headers={"Retry-After": "2"})
