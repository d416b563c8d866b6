"""A token's scopes narrow every grant, from one table (security/scopes.py):
a ``read`` token changes nothing anywhere, a ``write`` token reads nothing.
Every route of the table is classified here, so a new one cannot be forgotten."""
import re

import pytest
from werkzeug.exceptions import HTTPException
from werkzeug.test import Client

from conftest import basic, bearer, demo_id
from restsvc.security.roles import ResourceRole

CUSTOMER = demo_id("customer", 3)
ORDER = demo_id("order", 1)
PREFIX = "svc.authserver.client.job."
JOB = {"Authorization": basic("job", "job-secret")}
HOOK = {"url": "http://127.0.0.1:9/hook", "entities": ["Customer"], "kinds": ["UPDATE"],
        "secret": "a-webhook-secret-of-some-length"}
MISSING = "00000000-0000-0000-0000-000000000000"
ANY = "%7B%22conditions%22%3A%5B%5D%7D"      # {"conditions":[]}

# endpoint -> what it does (read, write, both, or neither) and a request for it.
# "neither": open to a token of any scope (sign-in, metadata, the caller's own session).
ROUTES = {
    "oauth.token": ("neither", None), "oauth.revoke": ("neither", None),
    "oauth.introspect": ("neither", None), "signin.authorize": ("neither", None),
    "signin.sign_in": ("neither", None), "signin.stylesheet": ("neither", None),
    "signin.server_metadata": ("neither", None),
    "entities.list_entities": ("read", ("GET", "/rest/entities/Customer")),
    "entities.create": ("write", ("POST", "/rest/entities/Customer", {"name": "N"})),
    "entities.bulk_update": ("write", ("PUT", "/rest/entities/Customer",
                                       [{"id": CUSTOMER, "name": "N"}])),
    "entities.bulk_delete": ("write", ("DELETE", "/rest/entities/Customer", [CUSTOMER])),
    "entities.search_get": ("read", ("GET", f"/rest/entities/Customer/search?filter={ANY}")),
    "entities.search_post": ("read", ("POST", "/rest/entities/Customer/search",
                                      {"filter": {"conditions": []}})),
    "entities.count_get": ("read", ("GET", f"/rest/entities/Customer/search/count?filter={ANY}")),
    "entities.count_post": ("read", ("POST", "/rest/entities/Customer/search/count",
                                     {"filter": {"conditions": []}})),
    "entities.aggregate_get": ("read", ("GET", "/rest/entities/Customer/aggregate?count=true")),
    "entities.aggregate_post": ("read", ("POST", "/rest/entities/Customer/aggregate",
                                         {"count": True})),
    "entities.load_entity": ("read", ("GET", f"/rest/entities/Customer/{CUSTOMER}")),
    "entities.update": ("write", ("PUT", f"/rest/entities/Customer/{CUSTOMER}", {"name": "N"})),
    "entities.delete": ("write", ("DELETE", f"/rest/entities/Customer/{CUSTOMER}")),
    "entities.entity_history": ("read", ("GET", f"/rest/entities/Customer/{CUSTOMER}/history")),
    "entities.restore": ("write", ("POST", f"/rest/entities/Customer/{CUSTOMER}/restore")),
    "entities.purge": ("write", ("POST", f"/rest/entities/Customer/{CUSTOMER}/purge")),
    # Choosing rows by a filter reads them (the answer counts them): both scopes.
    "changes.update_by_search": ("both", ("PUT", "/rest/entities/Customer/search?dryRun=true",
                                          {"filter": {"conditions": []}, "values": {"name": "N"}})),
    "changes.delete_by_search": ("both", ("DELETE", "/rest/entities/Customer/search?dryRun=true",
                                          {"filter": {"conditions": []}})),
    # A batch needs what each of its operations needs (here a create: write).
    "batch.run_batch": ("write", ("POST", "/rest/batch", {"operations": [
        {"method": "POST", "path": "/rest/entities/Customer", "body": {"name": "N"}}]})),
    "imports.import_entities": ("write", ("POST", "/rest/entities/Customer/import",
                                          b"name\nImported\n")),
    "queries.list_queries": ("neither", None),
    "queries.run_query": ("read", ("GET", "/rest/queries/Customer/customersByName?name=a")),
    "queries.count_query": ("read", ("GET", "/rest/queries/Customer/customersByName/count"
                                            "?name=a")),
    "services.list_services": ("neither", None), "services.get_service": ("neither", None),
    "services.invoke": ("write", ("POST", "/rest/services/orderService/calculateTotal",
                                  {"orderId": ORDER})),
    "services.other_method": ("neither", None),
    "files.upload": ("write", ("POST", "/rest/files?name=a.txt", b"hello")),
    "files.download": ("read", ("GET", "/rest/files?fileRef=fs%3A%2F%2F2024%2F01%2F01%2F"
                                        "0a1b2c3d-0000-4000-8000-000000000000.txt%3Fname%3Dx.txt")),
    "metadata.list_entities": ("neither", None), "metadata.get_entity": ("neither", None),
    "metadata.list_fetch_plans": ("neither", None), "metadata.get_fetch_plan": ("neither", None),
    "metadata.list_enums": ("neither", None), "metadata.get_enum": ("neither", None),
    "metadata.list_datatypes": ("neither", None), "metadata.capabilities": ("neither", None),
    "metadata.version": ("neither", None),
    "messages.entity_messages": ("neither", None), "messages.one_entity_messages": ("neither", None),
    "messages.enum_messages": ("neither", None), "messages.one_enum_messages": ("neither", None),
    "session.user_info": ("neither", None), "session.permissions": ("neither", None),
    "session.user_session": ("neither", None), "session.set_locale": ("neither", None),
    "reports.list_reports": ("read", ("GET", "/rest/reports/report")),
    "reports.get_report": ("read", ("GET", "/rest/reports/report/customers")),
    "reports.get_group": ("read", ("GET", "/rest/reports/group/sales")),
    "reports.run_report": ("read", ("POST", "/rest/reports/run/customers", {})),
    "reports.openapi": ("read", ("GET", "/rest/reports/docs/openapi.json")),
    "events.stream": ("read", ("GET", "/rest/events")),
    "events.ticket": ("read", ("POST", "/rest/events/tickets")),
    "events.ticket_stream": ("neither", None),      # its ticket is a read token's (ticket above)
    "webhooks.register": ("both", ("POST", "/rest/webhooks", HOOK)),
    "webhooks.list_all": ("read", ("GET", "/rest/webhooks")),
    "webhooks.read_one": ("read", ("GET", f"/rest/webhooks/{MISSING}")),
    "webhooks.delete": ("write", ("DELETE", f"/rest/webhooks/{MISSING}")),
    "webhooks.dead_letters": ("read", ("GET", f"/rest/webhooks/{MISSING}/dead-letters")),
    "webhooks.replay": ("write", ("POST", f"/rest/webhooks/{MISSING}/dead-letters/replay")),
    # The job client's keys, under the grant rest.apiKeys.manage (system-full-access).
    "apikeys.create": ("write", ("POST", "/rest/api-keys", {"name": "k", "clientId": "job"})),
    "apikeys.list_keys": ("read", ("GET", "/rest/api-keys")),
    "apikeys.read_key": ("read", ("GET", f"/rest/api-keys/{MISSING}")),
    "apikeys.revoke": ("write", ("DELETE", f"/rest/api-keys/{MISSING}")),
    "docs.page": ("neither", None), "docs.asset": ("neither", None),
    "docs.generic_json": ("neither", None), "docs.generic_yaml": ("neither", None),
    "docs.detailed_json": ("neither", None), "docs.detailed_yaml": ("neither", None),
    "health.live": ("neither", None), "health.ready": ("neither", None),
    "metrics.scrape": ("read", ("GET", "/metrics")),
    "restsvc.demo.endpoints.customer_card": ("read", ("GET", f"/api/customers/{CUSTOMER}/card")),
}


