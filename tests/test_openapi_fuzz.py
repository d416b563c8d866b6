"""schemathesis against the detailed document, every operation, with a valid
token: no server error, and every answer is one the document promises
(status code, content type, headers, body schema). Derandomized (a fixed
seed) with a bounded number of examples per operation, so it is
deterministic; the operations run one after the other on one demo database."""
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (content_type_conformance, not_a_server_error,
                                 response_headers_conformance, response_schema_conformance,
                                 status_code_conformance)

from conftest import basic

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_headers_conformance, response_schema_conformance]
EXAMPLES = 12


def fuzz(operation, headers):
    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    def run(case):
        case.call_and_validate(headers=headers, checks=CHECKS)
    run()


def test_every_operation_answers_as_documented(app, auth):
    schema = schemathesis.openapi.from_wsgi("/rest/docs/openapiDetailed.json", app, headers=auth)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 100
    client_auth = {"Authorization": basic("demo-client", "demo-secret")}
    failures = []
    for operation in operations:
        try:
            fuzz(operation, client_auth if operation.path.startswith("/oauth2/") else auth)
        except (AssertionError, BaseExceptionGroup) as exc:   # schemathesis finds
            failures.append(f"{operation.label}: {exc}")
    assert failures == [], "\n\n".join(failures)
