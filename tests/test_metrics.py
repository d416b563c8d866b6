"""The Prometheus endpoint: its grant, its text, its counts across workers."""
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from conftest import basic, bearer, get_token
from restsvc.observability import multiprocess
from servers import gunicorn_server


def families(text):
    return {family.name: family for family in text_string_to_metric_families(text)}


def sample_value(family, suffix="", **labels):
    """The value of the sample with exactly these labels (0 when there is none)."""
    for sample in family.samples:
        if sample.name == family.name + suffix and sample.labels == labels:
            return sample.value
    return 0


def scrape(client):
    response = client.get("/metrics", headers=bearer(get_token(client, "monitor", "monitor-secret")))
    assert response.status_code == 200, response.data
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return families(response.get_data(as_text=True))


def test_metrics_need_a_token(client):
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_metrics_are_refused_to_full_access_without_the_metrics_grant(client, auth):
    response = client.get("/metrics", headers=auth)
    assert response.status_code == 403
    assert "restsvc_" not in response.get_data(as_text=True)


def test_the_monitor_client_may_read_metrics_and_nothing_else(client):
    monitor = bearer(get_token(client, "monitor", "monitor-secret"))
    assert client.get("/metrics", headers=monitor).status_code == 200
    assert client.get("/rest/entities/Customer", headers=monitor).status_code == 403


def test_metrics_are_off_unless_a_path_is_set(make_app):
    from werkzeug.test import Client
    client = Client(make_app({"svc.metrics.path": ""}))
    token = get_token(client, "monitor", "monitor-secret")
    assert client.get("/metrics", headers=bearer(token)).status_code == 404


def test_requests_are_counted_by_route_template_method_and_status_class(client, auth):
    before = scrape(client)["restsvc_http_requests"]
    customers = client.get("/rest/entities/Customer?limit=2", headers=auth).json
    for customer in customers:
        assert client.get(f"/rest/entities/Customer/{customer['id']}", headers=auth).status_code == 200
    assert client.get("/rest/entities/Customer/no-such-id", headers=auth).status_code in (400, 404)
    after = scrape(client)
    requests = after["restsvc_http_requests"]
    route = "/rest/entities/<entity_name>/<entity_id>"

    def delta(**labels):
        return sample_value(requests, "_total", **labels) - sample_value(before, "_total", **labels)
    assert delta(method="GET", route=route, status="2xx") == 2
    assert delta(method="GET", route=route, status="4xx") == 1
    assert not any(customer["id"] in sample.labels.get("route", "")
                   for sample in requests.samples for customer in customers)
    duration = after["restsvc_http_request_duration_seconds"]
    assert sample_value(duration, "_count", method="GET", route=route) >= 3
    assert "restsvc_db_statement_duration_seconds" in after
    assert sample_value(after["restsvc_http_requests_in_flight"]) == 1   # the scrape itself


def test_a_scrape_counts_every_request_of_concurrent_threads_and_their_statements(client, auth):
    """Requests leave records that are added up in batches, while a thread
    of the process takes batches too: none is lost or counted twice."""
    route = "/rest/entities/<entity_name>"
    before = scrape(client)
    count = before["restsvc_http_requests"]
    statements = before["restsvc_db_statement_duration_seconds"]

    def one_request(_):
        return client.get("/rest/entities/Customer?limit=1", headers=auth).status_code
    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(one_request, range(400))) == {200}
    after = scrape(client)
    assert sample_value(after["restsvc_http_requests"], "_total", method="GET", route=route,
                        status="2xx") - sample_value(count, "_total", method="GET", route=route,
                                                     status="2xx") == 400
    duration = after["restsvc_http_request_duration_seconds"]
    assert sample_value(duration, "_count", method="GET", route=route) \
        == sample_value(duration, "_bucket", method="GET", route=route, le="+Inf")
    # Each request ran a statement at least (the page's select).
    assert sample_value(after["restsvc_db_statement_duration_seconds"], "_count") \
        - sample_value(statements, "_count") >= 400
    assert sample_value(after["restsvc_http_requests_in_flight"]) == 1   # the scrape itself


def test_tokens_are_counted_by_grant_and_failures_by_reason(client):
    get_token(client)
    refused = client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                          headers={"Authorization": "Basic bm9ib2R5Om5vdGhpbmc="})
    assert refused.status_code == 401
    metrics = scrape(client)
    assert sample_value(metrics["restsvc_tokens_issued"], "_total",
                        grant="client_credentials") >= 2
    assert sample_value(metrics["restsvc_token_failures"], "_total",
                        grant="client_credentials", reason="invalid_client") == 1


def test_service_calls_are_counted_by_method_and_outcome(client, auth):
    response = client.get("/rest/services/productPriceService/price?productId=x", headers=auth)
    metrics = scrape(client)
    outcome = "ok" if response.status_code == 200 else "error"
    assert sample_value(metrics["restsvc_service_calls"], "_total", service="productPriceService",
                        method="price", outcome=outcome) == 1


def _per_worker_counts(server, route):
    """Each worker's own count, from the files its figures are written to."""
    counts = {}
    for pid in server.worker_pids():
        base = Path(multiprocess.base_directory() or tempfile.gettempdir())
        path = next(base.glob(f"restsvc-metrics-*/worker-{pid}.json"), None)
        if path is None:
            continue
        series = json.loads(path.read_text())["restsvc_http_requests_total"]["series"]
        counts[path.name] = sum(value for labels, value in series
                                if labels == ["GET", route, "2xx"])
    return counts


