"""Operations of the API keys (restsvc/api/apikeys.py)."""
from collections.abc import Callable

from ..jsonio import JsonObject
from .operations import AUTH
from .parts import ERROR, JSON, failures, json_body, ok, operation, query
from .schemas import STRING, array

_NULLABLE_TEXT: JsonObject = {"type": ["string", "null"]}
_INSTANT: JsonObject = {"type": ["string", "null"], "format": "date-time"}
_KEY: JsonObject = {"type": "object", "required": ["id", "name", "scope", "createdAt"],
                    "properties": {
    "id": STRING, "name": STRING,
    "username": {"type": "string", "description": "A user's key: its user"},
    "clientId": {"type": "string", "description": "A client's key: its client"},
    "scope": {**_NULLABLE_TEXT, "description": "read, write or both; null: the roles alone"},
    "createdBy": STRING, "createdAt": _INSTANT,
    "expiresAt": {**_INSTANT, "description": "null: until revoked"},
    "lastUsedAt": {**_INSTANT, "description": "Written at most once a minute"}}}
_MADE: JsonObject = {**_KEY, "required": [*_KEY["required"], "key"], "properties": {
    **_KEY["properties"],
    "key": {"type": "string", "description": "The secret, a bearer token: answered this once"}}}
_REQUEST = json_body({"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 100},
    "expiresIn": {"oneOf": [{"type": "integer", "minimum": 1}, STRING],
                  "description": "Seconds, or a duration such as 90d; none: no expiry"},
    "scope": {"type": "string", "description": "read, write or \"read write\": never more "
                                               "than the token that makes the key"},
    "username": {"type": "string", "description": "Another user's key (grant "
                                                  "rest.apiKeys.manage)"},
    "clientId": {"type": "string", "description": "A client's key (grant "
                                                  "rest.apiKeys.manage)"}}})
_OWNERS = (query("username", STRING, "Another user's keys (grant rest.apiKeys.manage)"),
           query("clientId", STRING, "A client's keys (grant rest.apiKeys.manage)"))
_ABOUT = ("One's own keys under rest.enabled; any user's or client's under the grant "
          "rest.apiKeys.manage. restsvc/docs/apikeys.md")


def _op(summary: str, answers: dict[str, JsonObject], *fails: str,
        body: JsonObject | None = None, parameters: tuple[JsonObject, ...] = ()
        ) -> Callable[[], JsonObject]:
    return lambda: operation(summary, AUTH, {**answers, **failures("Unauthorized", "Forbidden",
                                                                   *fails)},
                             parameters, body=body, description=_ABOUT)


_TOO_MANY = {"409": {"description": "The owner has as many keys as it may (100); revoke one",
                     "content": {JSON: {"schema": ERROR}}}}
_K = "/rest/api-keys/<key_id>"
API_KEY_ENDPOINTS: dict[tuple[str, str], Callable[[], JsonObject]] = {
    ("POST", "/rest/api-keys"): _op(
        "Make an API key (its secret is answered this once)",
        {**ok("The key and its secret", _MADE, "201"), **_TOO_MANY}, "BadRequest", "NotFound",
        body=_REQUEST),
    ("GET", "/rest/api-keys"): _op("API keys: one's own, or an owner's",
                                   ok("The keys, without secrets", array(_KEY)), "BadRequest",
                                   "NotFound", parameters=_OWNERS),
    ("GET", _K): _op("One API key", ok("The key, without its secret", _KEY), "NotFound"),
    ("DELETE", _K): _op("Revoke an API key", {"204": {"description": "Revoked"}}, "NotFound"),
}