@pytest.fixture
def scoped(make_app):
    """A client whose tokens hold every role (metrics-reader too) and the
    scopes asked for; ``token(scope)`` issues one."""
    client = Client(make_app({PREFIX + "client-id": "job", PREFIX + "client-secret": "job-secret",
                              PREFIX + "resource-roles":
                                  "rest-minimal, system-full-access, metrics-reader",
                              PREFIX + "scopes": "read, write",
                              "svc.webhooks.allow-private-addresses": True}))

    def token(scope):
        answer = client.post("/oauth2/token", data={"grant_type": "client_credentials",
                                                    "scope": scope}, headers=JOB)
        assert answer.status_code == 200, answer.json
        return bearer(answer.json["access_token"])
    return client, token


def _send(client, headers, request):
    method, url, *body = request
    if not body:
        return client.open(url, method=method, headers=headers)
    if isinstance(body[0], bytes):
        return client.open(url, method=method, headers=headers, data=body[0])
    return client.open(url, method=method, headers=headers, json=body[0])


def test_every_route_says_whether_it_reads_or_writes(app):
    # As `restsvc routes` names them.
    endpoints = {f"{rule.endpoint.__module__.removeprefix('restsvc.api.')}."
                 f"{rule.endpoint.__name__}" for rule in app.url_map.iter_rules()}
    assert endpoints == set(ROUTES), (sorted(endpoints - set(ROUTES)),
                                      sorted(set(ROUTES) - endpoints))


# (scope, endpoint): a read token on what writes, a write token on what reads.
REFUSED = [("read", e) for e, (kind, _) in sorted(ROUTES.items()) if kind in ("write", "both")] \
    + [("write", e) for e, (kind, _) in sorted(ROUTES.items()) if kind in ("read", "both")]


@pytest.mark.parametrize(("scope", "endpoint"), REFUSED)
def test_a_read_token_changes_nothing_and_a_write_token_reads_nothing(scoped, scope, endpoint):
    client, token = scoped
    answer = _send(client, token(scope), ROUTES[endpoint][1])
    assert answer.status_code == 403, (answer.status_code, answer.get_data(as_text=True))
    _allowed_with_both_scopes(client, token, endpoint)


