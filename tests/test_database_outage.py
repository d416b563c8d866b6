"""A PostgreSQL outage is a 503 with Retry-After, and restsvc recovers by
itself when the server is back. The test runs its own PostgreSQL cluster
(initdb and pg_ctl as the postgres user, a temporary directory, a free
port) and stops and starts only that one."""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest
from werkzeug.test import Client

from conftest import basic, get_token, make_settings
from restsvc.app import RestApp
from servers import free_port


def _binaries():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return os.path.dirname(found[-1]) if found else None


class Cluster:
    def __init__(self, bin_dir, directory, port):
        self.bin_dir, self.directory, self.port = bin_dir, directory, port
        self.data = os.path.join(directory, "data")

    def run(self, tool, *args):
        command = [os.path.join(self.bin_dir, tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self):
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} "
                   "-c fsync=off -c max_connections=20")
        self.run("pg_ctl", "-D", self.data, "-o", options, "-l",
                 os.path.join(self.directory, "log"), "-w", "start")

    def stop(self):
        self.run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    @property
    def url(self):
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"


@pytest.fixture
def own_postgres():
    bin_dir = _binaries()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (/usr/lib/postgresql/*/bin) are not installed")
    pytest.importorskip("psycopg2", reason="the psycopg2 driver (extra 'postgres') is missing")
    try:
        postgres = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no postgres system user to run a cluster as")
    if os.geteuid() not in (0, postgres.pw_uid):
        pytest.skip("running a PostgreSQL cluster needs root (runuser) or the postgres user")
    directory = tempfile.mkdtemp(prefix="restsvc-pg-")
    os.chown(directory, postgres.pw_uid, postgres.pw_gid)
    cluster = Cluster(bin_dir, directory, free_port())
    cluster.run("initdb", "-D", cluster.data, "-U", "postgres", "-A", "trust", "--no-sync")
    cluster.start()
    try:
        yield cluster
    finally:
        try:
            cluster.stop()
        except subprocess.CalledProcessError:
            pass    # already stopped by a failed test
        shutil.rmtree(directory, ignore_errors=True)


def test_an_unreachable_database_is_a_503_and_restsvc_recovers(own_postgres, tmp_path):
    app = RestApp(make_settings(own_postgres.url, tmp_path, {"svc.demo-data": True}))
    try:
        c = Client(app)
        auth = {"Authorization": f"Bearer {get_token(c)}"}
        assert c.get("/rest/entities/Customer?limit=1", headers=auth).status_code == 200
        own_postgres.stop()
        token_request = {"data": {"grant_type": "client_credentials"},
                         "headers": {"Authorization": basic("demo-client", "demo-secret")}}
        for method, path, request in (
                ("get", "/rest/entities/Customer", {"headers": auth}),
                ("post", "/oauth2/token", token_request),
                ("post", "/rest/entities/Customer", {"json": {"name": "x"}, "headers": auth})):
            response = getattr(c, method)(path, **request)
            assert response.status_code == 503, (path, response.get_data(as_text=True))
            assert response.headers["Retry-After"] == "2"
            assert response.json["error"] == "Service unavailable"
        own_postgres.start()
        assert c.get("/rest/entities/Customer?limit=1", headers=auth).status_code == 200
        assert c.post("/rest/entities/Customer", json={"name": "back"}, headers=auth).status_code == 201
        own_postgres.stop()     # a restart while idle: the pooled connections are dead
        own_postgres.start()
        answers = [c.get("/rest/entities/Customer?limit=1", headers=auth).status_code
                   for _ in range(3)]
        # At most a stale pooled connection's one 503 (each drops all idle ones).
        assert set(answers) <= {200, 503} and answers[1:] == [200, 200]
    finally:
        app.database.close_all()
