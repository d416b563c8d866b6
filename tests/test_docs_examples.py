"""Every curl example of the README and the manual, run against the demo
application through the WSGI app, its answer checked against the one the page
shows (status, headers, the JSON shown as a subset; "abc..." is a value that
differs per run, remembered for the examples after it)."""
import textwrap

import pytest
import yaml
from werkzeug.test import Client

from conftest import get_token
from docs_support import BENCHMARK, PAGES, README, TUTORIAL, examples, not_run_marks, run
from restsvc.demo.model import Customer, Order, Product
from restsvc.settings import flatten


def _variables(app, client):
    """What the pages' examples name: a token, the first order, the first
    customer, products."""
    token = get_token(client)
    app.database.connect(reuse_if_open=True)
    order = str(Order.select().order_by(Order.number).first().id)
    customer = str(Customer.select().order_by(Customer.name).first().id)
    products = [str(p.id) for p in Product.select().order_by(Product.name)]
    return {"$TOKEN": token, "$H": f"Authorization: Bearer {token}",
            "$ORDER_ID": order, "<id>": order, "$CUSTOMER_ID": customer, "$ID": customer,
            "$PRODUCT_ID": products[0], "$ID1": products[-1], "$ID2": products[-2]}


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
    assert sum(len(reasons) for reasons in marks.values()) <= 15, marks
    assert all(len(reason.split()) >= 3 for reasons in marks.values() for reason in reasons)


def test_most_of_the_examples_run():
    assert sum(len(examples(page)) for page in [README, *PAGES]) >= 60
