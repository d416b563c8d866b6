"""Running a bundle (``restsvc bundle``) the way a machine with only Python
would: the interpreter this virtualenv was made from, isolated (``-I``) and
without any site-packages (``-S``), in a folder of its own."""
import json
import subprocess
import sys
import zipfile
from contextlib import contextmanager

import pytest
from conftest import PG_URL, postgres_schema
from servers import Server, free_port, stop, wait_until_ready


def plain_python():
    """The interpreter without the virtualenv: its own standard library only."""
    executable = getattr(sys, "_base_executable", sys.executable)
    if sys.prefix == sys.base_prefix and executable == sys.executable:
        pytest.skip("tests run outside a virtualenv: no plain interpreter to compare with")
    return executable


def _environ(cwd, env):
    return {"PATH": "/usr/bin:/bin", "HOME": str(cwd), **(env or {})}


def run_bundle(bundle, cwd, *args, env=None):
    return subprocess.run([plain_python(), "-I", "-S", str(bundle), *args], cwd=cwd,
                          env=_environ(cwd, env), capture_output=True, text=True, timeout=120, check=False)


@contextmanager
def bundle_database(bundle):
    """SQLite: the bundled settings' own default (under the working folder);
    PostgreSQL: a schema of its own, by RESTSVC_DATABASE_URL."""
    if not PG_URL:
        yield {}
        return
    if not json.loads(zipfile.ZipFile(bundle).read("restsvc-bundle.json"))["drivers"]:
        pytest.skip("psycopg2 is not importable by the plain interpreter: it is not installed "
                    "where the bundle was built, so the bundle carries no PostgreSQL driver")
    with postgres_schema("restsvc_bundle") as url:
        yield {"RESTSVC_DATABASE_URL": url}


@contextmanager
def serving_bundle(bundle, cwd, env, client=("demo-client", "demo-secret")):
    """``python -I -S FILE serve`` (a real gunicorn), with a token of ``client``."""
    port = free_port()
    log_path = cwd.parent / f"{cwd.name}-server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [plain_python(), "-I", "-S", str(bundle), "serve", "--port", str(port),
             "--workers", "1", "--drain", "0"],
            cwd=cwd, env=_environ(cwd, env), stdout=log, stderr=subprocess.STDOUT)
    server = Server(port, process, log_path)
    try:
        yield wait_until_ready(server, client=client)
    finally:
        stop(server)
