"""Cursor paging: Link rel="next", after=<cursor> on GET, "after" in POST search bodies."""
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import get_token
from restsvc import ResourceRole, RowLevelRole
from restsvc.errors import ApiError

LINK = re.compile(r'^<([^>]*)>; rel="next"$')
FULL = ResourceRole("t-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})
GOLD_ONLY = RowLevelRole("t-gold", filters={
    "Customer": {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]}})


def _next(response):
    link = response.headers.get("Link")
    if link is None:
        return None
    return LINK.match(link).group(1)


def _walk(client, auth, url, pages=100):
    """Every id over the pages a first URL leads to, and the number of pages."""
    ids, count = [], 0
    while url is not None and count < pages:
        response = client.get(url, headers=auth)
        assert response.status_code == 200, response.get_data(as_text=True)
        ids += [row["id"] for row in response.json]
        count += 1
        url = _next(response)
    return ids, count


def _all_ids(client, auth, entity, sort):
    response = client.get(f"/rest/entities/{entity}?sort={sort}&limit=10000", headers=auth)
    assert "Link" not in response.headers
    return [row["id"] for row in response.json]


@pytest.mark.parametrize("entity, sort", [
    ("Customer", ""), ("Customer", "name"), ("Customer", "-grade,name"),
    ("Customer", "address.city"), ("Customer", "-address.city,-birthDate"),
    ("Customer", "createdDate"), ("Order", "-amount"), ("Order", "customer,date"),
    ("Order", "status,-number"),
])
def test_cursor_pages_give_every_row_once_in_sort_order(client, auth, entity, sort):
    expected = _all_ids(client, auth, entity, sort)
    ids, pages = _walk(client, auth, f"/rest/entities/{entity}?sort={sort}&limit=3")
    assert ids == expected
    assert pages == -(-len(expected) // 3)


def test_the_last_page_has_no_link(client, auth):
    response = client.get("/rest/entities/Customer?limit=20", headers=auth)
    assert len(response.json) == 20 and "Link" not in response.headers
    response = client.get("/rest/entities/Customer?limit=19", headers=auth)
    last = client.get(_next(response), headers=auth)
    assert len(last.json) == 1 and "Link" not in last.headers


@pytest.mark.parametrize("query", ["limit=0", "limit=0&sort=name", "limit=0&returnCount=true"])
def test_limit_zero_is_an_empty_page_without_link(client, auth, query):
    response = client.get(f"/rest/entities/Customer?{query}", headers=auth)
    assert response.status_code == 200
    assert response.json == [] and "Link" not in response.headers
    queried = client.get(f"/rest/queries/Customer/customersByGrades?grades=GOLD&{query}",
                         headers=auth)
    assert queried.status_code == 200 and queried.json == []


def test_no_link_without_limit(client, auth):
    assert "Link" not in client.get("/rest/entities/Customer", headers=auth).headers


def test_link_keeps_the_request_parameters(client, auth):
    response = client.get("/rest/entities/Customer?limit=2&sort=name&fetchPlan=_local",
                          headers=auth)
    url = urlsplit(_next(response))
    assert url.path == "/rest/entities/Customer"
    query = parse_qs(url.query)
    assert query["limit"] == ["2"] and query["sort"] == ["name"]
    assert query["fetchPlan"] == ["_local"] and len(query["after"]) == 1


def test_link_is_under_the_public_url(make_app):
    from werkzeug.test import Client
    client = Client(make_app({"svc.public-url": "https://api.example.com/v1"}))
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    response = client.get("/rest/entities/Customer?limit=2", headers=auth)
    assert _next(response).startswith("https://api.example.com/v1/rest/entities/Customer?")


def test_cursor_is_stable_under_concurrent_inserts(client, auth):
    first = client.get("/rest/entities/Customer?sort=name&limit=5", headers=auth)
    seen = [row["id"] for row in first.json]
    last_name = first.json[-1]["name"]
    before = client.post("/rest/entities/Customer", json={"name": "Aaa Before", "email": "a@x.org"},
                         headers=auth).json["id"]
    after = client.post("/rest/entities/Customer", json={"name": "Zzz After", "email": "z@x.org"},
                        headers=auth).json["id"]
    rest, _ = _walk(client, auth, _next(first))
    assert not set(seen) & set(rest)
    assert before not in rest and after in rest
    expected = _all_ids(client, auth, "Customer", "name")
    assert seen + rest == [i for i in expected if i != before]
    assert "Aaa Before" < last_name < "Zzz After"


def test_cursor_is_stable_when_rows_are_deleted_meanwhile(client, auth):
    """The page's last row itself, and a row of the next page, deleted
    between the pages: no row repeats, none is skipped."""
    expected = _all_ids(client, auth, "Customer", "name")
    first = client.get("/rest/entities/Customer?sort=name&limit=4", headers=auth)
    seen = [row["id"] for row in first.json]
    gone = [seen[-1], expected[5]]
    for customer in gone:
        assert client.delete(f"/rest/entities/Customer/{customer}",
                             headers=auth).status_code == 204
    rest, _ = _walk(client, auth, _next(first))
    assert seen + rest == [i for i in expected if i != expected[5]]


def test_search_get_and_post_page_by_cursor(client, auth):
    search = {"conditions": [{"property": "grade", "operator": "<>", "value": "GOLD"}]}
    url = "/rest/entities/Customer/search?limit=4&sort=-name&filter=" + json.dumps(search)
    got, _ = _walk(client, auth, url)
    everything = client.post("/rest/entities/Customer/search",
                             json={"filter": search, "sort": "-name"}, headers=auth).json
    assert got == [row["id"] for row in everything]
    posted, body = [], {"filter": search, "sort": "-name", "limit": 4}
    while True:
        response = client.post("/rest/entities/Customer/search", json=body, headers=auth)
        posted += [row["id"] for row in response.json]
        link = _next(response)
        if link is None:
            break
        body["after"] = parse_qs(urlsplit(link).query)["after"][0]
    assert posted == got


def test_predefined_query_pages_by_cursor(client, auth):
    url = "/rest/queries/Customer/customersByGrades?grades=GOLD&grades=BRONZE&limit=3"
    ids, pages = _walk(client, auth, url)
    everything = client.get("/rest/queries/Customer/customersByGrades?grades=GOLD&grades=BRONZE",
                            headers=auth).json
    assert ids == [row["id"] for row in everything] and pages > 1


def test_cursor_never_shows_rows_hidden_by_row_level_rules(client_with_roles):
    client, auth = client_with_roles(FULL, row_level=[GOLD_ONLY])
    ids, _ = _walk(client, auth, "/rest/entities/Customer?limit=1&sort=name")
    rows = client.get("/rest/entities/Customer?limit=1000", headers=auth).json
    assert sorted(ids) == sorted(row["id"] for row in rows)
    assert all(row["grade"] == "GOLD" for row in rows)


def test_cursor_from_a_full_caller_does_not_widen_a_restricted_one(client_with_roles):
    client, auth = client_with_roles(FULL, row_level=[GOLD_ONLY])
    full = {"Authorization": f"Bearer {get_token(client)}"}
    first = client.get("/rest/entities/Customer?limit=2&sort=name", headers=full)
    ids, _ = _walk(client, auth, _next(first))
    grades = {row["id"]: row["grade"]
              for row in client.get("/rest/entities/Customer?limit=1000", headers=full).json}
    assert ids and all(grades[i] == "GOLD" for i in ids)


@pytest.mark.parametrize("change", ["tamper", "sort", "filter", "entity", "garbage"])
def test_a_cursor_cannot_be_forged_or_moved(client, auth, change):
    search = {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]}
    first = client.get("/rest/entities/Customer/search?limit=2&sort=name&filter="
                       + json.dumps(search), headers=auth)
    cursor = parse_qs(urlsplit(_next(first)).query)["after"][0]
    path, sort = "/rest/entities/Customer/search", "name"
    if change == "tamper":
        cursor = cursor[:-3] + ("AAA" if cursor[-3:] != "AAA" else "BBB")
    elif change == "sort":
        sort = "-name"
    elif change == "filter":
        search["conditions"][0]["value"] = "BRONZE"
    elif change == "entity":
        path = "/rest/entities/Order/search"
        search = {"conditions": []}
    else:
        cursor = "not-a-cursor"
    response = client.get(f"{path}?limit=2&sort={sort}&after={cursor}&filter="
                          + json.dumps(search), headers=auth)
    assert response.status_code == 400
    assert response.json["error"] == "Invalid cursor"


