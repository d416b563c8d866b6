"""Ranked full-text search (issue 40): ``/search?q=`` on the demo's searchable
attributes (Product name "A", description "B"; Customer name "A"), on SQLite
(FTS5, bm25) and PostgreSQL (tsvector, ts_rank_cd). Order by relevance,
several words meaning all of them, the filter and row-level roles combined,
and an attribute the caller may not read neither matching, nor ranking, nor
showing in a snippet."""
import json

import peewee
import pytest
from werkzeug.test import Client

from conftest import get_token
from restsvc import Entity, ResourceRole, RowLevelRole, entity
from restsvc.db import is_sqlite
from restsvc.model.metadata import Metadata, MetadataError

SEARCH = "/rest/entities/Product/search"
# Reads products but not their description.
NO_DESCRIPTION = ResourceRole("t-no-description", entities={"Product": "read"},
                              attributes={"Product": {"name": "view", "sku": "view",
                                                      "price": "view"}})
EVERYTHING = ResourceRole("t-products", entities={"Product": "read,create,update,delete"},
                          attributes={"Product": {"*": "modify"}})
CHEAP_ONLY = RowLevelRole("t-cheap", filters={
    "Product": {"conditions": [{"property": "price", "operator": "<", "value": 100}]}})


def _add(client, auth, name, description=None, price="10.00"):
    response = client.post("/rest/entities/Product", headers=auth, json={
        "name": name, "description": description, "price": price})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json["id"]