def _allowed_with_both_scopes(client, token, endpoint):
    """The same request passes the permission checks with both scopes (so the
    403 above is the scope's; a missing row or file may still answer 404)."""
    answer = _send(client, token("read write"), ROUTES[endpoint][1])
    assert answer.status_code < 300 or answer.status_code in (404, 409), \
        (answer.status_code, answer.get_data(as_text=True))


def test_a_read_token_may_list_subscriptions_but_not_register_or_delete_them(scoped):
    client, token = scoped
    full, read, write = token("read write"), token("read"), token("write")
    created = client.post("/rest/webhooks", headers=full, json=HOOK)
    assert created.status_code == 201, created.json
    hook = created.json["id"]
    assert client.get("/rest/webhooks", headers=read).json[0]["id"] == hook
    assert client.get(f"/rest/webhooks/{hook}/dead-letters", headers=read).status_code == 200
    assert client.post("/rest/webhooks", headers=write, json=HOOK).status_code == 403
    assert client.delete(f"/rest/webhooks/{hook}", headers=read).status_code == 403
    assert client.post(f"/rest/webhooks/{hook}/dead-letters/replay",
                       headers=read).status_code == 403
    assert client.post(f"/rest/webhooks/{hook}/dead-letters/replay",
                       headers=write).status_code == 200
    assert client.delete(f"/rest/webhooks/{hook}", headers=write).status_code == 204


def _permissions(client, headers):
    answer = client.get("/rest/permissions", headers=headers).json
    return ({item["target"]: item["value"] for item in answer["entities"]},
            {item["target"]: item["value"] for item in answer["entityAttributes"]},
            {item["target"]: item["value"] for item in answer["specifics"]})


def test_permissions_of_a_read_token_show_no_writes(scoped):
    client, token = scoped
    entities, attributes, specifics = _permissions(client, token("read"))
    assert entities["Customer:read"] == 1
    assert not [t for t, v in entities.items() if v and not t.endswith(":read")]
    assert attributes["Customer:name"] == 1 and max(attributes.values()) == 1
    assert specifics["rest.fileDownload.enabled"] == 1 and specifics["rest.deleted.read"] == 1
    for write in ("rest.fileUpload.enabled", "rest.deleted.restore", "rest.deleted.purge"):
        assert specifics[write] == 0


def test_permissions_of_a_write_token_show_no_reads(scoped):
    client, token = scoped
    entities, attributes, specifics = _permissions(client, token("write"))
    assert entities["Customer:create"] == 1 and entities["Customer:read"] == 0
    assert set(attributes.values()) <= {0, 2} and attributes["Customer:name"] == 2
    assert specifics["rest.fileUpload.enabled"] == 1 and specifics["rest.deleted.restore"] == 1
    for read in ("rest.fileDownload.enabled", "rest.deleted.read", "reports.rest.enabled"):
        assert specifics[read] == 0


def _documented(app, client, headers):
    """The endpoints (as ROUTES names them) of the caller's detailed document."""
    urls = app.url_map.bind("localhost")
    document = client.get("/rest/docs/openapiDetailed.json", headers=headers).json
    found = set()
    for path, operations in document["paths"].items():
        for method in (m for m in operations if m in ("get", "post", "put", "delete", "patch")):
            concrete = re.sub(r"\{(\w+)\}", r"\1", path).replace("openapi.extension",
                                                                     "openapi.json")
            try:
                handler, _ = urls.match(concrete, method=method.upper())
            except HTTPException as exc:
                raise AssertionError(f"{method} {path}: {exc}") from None
            found.add(f"{handler.__module__.removeprefix('restsvc.api.')}.{handler.__name__}")
    return found


@pytest.mark.parametrize(("scope", "left_out"), [("read", ("write", "both")),
                                                 ("write", ("read", "both"))])
def test_the_detailed_document_shows_only_what_the_token_scope_keeps(scoped, scope, left_out):
    client, token = scoped
    app = client.application
    full = _documented(app, client, token("read write"))
    shown = _documented(app, client, token(scope))
    assert {"webhooks.register", "files.upload", "files.download", "entities.create",
            "reports.run_report", "events.stream"} <= full
    # An application's own endpoints are the application's to document (the
    # data layer narrows what they read and write).
    assert not {e for e in shown if ROUTES[e][0] in left_out and not e.startswith("restsvc.")}
    if scope == "read":     # (a write token's document shows no entity: it reads none)
        assert {e for e in full if ROUTES[e][0] == "read"} <= shown
    else:
        assert {"files.upload", "webhooks.delete", "webhooks.replay"} <= shown


def test_an_application_policy_the_table_does_not_know_needs_every_scope(make_app):
    from restsvc.security.registry import RoleRegistry
    app = make_app()
    roles = RoleRegistry(app.metadata, [ResourceRole("custom", specifics=("app.export",))], [])
    assert roles.permissions(("custom",)).specific("app.export")
    assert roles.permissions(("custom",), scope="read write").specific("app.export")
    assert not roles.permissions(("custom",), scope="read").specific("app.export")
    assert not roles.permissions(("custom",), scope="write").specific("app.export")
