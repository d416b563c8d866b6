"""Queries API: the configuration file, checked at startup, and queries of its own."""
import pytest
from werkzeug.test import Client

from conftest import get_token, make_settings
from restsvc import ResourceRole
from restsvc.app import RestApp
from restsvc.settings import SettingsError

STATUS = '<params><param name="status" type="restsvc.demo.model.OrderStatus"/></params>'
BY_STATUS = '{"conditions": [{"property": "status", "operator": "=", "value": ":status"}]}'
BY_NAME = '{"conditions": [{"property": "name", "operator": "=", "value": ":name"}]}'
NAME = '<params><param name="name" type="java.lang.String"/></params>'
EVERYONE = '<filter>{"conditions": []}</filter>'


def write_queries(directory, body, root="<queries>"):
    path = directory / "queries.xml"
    path.write_text(f'<?xml version="1.0"?>\n{root}{body}</queries>', encoding="utf-8")
    return str(path)


@pytest.fixture
def with_queries(make_app, tmp_path):
    """A client (full access) and its headers on an app with these queries."""
    def build(body, root="<queries>", **overrides):
        app = make_app({"svc.rest.queries-config": write_queries(tmp_path, body, root), **overrides})
        c = Client(app)
        return c, {"Authorization": f"Bearer {get_token(c)}"}
    return build


def query(body, name="q", entity="Order", plan="_local", extra=""):
    return f'<query name="{name}" entity="{entity}" fetchPlan="{plan}"{extra}>{body}</query>'


@pytest.mark.parametrize("body, message", [
    (query(EVERYONE, entity="Nope"), "query q: unknown entity Nope"),
    (query(EVERYONE, plan="nope"), "query q: unknown fetch plan nope of entity Order"),
    ('<query name="q" entity="Order">' + EVERYONE + "</query>", "name, entity and fetchPlan are required"),
    (query(EVERYONE + '<params><param name="p" type="java.lang.Object"/></params>'),
     "parameter p: unknown type java.lang.Object"),
    (query("<filter>{conditions: []}</filter>"), "<filter> is not valid JSON"),
    (query("<filter>[]</filter>"), "<filter> must be a JSON object"),
    (query(f"<filter>{BY_STATUS}</filter>"), "refers to :status, which is not a declared parameter"),
    (query('<filter>{"conditions": [{"property": "nope", "operator": "=", "value": ":status"}]}</filter>' + STATUS),
     "Property for Order not found: nope"),
    (query('<filter>{"conditions": [{"property": "number", "operator": "like", "value": "x"}]}</filter>'),
     "Operator is not supported: like"),
    (query(f"<filter>{BY_STATUS}</filter>" + '<params><param name="status" type="string"/></params>'),
     "parameter status of type string does not fit the condition status = (Cannot parse enum value: x)"),
    (query('<filter>{"conditions": [{"property": "status", "operator": "in", "value": ":status"}]}</filter>'
           + STATUS), "parameter status of type restsvc.demo.model.OrderStatus does not fit the condition status in"),
    (query(EVERYONE + STATUS), "parameter status is declared but the <filter> does not use it"),
    (query('<filter>{"conditions": [{"property": "number", "operator": "=", "value": ":session$x"}]}</filter>'),
     "unknown session parameter :session$x"),
    (query("<jpql>select o from Order o</jpql>"), "<jpql> is not supported"),
    (query(EVERYONE + '<function name="restsvc.demo.queries:orders_of_month"/>'), "exactly one of"),
    (query('<function name="restsvc.demo.queries:nope"/>'), "cannot load function restsvc.demo.queries:nope"),
    (query(EVERYONE, name="all"), "the name all is reserved"),
    (query(EVERYONE) + query(EVERYONE), "query q: declared twice for entity Order"),
    (query(EVERYONE, extra=' limit="-1"'), "limit must be a whole number"),
    (query(EVERYONE, extra=' cache="true"'), "unknown attribute cache"),
    ("<query-list/>", "unexpected element <query-list> in <queries>"),
    ("<query>", "not well-formed XML"),
])
def test_a_bad_queries_file_stops_startup(tmp_path, body, message):
    path = write_queries(tmp_path, body)
    settings = make_settings(f"sqlite:///{tmp_path}/unused.db", tmp_path, {"svc.rest.queries-config": path})
    with pytest.raises(SettingsError) as failure:
        RestApp(settings)
    assert str(failure.value).startswith(f"svc.rest.queries-config: {path}: ")
    assert message in str(failure.value)


@pytest.mark.parametrize("content, message", [
    ('<?xml version="1.0"?><!DOCTYPE q [<!ENTITY a "aaaa">]><queries>&a;</queries>',
     "DTDs and entity declarations are not allowed"),
    ("<services/>", "the root element must be <queries>"),
    (None, "cannot read"),
])
def test_dtds_other_roots_and_missing_files_stop_startup(tmp_path, content, message):
    path = tmp_path / "queries.xml"
    if content is not None:
        path.write_text(content)
    settings = make_settings(f"sqlite:///{tmp_path}/unused.db", tmp_path, {"svc.rest.queries-config": str(path)})
    with pytest.raises(SettingsError, match=f"^svc.rest.queries-config: .*{message}"):
        RestApp(settings)