def test_one_scrape_counts_the_requests_of_both_gunicorn_workers(tmp_path, database_url):
    route = "/rest/entities/<entity_name>"
    with gunicorn_server(tmp_path / "server", database_url, workers=2) as server:
        def one_request(_):
            status, _ = server.request("GET", "/rest/entities/Product?limit=1")
            return status
        # Batches until both workers have answered some (which worker accepts
        # a connection is the kernel's choice).
        sent, deadline = 0, time.monotonic() + 60
        with ThreadPoolExecutor(8) as pool:
            while True:
                assert set(pool.map(one_request, range(20))) == {200}
                sent += 20
                time.sleep(1.2)          # the workers' files are a second behind at most
                counts = _per_worker_counts(server, route)
                if len(counts) == 2 and all(counts.values()) or time.monotonic() > deadline:
                    break
        status, body = server.request("POST", "/oauth2/token", b"grant_type=client_credentials", {
            "Authorization": basic("monitor", "monitor-secret"),
            "Content-Type": "application/x-www-form-urlencoded"})
        assert status == 200
        server.token = json.loads(body)["access_token"]
        # Each worker writes its figures at most a second after a change.
        deadline = time.monotonic() + 30
        while True:
            status, text = server.request("GET", "/metrics")
            assert status == 200
            count = sample_value(families(text.decode())["restsvc_http_requests"], "_total",
                                 method="GET", route=route, status="2xx")
            per_worker = _per_worker_counts(server, route)
            if count == sent and sum(per_worker.values()) == sent or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert count == sent
        # The scrape added up two workers' figures (else this would prove nothing).
        assert len(per_worker) == 2 and all(per_worker.values()), per_worker


def test_file_bytes_are_counted_in_and_out(client, auth):
    stored = client.post("/rest/files?name=a.txt", data=b"0123456789", headers=auth).json
    assert client.get(f"/rest/files?fileRef={stored['fileRef']}", headers=auth).status_code == 200
    metrics = scrape(client)
    assert sample_value(metrics["restsvc_file_bytes"], "_total", direction="in") == 10
    assert sample_value(metrics["restsvc_file_bytes"], "_total", direction="out") == 10


def test_report_rows_are_counted_as_they_are_written(client, auth):
    from reports_support import CUSTOMERS, csv_rows, run
    csv = run(client, auth, CUSTOMERS)
    written = len(csv_rows(csv)) - 1                       # the header is not a row
    xlsx = run(client, auth, CUSTOMERS, {"template": "XLSX"})
    assert csv.status_code == xlsx.status_code == 200 and written > 0
    metrics = scrape(client)
    assert sample_value(metrics["restsvc_report_rows"], "_total") == 2 * written


def test_invented_http_methods_fold_into_one_method_label(client):
    """Without a token, any method name on any path: the metrics page does
    not grow by one series per name."""
    for index in range(30):
        response = client.open("/health/live", method=f"ZFBBVTYNDQ{index:02d}")
        assert response.status_code in (400, 405, 501)
    client.open("/no/such/path", method="PROPFINDX")
    metrics = scrape(client)
    methods = {sample.labels["method"] for family in ("restsvc_http_requests",
                                                      "restsvc_http_request_duration_seconds")
               for sample in metrics[family].samples}
    assert not any(method.startswith(("ZFBB", "PROPFINDX")) for method in methods), methods
    assert sample_value(metrics["restsvc_http_requests"], "_total", method="other",
                        route="unmatched", status="4xx") == 31


def test_client_label_scrapes_with_anonymous_and_authenticated_requests(make_app):
    from werkzeug.test import Client
    client = Client(make_app({"svc.metrics.client-label": True}))
    assert client.get("/health/live").status_code == 200          # a balancer's probe
    monitor = bearer(get_token(client, "monitor", "monitor-secret"))
    response = client.get("/metrics", headers=monitor)
    assert response.status_code == 200, response.data
    response = client.get("/metrics", headers=monitor)              # the first scrape is counted
    clients = families(response.get_data(as_text=True))["restsvc_client_requests"]
    assert sample_value(clients, "_total", client="anonymous") >= 2   # probe, token request
    assert sample_value(clients, "_total", client="monitor") == 1


def test_client_labels_are_capped(make_app, monkeypatch):
    from werkzeug.test import Client

    from restsvc.observability import labels
    monkeypatch.setattr(labels, "MAX_CLIENTS", 2)
    client = Client(make_app({"svc.metrics.client-label": True}))
    for client_id, secret in (("reader", "reader-secret"), ("auditor", "auditor-secret")):
        client.get("/rest/userInfo", headers=bearer(get_token(client, client_id, secret)))
    monitor = bearer(get_token(client, "monitor", "monitor-secret"))
    client.get("/metrics", headers=monitor)
    clients = families(client.get("/metrics", headers=monitor).get_data(as_text=True))[
        "restsvc_client_requests"]
    labels_seen = {sample.labels["client"] for sample in clients.samples}
    assert labels_seen == {"anonymous", "reader", "other"}, labels_seen
