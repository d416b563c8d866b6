"""Every curl example of the README and the manual, run against the demo
application through the WSGI app, its answer checked against the one the page
shows (status, headers, the JSON shown as a subset; "abc..." is a value that
differs per run, remembered for the examples after it)."""
import json
import textwrap

import pytest
import yaml
from werkzeug.test import Client

from conftest import get_token
from docs_support import (BENCHMARK, PAGES, README, TUTORIAL, Shown, check_header, curl_request,
                          examples, matches, not_run_marks)
from restsvc.demo.model import Customer, Order, Product
from restsvc.settings import flatten

FILES = {"cat.jpg": (b"\xff\xd8\xff\xe0" + bytes(range(256)) * 336)[:85862], "report.pdf": b"%PDF-1.4\n%%EOF\n"}


def _variables(app, client):
    token = get_token(client)
    app.database.connect(reuse_if_open=True)
    first_order = Order.select().order_by(Order.number).first()
    spare = [str(p.id) for p in Product.select().order_by(Product.name)
             if not p.orderline_set.exists()] if hasattr(Product, "orderline_set") else []
    products = [str(p.id) for p in Product.select().order_by(Product.name)]
    customer = Customer.select().order_by(Customer.name).first()
    return {"$TOKEN": token, "$H": f"Authorization: Bearer {token}",
            "$ORDER_ID": str(first_order.id), "<id>": str(first_order.id),
            "$CUSTOMER_ID": str(customer.id), "$ID": str(customer.id),
            "$PRODUCT_ID": products[0], "$ID1": (spare or products)[-1],
            "$ID2": (spare or products)[-2]}


def run(client, example, variables, tmp_path):
    method, path, query, headers, body, form, flags = curl_request(example.command, variables)
    if isinstance(body, tuple):
        body = FILES[body[1]]
    if form:
        for value in form.values():
            if value.startswith("@"):
                (tmp_path / value[1:]).write_bytes(FILES[value[1:]])
        body = {name: ((tmp_path / value[1:]).open("rb"), value[1:]) if value.startswith("@")
                else value for name, value in form.items()}
    answer = client.open(path, method=method, query_string=query, headers=headers,
                         data=body)
    shown = Shown(example.shown)
    where = f"{example}: {example.command}\n -> {answer.status_code} {answer.get_data()[:300]!r}"
    if shown.status:
        assert answer.status_code == shown.status, where
    elif shown.json is not None and isinstance(shown.json, dict) and "error" in shown.json:
        assert answer.status_code >= 400, where
    else:
        assert answer.status_code < 400, where
    for name, value in shown.headers.items():
        check_header(name, value, answer.headers.get(name), variables)
    if shown.json is not None:
        assert matches(shown.json, json.loads(answer.get_data(as_text=True)), variables), where
    for line in shown.text:
        assert line in answer.get_data(as_text=True), where
    if example.capture:
        name, key = example.capture
        variables["$" + name] = answer.json[key]
    return answer


# Examples of an application of one's own run against it (test_docs_tutorial.py).
OWN_SECTION = "An application of your own"
OWN_APPLICATION = {(README, OWN_SECTION), (TUTORIAL, None)}


def demo_examples(page):
    return [example for example in examples(page) if (page, example.section)
            not in OWN_APPLICATION and (page, None) not in OWN_APPLICATION]


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda page: page.name)
def test_the_examples_of_a_page_give_the_answers_it_shows(make_app, tmp_path, page):
    found = demo_examples(page)
    if not found:
        pytest.skip("no curl examples")
    app = make_app()
    client = Client(app)
    variables = _variables(app, client)
    for example in found:
        if example.settings:
            client = Client(make_app(flatten(yaml.safe_load(textwrap.dedent(example.settings)))))
        else:
            run(client, example, variables, tmp_path)


def test_the_examples_not_run_are_few_and_say_why():
    marks = {page.name: not_run_marks(page) for page in [README, *PAGES, BENCHMARK]}
    assert sum(len(reasons) for reasons in marks.values()) <= 12, marks
    assert all(len(reason.split()) >= 3 for reasons in marks.values() for reason in reasons)


def test_most_of_the_examples_run():
    assert sum(len(examples(page)) for page in [README, *PAGES]) >= 60