def test_a_reference_configuration_ports_as_it_is(with_queries):
    c, auth = with_queries(
        '<query name="byNumber" entity="Order" fetchPlan="_local" cacheable="true" anonymousAllowed="false">'
        '<filter>{"conditions": [{"property": "number", "operator": "in", "value": ":numbers"},'
        '{"property": "customer.name", "operator": "&lt;&gt;", "value": ":session$userLogin"}]}</filter>'
        '<params><param name="numbers" type="java.lang.String[]"/></params></query>',
        root='<queries xmlns="http://jmix.io/schema/rest/queries">')
    response = c.get('/rest/queries/Order/byNumber?numbers=["00001","00002"]', headers=auth)
    assert sorted(row["number"] for row in response.json) == ["00001", "00002"]
    listed = c.get("/rest/queries/Order", headers=auth).json
    assert listed[0]["params"] == [{"name": "numbers", "type": "java.lang.String[]"}]


def test_session_parameters_are_the_caller(with_queries):
    c, auth = with_queries(query('<filter>{"conditions": [{"property": "name", "operator": "=", '
                                 '"value": ":session$username"}]}</filter>', name="mine", entity="Customer"))
    assert c.get("/rest/queries/Customer/mine", headers=auth).json == []
    c.post("/rest/entities/Customer", json={"name": "demo-client"}, headers=auth)
    assert [row["name"] for row in c.get("/rest/queries/Customer/mine", headers=auth).json] == ["demo-client"]


@pytest.fixture
def paged(with_queries):
    def build(**overrides):
        c, auth = with_queries(query(EVERYONE, name="page", entity="Customer", extra=' limit="3" offset="2"')
                               + query(EVERYONE, name="unlimited", entity="Customer"), **overrides)
        every = [row["id"] for row in c.get("/rest/queries/Customer/all", headers=auth).json]
        return (lambda path: [row["id"] for row in c.get(path, headers=auth).json]), every
    return build


def test_request_limit_and_offset_win_over_the_query_s(paged):
    ids, every = paged()
    assert ids("/rest/queries/Customer/page") == every[2:5]
    assert ids("/rest/queries/Customer/page?limit=5") == every[2:7]
    assert ids("/rest/queries/Customer/page?offset=0") == every[0:3]
    assert ids("/rest/queries/Customer/unlimited?offset=18") == every[18:]


def test_without_limits_the_maximum_fetch_size_applies(paged):
    ids, every = paged(**{"svc.rest.entity-max-fetch-size.Customer": 4})
    assert ids("/rest/queries/Customer/unlimited") == every == ids("/rest/queries/Customer/all?limit=4")
    assert ids("/rest/queries/Customer/page") == ids("/rest/queries/Customer/all?offset=2&limit=3")


def test_a_query_limit_above_the_maximum_is_400(with_queries):
    c, auth = with_queries(query(EVERYONE, name="page", entity="Customer", extra=' limit="3"'),
                           **{"svc.rest.entity-max-fetch-size.Customer": 2})
    response = c.get("/rest/queries/Customer/page", headers=auth)
    assert response.status_code == 400 and response.json["error"] == "The value of limit exceeded"


def test_string_values_are_matched_literally(with_queries):
    c, auth = with_queries(query(f"<filter>{BY_NAME}</filter>{NAME}", name="named", entity="Customer"))
    for hostile in ("' OR 1=1 --", "%", "Alice%", '"; DROP TABLE customer; --', "\\"):
        response = c.get("/rest/queries/Customer/named", query_string={"name": hostile}, headers=auth)
        assert response.status_code == 200 and response.json == [], hostile
    assert len(c.get("/rest/queries/Customer/named?name=Alice Adler", headers=auth).json) == 1
    too_long = c.post("/rest/queries/Customer/named", json={"name": "x" * 20000}, headers=auth)
    assert too_long.status_code == 400
    nul = c.post("/rest/queries/Customer/named", json={"name": "a\x00b"}, headers=auth)
    assert nul.json == {"error": "Invalid parameter value", "details": "Invalid parameter value for name"}


def test_a_filter_on_an_attribute_hidden_from_the_caller_is_refused(client_with_roles, tmp_path):
    body = query('<filter>{"conditions": [{"property": "email", "operator": "=", "value": ":name"}]}</filter>'
                 + NAME, name="byEmail", entity="Customer")
    role = ResourceRole("t-names", entities={"Customer": "read"}, attributes={"Customer": {"name": "view"}})
    c, auth = client_with_roles(role, overrides={"svc.rest.queries-config": write_queries(tmp_path, body)})
    response = c.get("/rest/queries/Customer/byEmail?name=alice.adler@example.com", headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Cannot parse entities filter",
                             "details": "Property for Customer not found: email"}
