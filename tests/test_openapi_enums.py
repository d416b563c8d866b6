"""Every enum of the documents is one named schema (the application's and
restsvc's own), so a generated client has one enum class per enum; and what
a GET can carry: arrays in its query string that fit the request line, and
the 414 answer on every GET."""
import re
from urllib.parse import urlencode

import pytest

from conftest import get_token
from restsvc import gunicorn_config
from restsvc.openapi.requestline import MAX_REQUEST_LINE
from test_openapi_generators import generate_python

DOCUMENTS = ("openapi.json", "openapiDetailed.json")
GRADES = "#/components/schemas/enum_restsvc.demo.model.CustomerGrade"
STATUSES = "#/components/schemas/enum_restsvc.demo.model.OrderStatus"


@pytest.fixture
def documents(client):
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    return {name: client.get(f"/rest/docs/{name}", headers=auth).json for name in DOCUMENTS}


def inline_enums(node, path=""):
    """Where an enum is written in place rather than as a named schema."""
    found = []
    if isinstance(node, dict):
        if "enum" in node and not re.fullmatch(r"/components/schemas/[^/]+", path):
            found.append(path)
        for key, value in node.items():
            found += inline_enums(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += inline_enums(value, f"{path}[{index}]")
    return found


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_enum_is_one_named_schema_referred_to_where_it_is_used(documents, name):
    assert inline_enums(documents[name]) == []


def test_query_and_service_parameters_refer_to_the_applications_enum_schema(documents):
    paths = documents["openapiDetailed.json"]["paths"]
    grades = paths["/rest/queries/Customer/customersByGrades"]["get"]["parameters"][0]
    assert grades["schema"]["items"] == {"$ref": GRADES}
    status = paths["/rest/queries/Order/ordersByStatus"]["get"]["parameters"][0]
    assert status["schema"] == {"$ref": STATUSES}
    criteria = paths["/rest/services/orderService/summarize"]["post"]["requestBody"][
        "content"]["application/json"]["schema"]["properties"]["criteria"]
    assert criteria["properties"]["statuses"]["anyOf"][0]["items"] == {"$ref": STATUSES}
    generic = documents["openapi.json"]
    assert generic["paths"]["/health/live"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]["properties"]["status"] == {
        "$ref": "#/components/schemas/healthStatus"}
    assert generic["components"]["schemas"]["eventKind"]["enum"] == ["CREATE", "UPDATE", "DELETE"]


def test_the_generated_python_client_has_one_enum_class_per_enum(documents, tmp_path):
    import json
    source = tmp_path / "api.json"
    source.write_text(json.dumps(documents["openapiDetailed.json"]))
    status, log = generate_python(source, tmp_path / "client")
    assert status == 0, log
    classes = {}
    for path in (tmp_path / "client" / "models").glob("*.py"):
        text = path.read_text()
        for name in re.findall(r"^class (\w+)\((?:str, )?(?:Int|Str)?Enum\)", text, re.MULTILINE):
            classes[name] = frozenset(re.findall(r'^    \w+ = "?([^"\n]+)"?$', text, re.MULTILINE))
    grades = [name for name, members in classes.items()
              if members == {"BRONZE", "SILVER", "GOLD"}]
    statuses = [name for name, members in classes.items()
                if members == {"NEW", "PAID", "SHIPPED", "CANCELLED"}]
    assert len(grades) == 1 and len(statuses) == 1, classes
    named = [schema for schema in documents["openapiDetailed.json"]["components"][
        "schemas"].values() if "enum" in schema]
    assert len(classes) == len(named), sorted(classes)


def test_a_gets_array_parameter_documents_how_many_values_fit_the_request_line(documents):
    grades = documents["openapiDetailed.json"]["paths"][
        "/rest/queries/Customer/customersByGrades"]["get"]["parameters"][0]
    most = grades["schema"]["maxItems"]
    assert "8,190 bytes" in grades["description"] and "POST" in grades["description"]
    line = (f"GET /rest/queries/Customer/customersByGrades?"
            f"{urlencode([('grades', 'BRONZE')] * most)} HTTP/1.1")
    assert len(line) <= MAX_REQUEST_LINE
    assert most < 1000


def test_every_get_documents_the_414_answer_in_the_error_format(documents):
    for name, document in documents.items():
        assert document["components"]["responses"]["UriTooLong"]["content"][
            "application/json"]["schema"] == {"$ref": "#/components/schemas/error"}
        for path, methods in document["paths"].items():
            if "get" in methods:
                assert methods["get"]["responses"].get("414") == {
                    "$ref": "#/components/responses/UriTooLong"}, (name, path)


def test_the_documented_request_line_is_the_servers():
    assert gunicorn_config.limit_request_line == MAX_REQUEST_LINE