def test_after_and_offset_together_are_refused(client, auth):
    first = client.get("/rest/entities/Customer?limit=2", headers=auth)
    response = client.get(_next(first) + "&offset=3", headers=auth)
    assert response.status_code == 400 and "offset" in response.json["details"]


def test_a_page_asked_with_offset_links_to_the_rows_after_it(client, auth):
    expected = _all_ids(client, auth, "Customer", "name")
    first = client.get("/rest/entities/Customer?sort=name&limit=3&offset=5", headers=auth)
    assert [row["id"] for row in first.json] == expected[5:8]
    assert "offset" not in parse_qs(urlsplit(_next(first)).query)
    rest, _ = _walk(client, auth, _next(first))
    assert rest == expected[8:]


@pytest.mark.parametrize("name", ["short", "long"])
def test_cursors_read_as_itsdangerous_wrote_them(app, name):
    """A cursor is made and read by cursors.py in itsdangerous' URLSafeSerializer
    form: one it made is byte for byte what itsdangerous makes of the same
    payload when it does not compress, and one itsdangerous made (compressed
    when that is shorter) still reads."""
    from itsdangerous import URLSafeSerializer

    from restsvc.data.read.cursors import _binding

    meta, cursors = app.metadata.entity("Customer"), app.data.cursors
    signer = URLSafeSerializer(app.settings.secret_key, salt="restsvc.cursor")
    key = ["x" * (2 if name == "short" else 300), 5, None]
    ours = cursors.token(meta, "name", None, key)
    theirs = signer.dumps([_binding(meta, "name", None), key])
    assert cursors.key(theirs, meta, "name", None) == key
    assert signer.loads(ours) == [_binding(meta, "name", None), key]
    if name == "short":
        assert ours == theirs
    else:
        assert theirs.startswith(".")       # compressed
        tampered = theirs[:-2] + ("AA" if theirs[-2:] != "AA" else "BB")
        with pytest.raises(ApiError, match="Invalid cursor"):
            cursors.key(tampered, meta, "name", None)
