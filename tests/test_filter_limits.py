"""Filters and sorts at their caps answer like any other (issue 17, point 3):
500 conditions ANDed or ORed, from a URL, a search body, a count, a
predefined query or a row-level rule, run on SQLite and PostgreSQL (SQLite's
parser overflowed at 84 nested ANDs, Peewee's SQL builder at 479 on
PostgreSQL); a sort has at most 32 terms."""
import json

import pytest
from werkzeug.test import Client

from conftest import get_token
from restsvc import ResourceRole, RowLevelRole
from restsvc.data.read.filters import MAX_CONDITIONS
from restsvc.data.read.query import MAX_SORT_TERMS

MATCHING = {"property": "name", "operator": "=", "value": "Inverter"}
MISSING = {"property": "name", "operator": "=", "value": "no such product"}


def conditions(kind):
    """MAX_CONDITIONS items (a group counts as one), matching exactly the demo's
    Inverter: AND of the same true condition, or OR of false ones and one true."""
    if kind == "AND":
        return [MATCHING] * MAX_CONDITIONS
    return [{"group": "OR", "conditions": [MISSING] * (MAX_CONDITIONS - 2) + [MATCHING]}]


def names(response):
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return [row["name"] for row in response.json]


@pytest.mark.parametrize("kind", ["AND", "OR"])
def test_a_search_body_with_the_most_conditions_answers(client, auth, kind):
    response = client.post("/rest/entities/Product/search", headers=auth,
                           json={"filter": {"conditions": conditions(kind)}})
    assert names(response) == ["Inverter"]      # was 500 on SQLite (parser stack overflow)


@pytest.mark.parametrize("kind", ["AND", "OR"])
def test_a_url_filter_with_the_most_conditions_answers(client, auth, kind):
    text = json.dumps({"conditions": conditions(kind)}, separators=(",", ":"))
    response = client.get("/rest/entities/Product/search", headers=auth,
                          query_string={"filter": text, "returnCount": "true"})
    assert names(response) == ["Inverter"]
    assert response.headers["X-Total-Count"] == "1"
    count = client.get("/rest/entities/Product/search/count", headers=auth,
                       query_string={"filter": text})
    assert count.status_code == 200 and count.json == 1


def test_groups_as_deep_as_allowed_with_the_most_conditions_answer(client, auth):
    node = {"group": "AND", "conditions": [MATCHING] * 10}
    for _ in range(15):
        node = {"group": "OR", "conditions": [MISSING] * 20 + [node]}
    response = client.post("/rest/entities/Product/search/count", headers=auth,
                           json={"filter": {"conditions": [node]}})
    assert response.status_code == 200 and response.json == 1


def test_one_condition_more_is_refused(client, auth):
    response = client.post("/rest/entities/Product/search", headers=auth,
                           json={"filter": {"conditions": [MATCHING] * (MAX_CONDITIONS + 1)}})
    assert response.status_code == 400
    assert response.json["details"] == f"A filter may have at most {MAX_CONDITIONS} conditions"


def test_a_predefined_query_with_the_most_conditions_answers(make_app, tmp_path):
    spec = json.dumps({"conditions": [MATCHING] * (MAX_CONDITIONS - 1)
                       + [{"property": "name", "operator": "=", "value": ":name"}]})
    path = tmp_path / "queries.xml"
    path.write_text(f'<queries><query name="q" entity="Product" fetchPlan="_local">'
                    f'<filter><![CDATA[{spec}]]></filter><params><param name="name" '
                    f'type="java.lang.String"/></params></query></queries>', encoding="utf-8")
    client = Client(make_app({"svc.rest.queries-config": str(path)}))
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    assert names(client.get("/rest/queries/Product/q?name=Inverter", headers=auth)) == ["Inverter"]


def test_a_row_level_rule_with_the_most_conditions_answers(client_with_roles):
    rule = RowLevelRole("many-conditions", "Many conditions",
                        filters={"Product": {"conditions": conditions("OR")}})
    reader = ResourceRole("product-reader", "Products", entities={"Product": "read"},
                          attributes={"Product": {"*": "view"}})
    client, auth = client_with_roles(reader, row_level=(rule,))
    assert names(client.get("/rest/entities/Product", headers=auth)) == ["Inverter"]


SORTABLE = ["name", "-price", "+id", "version", "-name", "price", "-version", "id"]


def sort_of(count):
    return ",".join(SORTABLE[i % len(SORTABLE)] for i in range(count))


def test_a_sort_of_the_most_terms_answers(client, auth):
    for response in (
            client.get("/rest/entities/Product", headers=auth,
                       query_string={"sort": sort_of(MAX_SORT_TERMS)}),
            client.post("/rest/entities/Product/search", headers=auth,
                        json={"filter": {"conditions": []}, "sort": sort_of(MAX_SORT_TERMS)})):
        assert response.status_code == 200, response.get_data(as_text=True)
        assert len(response.json) > 1


@pytest.mark.parametrize("count", [MAX_SORT_TERMS + 1, 2500])
def test_a_sort_of_more_terms_is_refused_naming_sort(client, auth, count):
    """2,500 terms answered 500 on SQLite (too many terms in ORDER BY)."""
    for response in (
            client.get("/rest/entities/Product", headers=auth,
                       query_string={"sort": sort_of(count)}),
            client.get("/rest/entities/Product/search", headers=auth,
                       query_string={"sort": sort_of(count), "filter": '{"conditions": []}'}),
            client.post("/rest/entities/Product/search", headers=auth,
                        json={"filter": {"conditions": []}, "sort": sort_of(count)})):
        assert response.status_code == 400, response.get_data(as_text=True)
        assert response.json == {"error": "Invalid parameter value",
                                 "details": f"Parameter sort may have at most {MAX_SORT_TERMS} terms"}


def test_empty_sort_terms_do_not_count(client, auth):
    response = client.get("/rest/entities/Product", headers=auth,
                          query_string={"sort": "," * 100 + "name"})
    assert response.status_code == 200