def _hits(client, auth, q, entity="Product", **params):
    response = client.get(f"/rest/entities/{entity}/search", query_string={"q": q, **params},
                          headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json


def _ids(client, auth, q, **params):
    return [row["id"] for row in _hits(client, auth, q, **params)]


def test_a_word_in_the_heavier_attribute_ranks_first_and_stems_match(client, auth):
    in_description = _add(client, auth, "Desk lamp", "A zorbex shade for reading")
    in_name = _add(client, auth, "Zorbex lamp", "Bright and small")
    unrelated = _add(client, auth, "Floor lamp", "Tall")
    assert _ids(client, auth, "zorbex") == [in_name, in_description]
    # English stemming on both databases: "lamps" finds "lamp".
    assert set(_ids(client, auth, "lamps")) == {in_description, in_name, unrelated}
    # More of the words in a row ranks it higher (same attribute, same length).
    twice = _add(client, auth, "Quillet quillet", None)
    once = _add(client, auth, "Quillet other", None)
    assert _ids(client, auth, "quillet") == [twice, once]


def test_several_words_mean_all_of_them_and_order_of_words_does_not_matter(client, auth):
    both = _add(client, auth, "Vantor panel", "Frobly mounted")
    _add(client, auth, "Vantor rail", "Plain")
    _add(client, auth, "Frobly cable", "Plain")
    assert _ids(client, auth, "vantor frobly") == [both]
    assert _ids(client, auth, "Frobly, VANTOR!") == [both]
    assert _ids(client, auth, "vantor nothere") == []


def test_the_filter_the_sort_count_and_paging_combine_with_the_search(client, auth):
    cheap = _add(client, auth, "Glimmer one", price="5.00")
    dear = _add(client, auth, "Glimmer two", price="500.00")
    flt = json.dumps({"conditions": [{"property": "price", "operator": "<", "value": 100}]})
    assert _ids(client, auth, "glimmer", filter=flt) == [cheap]
    response = client.post(SEARCH, headers=auth, json={
        "q": "glimmer", "returnCount": True, "limit": 1, "offset": 1, "sort": "-price"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["X-Total-Count"] == "2"
    assert "Link" not in response.headers       # a ranked search pages by offset
    # Equal relevance: the sort given decides next (-price: the dear one first).
    first = client.post(SEARCH, headers=auth, json={"q": "glimmer", "limit": 1, "sort": "-price"})
    assert [row["id"] for row in first.json] == [dear]
    assert [row["id"] for row in response.json] == [cheap]
    # A deleted (soft-deleted) product is no hit.
    assert client.delete(f"/rest/entities/Product/{cheap}", headers=auth).status_code == 204
    assert _ids(client, auth, "glimmer") == [dear]


def test_writes_keep_the_index_in_step(client, auth):
    product = _add(client, auth, "Old brakkel name")
    assert _ids(client, auth, "brakkel") == [product]
    response = client.put(f"/rest/entities/Product/{product}", headers=auth,
                          json={"name": "New name", "description": "Now a snorvik"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert _ids(client, auth, "brakkel") == []
    assert _ids(client, auth, "snorvik") == [product]


def test_snippets_highlight_the_words_and_are_left_out_unless_asked(client, auth):
    product = _add(client, auth, "Trellick", "Weatherproof trellick cover for the garden")
    plain = _hits(client, auth, "cover trellick")
    assert [row["id"] for row in plain] == [product] and "_snippet" not in plain[0]
    (hit,) = _hits(client, auth, "cover", snippet="true")
    assert "<mark>cover</mark>" in hit["_snippet"]
    assert hit["description"] == "Weatherproof trellick cover for the garden"
    response = client.post(SEARCH, headers=auth, json={"q": "trellick", "snippet": True,
                                                       "fetchPlan": "_instance_name"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert "<mark>Trellick</mark>" in response.json[0]["_snippet"]


def test_a_hidden_attribute_neither_matches_nor_ranks_nor_shows(client, auth, client_with_roles):
    hidden, headers = client_with_roles(NO_DESCRIPTION)
    only_hidden = _add(client, auth, "Garden hose", "A plombit coupling")
    # Created first (the smaller id): with equal relevance, first.
    plain = _add(client, auth, "Plombit alpha", "Green")
    extra = _add(client, auth, "Plombit alpha", "Plombit plombit plombit plombit")
    assert _ids(client, auth, "plombit") == [extra, plain, only_hidden]
    assert _ids(hidden, headers, "plombit") == [plain, extra]
    assert _ids(hidden, headers, "garden plombit") == []
    for hit in _hits(hidden, headers, "plombit", snippet="true"):
        assert "description" not in hit
        assert hit["_snippet"] == "<mark>Plombit</mark> alpha"
    response = hidden.post(SEARCH, headers=headers, json={"q": "plombit", "returnCount": True})
    assert response.headers["X-Total-Count"] == "2"
    # The full reader's snippet comes from the description where the words are.
    assert "<mark>coupling</mark>" in _hits(client, auth, "coupling", snippet="true")[0]["_snippet"]
    assert _ids(hidden, headers, "coupling") == []


def test_row_level_roles_combine_with_the_search(client, auth, client_with_roles):
    restricted, headers = client_with_roles(EVERYTHING, row_level=(CHEAP_ONLY,))
    cheap = _add(client, auth, "Sprocken small", price="9.00")
    _add(client, auth, "Sprocken large", price="900.00")
    assert _ids(restricted, headers, "sprocken") == [cheap]
    response = restricted.get(SEARCH, headers=headers,
                              query_string={"q": "sprocken", "returnCount": "true"})
    assert response.headers["X-Total-Count"] == "1"


def test_customers_are_searched_by_name(client, auth):
    hits = _hits(client, auth, "alice", entity="Customer", snippet="true")
    assert [row["name"] for row in hits] == ["Alice Adler"]
    assert hits[0]["_snippet"] == "<mark>Alice</mark> Adler"


@pytest.mark.parametrize("query, message", [
    ({"q": ""}, "at least one word"),
    ({"q": "  !!! \"*\" "}, "at least one word"),
    ({"q": "x" * 1001}, "at most 1000 characters"),
    ({"q": " ".join(["w"] * 33)}, "at most 32 words"),
    ({"q": "solar", "after": "abc"}, "after and q"),
    ({"q": "solar", "format": "csv"}, "not exported"),
])
def test_bad_queries_are_refused_with_400(client, auth, query, message):
    response = client.get(SEARCH, query_string=query, headers=auth)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert message in response.json["details"]


def test_an_entity_without_searchable_attributes_and_bad_bodies_are_400(client, auth,
                                                                       client_with_roles):
    response = client.get("/rest/entities/Order/search", query_string={"q": "x"}, headers=auth)
    assert response.status_code == 400
    assert response.json["details"] == "Entity Order has no searchable attributes"
    for body in ({"q": 5}, {"q": "solar", "snippet": "yes"}, {}):
        response = client.post(SEARCH, headers=auth, json=body)
        assert response.status_code == 400, body
    # Neither filter nor q: the filter is missing, as before.
    response = client.get(SEARCH, headers=auth)
    assert response.json["details"] == "Entities filter cannot be null"


def test_query_syntax_is_words_only(client, auth):
    """FTS5 and tsquery operators, quotes and column filters are plain text."""
    product = _add(client, auth, "Near Klunder", 'Say "hi" AND OR NOT')
    for text in ('klunder OR nothing', '"klunder', 'name:klunder', '{name}: klunder',
                 'klunder*', 'NEAR(klunder', "klunder & !x | y", "klunder'"):
        response = client.get(SEARCH, query_string={"q": text}, headers=auth)
        assert response.status_code == 200, (text, response.get_data(as_text=True))
    assert _ids(client, auth, "klunder OR nothing") == []
    assert _ids(client, auth, '"klunder') == [product]


def test_openapi_describes_the_text_query_and_the_snippet(client, auth):
    generic = client.get("/rest/docs/openapi.json", headers=auth).json["paths"]
    search = generic["/rest/entities/{entityName}/search"]
    names = {param["name"]: param for param in search["get"]["parameters"]}
    assert names["q"]["schema"]["maxLength"] == 1000 and "snippet" in names
    assert not names["filter"].get("required")
    body = search["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["anyOf"] == [{"required": ["filter"]}, {"required": ["q"]}]
    assert "q" in body["properties"] and "snippet" in body["properties"]
    detailed = client.get("/rest/docs/openapiDetailed.json", headers=auth).json["paths"]
    product = {p["name"] for p in detailed["/rest/entities/Product/search"]["get"]["parameters"]}
    order = {p["name"] for p in detailed["/rest/entities/Order/search"]["get"]["parameters"]}
    assert {"q", "snippet"} <= product and not {"q", "snippet"} & order
    hit = detailed["/rest/entities/Product/search"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]["items"]
    assert "_snippet" in hit["allOf"][1]["properties"]


def test_case_is_folded_and_on_sqlite_diacritics_too(client, auth, app):
    product = _add(client, auth, "Café Crème grinder")
    assert _ids(client, auth, "CAFÉ crème") == [product]
    if is_sqlite(app.database):     # unicode61 remove_diacritics 2
        assert _ids(client, auth, "cafe creme") == [product]


@pytest.mark.parametrize("search, message", [
    ({"price": "A"}, "search names 'price', which is not a stored string attribute"),
    ({"missing": "A"}, "search names 'missing'"),
    ({"title": "E"}, "search weight of 'title' is 'E', not one of A, B, C, D"),
])
def test_a_bad_search_declaration_stops_the_start(search, message):
    @entity(search=search)
    class Gadget(Entity):
        title = peewee.CharField()
        price = peewee.IntegerField()
    with pytest.raises(MetadataError) as refused:
        Metadata([Gadget])
    assert message in str(refused.value)


def test_searches_of_one_shape_with_other_words_answer_their_own_rows(client, auth,
                                                                      client_with_roles):
    """The statement of a search's shape is kept and reused (loader.py): each
    time with its own words, for each caller its own readable attributes."""
    first = _add(client, auth, "Xandu lamp", "Yorrel shade")
    second = _add(client, auth, "Yorrel lamp", "Xandu shade")
    flt = json.dumps({"conditions": [{"property": "price", "operator": ">", "value": 1}]})
    hidden, headers = client_with_roles(NO_DESCRIPTION)
    for _ in range(2):
        for params in ({}, {"snippet": "true"}, {"filter": flt, "sort": "-price", "limit": "5"}):
            assert _ids(client, auth, "xandu", **params) == [first, second]
            assert _ids(client, auth, "yorrel", **params) == [second, first]
            assert _ids(hidden, headers, "xandu", **params) == [first]
            assert _ids(hidden, headers, "yorrel", **params) == [second]
        assert _hits(client, auth, "shade", snippet="true")[0]["_snippet"].count("<mark>") == 1
        assert _hits(hidden, headers, "lamp", snippet="true")[0]["_snippet"] == \
            "Xandu <mark>lamp</mark>"


def test_the_language_setting_decides_the_stemming(make_app):
    """``svc.search.language: simple``: no stemming (PostgreSQL's simple
    configuration; SQLite without porter), so "lamps" no longer finds "lamp"."""
    client = Client(make_app({"svc.search.language": "simple"}))
    headers = {"Authorization": f"Bearer {get_token(client)}"}
    product = _add(client, headers, "Brass lamp")
    assert _ids(client, headers, "lamp") == [product]
    assert _ids(client, headers, "lamps") == []
