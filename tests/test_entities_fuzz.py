"""Random, mostly wrong requests to the entities API: never a server error."""
import json
import random

import pytest

from conftest import demo_id

SCALARS = [None, True, False, 0, -1, 2 ** 70, 1.5, 1e308, "", "x", "1e999", "2024-13-45", "GOLD",
           "\u0000", "💥", "\ud800", [], {}, {"id": None}, {"id": "x"}, {"id": demo_id("customer", 1)},
           "fs://a/b.png?name=x", "9999-12-31T23:59:59", "-0", "NaN"]
KEYS = ["id", "version", "name", "email", "grade", "birthDate", "photo", "createdDate", "number",
        "date", "customer", "status", "amount", "lines", "product", "quantity", "price", "sku",
        "itemCount", "_entityName", "username", "active", "password"]
OPERATORS = ["=", "<>", ">", "<=", "in", "notIn", "contains", "doesNotContain", "isNull", "notEmpty",
             "startsWith", "endsWith", "between"]
ROW_IDS = {"Customer": demo_id("customer", 1), "Order": demo_id("order", 1),
           "OrderLine": demo_id("line", "1-0"), "Product": demo_id("product", 1), "User": "x"}


def random_value(rnd, depth=0):
    roll = rnd.random()
    if depth < 2 and roll < 0.15:
        return [random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    if depth < 2 and roll < 0.3:
        return {rnd.choice(KEYS): random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}
    return rnd.choice(SCALARS)


def random_request(rnd, client, auth):
    entity = rnd.choice(list(ROW_IDS))
    body = {rnd.choice(KEYS): random_value(rnd) for _ in range(rnd.randint(0, 6))}
    roll = rnd.random()
    if roll < 0.35:
        return client.post(f"/rest/entities/{entity}", json=body if rnd.random() < 0.8 else [body, random_value(rnd)],
                           headers=auth)
    if roll < 0.55:
        return client.put(f"/rest/entities/{entity}/{ROW_IDS[entity]}", json=body, headers=auth)
    if roll < 0.8:
        condition = {"property": rnd.choice(KEYS + ["customer.name", "order.customer.grade"]),
                     "operator": rnd.choice(OPERATORS), "value": random_value(rnd)}
        search = {"filter": {"conditions": [condition]}, "sort": rnd.choice(["name", "-customer", "x.y", None, 5]),
                  "limit": rnd.choice([None, 1, -1, "2"]),
                  "fetchPlan": rnd.choice([None, "_local", {"entity": entity, "properties": [rnd.choice(KEYS)]}, 3])}
        return client.post(f"/rest/entities/{entity}/search", json=search, headers=auth)
    query = {"fetchPlan": json.dumps(random_value(rnd)), "sort": rnd.choice(KEYS),
             "limit": rnd.choice(["1", "x", "-1", "99999999999999999999"])}
    return client.get(f"/rest/entities/{entity}", query_string=query, headers=auth)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_requests_never_cause_a_server_error(client, auth, seed):
    rnd = random.Random(seed)
    for _ in range(300):
        response = random_request(rnd, client, auth)
        assert response.status_code < 500, response.get_data(as_text=True)
        assert response.is_json or response.status_code == 204
