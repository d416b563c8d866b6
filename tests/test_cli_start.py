"""Starting restsvc: ``gunicorn restsvc.wsgi:app`` from an application folder
anywhere, what ``restsvc new`` says, and ``restsvc routes`` refusing what
``restsvc serve`` refuses, and the README's first model change migrating as shown."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import restsvc
import test_starter
from conftest import basic
from docs_support import README
from servers import free_port
from restsvc.cli import main
from restsvc.db import display_url

PACKAGE = Path(restsvc.__file__).parent


def new_app(directory, capsys):
    module = f"start_{uuid.uuid4().hex[:8]}_app"
    assert main(["new", str(directory), "--module", module]) == 0
    out = capsys.readouterr().out
    client_id = next(line.split()[-1] for line in out.splitlines()
                     if line.startswith("client id:"))
    secret = next(line.split()[2] for line in out.splitlines()
                  if line.startswith("client secret:"))
    return client_id, secret, out


def request(port, method, path, body=None, headers=None):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_gunicorn_serves_restsvc_wsgi_app_from_an_application_folder_outside_the_checkout(
        tmp_path, capsys):
    # restsvc as installed elsewhere: only the package, no checkout (no root wsgi.py).
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "restsvc", ignore=shutil.ignore_patterns("__pycache__"))
    folder = tmp_path / "notes"
    client_id, secret, _ = new_app(folder, capsys)
    port = free_port()
    with test_starter.database(tmp_path) as database:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("RESTSVC_")},
               **database, "PYTHONPATH": str(site), "RESTSVC_CONFIG": "restsvc.yaml",
               "RESTSVC_DRAIN_SECONDS": "0"}
        log_path = tmp_path / "gunicorn.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", "python:restsvc.gunicorn_config",
                 "--bind", f"127.0.0.1:{port}", "--workers", "1", "restsvc.wsgi:app"],
                cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    status, body = request(port, "POST", "/oauth2/token",
                                           b"grant_type=client_credentials",
                                           {"Authorization": basic(client_id, secret),
                                            "Content-Type": "application/x-www-form-urlencoded"})
                    break
                except OSError:
                    assert process.poll() is None and time.monotonic() < deadline, \
                        log_path.read_text()
                    time.sleep(0.2)
            assert status == 200, body
            auth = {"Authorization": f"Bearer {json.loads(body)['access_token']}",
                    "Content-Type": "application/json"}
            status, body = request(port, "POST", "/rest/entities/Note",
                                   json.dumps({"title": "served"}).encode(), auth)
            assert status == 201, body
            status, body = request(port, "GET", "/rest/entities/Note", headers=auth)
            assert [note["title"] for note in json.loads(body)] == ["served"]
            # The package that served is the copy, not the checkout.
            assert str(site) in subprocess.run(
                [sys.executable, "-c", "import restsvc; print(restsvc.__file__)"], env=env,
                cwd=folder, capture_output=True, text=True).stdout
        finally:
            process.terminate()
            process.wait(timeout=20)
        startup = log_path.read_text()
        assert "ModuleNotFoundError" not in startup
        assert f"listening: http://127.0.0.1:{port}" in startup, startup
        assert f"settings: {(folder / 'restsvc.yaml').resolve()}" in startup, startup


def test_serve_help_names_the_wsgi_application_for_a_gunicorn_started_by_hand(capsys):
    try:
        main(["serve", "--help"])
    except SystemExit:
        pass
    out = " ".join(capsys.readouterr().out.split())
    assert "restsvc.wsgi:app" in out and "RESTSVC_CONFIG" in out


def test_new_prints_the_new_folders_absolute_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, _, out = new_app(Path("mine"), capsys)
    assert f"new application in {(tmp_path / 'mine').resolve()}" in out


def application_folder(directory, source):
    """A settings file and an application module of ``source`` beside it
    (a module name of its own: tests share one process)."""
    module = f"app_{uuid.uuid4().hex[:8]}"
    (directory / f"{module}.py").write_text(source)
    config = directory / "restsvc.yaml"
    config.write_text(f"svc:\n  application: {module}:application\n"
                      f"  secret-key: a-long-enough-secret-key\n  data-dir: {directory}\n")
    return config


def test_routes_refuses_a_model_serve_refuses_with_the_same_message(tmp_path, capsys):
    config = application_folder(tmp_path, (
        "from restsvc import Application, ResourceRole\n"
        "application = Application(entities=(), resource_roles=(ResourceRole(\n"
        "    'odd', 'Odd', entities={'Nowhere': '*'}),))\n"))
    assert main(["--config", str(config), "initdb"]) == 2
    served = capsys.readouterr().err
    assert main(["--config", str(config), "routes"]) == 2
    captured = capsys.readouterr()
    assert captured.err == served and "Nowhere" in served
    assert captured.out == ""


def test_serve_logs_one_startup_summary_line_per_fact_once(tmp_path, database_url):
    from servers import gunicorn_server
    with gunicorn_server(tmp_path, database_url, workers=2) as server:
        pass
    log = server.log()
    for fact in (f"settings: {(tmp_path / 'server.yaml').resolve()}",
                 f"database: {display_url(database_url)}", "migrations: ", "demo data: ",
                 f"listening: http://127.0.0.1:{server.port}", "workers: 2 (gthread, 16 threads"):
        assert log.count(fact) == 1, (fact, log)


def test_the_logged_database_url_has_no_password():
    assert display_url("postgresql://app:s3cr%40t@db.example:5432/shop?sslmode=require") == \
        "postgresql://app:***@db.example:5432/shop?sslmode=require"
    assert display_url("sqlite:///var/restsvc.db") == "sqlite:///var/restsvc.db"


def test_the_readmes_first_model_change_migrates_as_it_shows(tmp_path, capsys, monkeypatch):
    """README.md "First ten minutes", steps 5 to 7: ``restsvc new notes``, the
    attribute step 6 adds, then ``migrate --plan`` and ``migrate`` print what
    the README shows."""
    text = README.read_text(encoding="utf-8")
    attribute = re.search(r"\(`(due = peewee\.\w+\(null=True\))`\)", text).group(1)
    plan, applied = re.findall(r"restsvc --config notes/restsvc\.yaml migrate(?: --plan)? +# (.+)$",
                               text, flags=re.MULTILINE)
    monkeypatch.chdir(tmp_path)
    new_app(Path("notes"), capsys)
    (module_path,) = Path("notes").glob("start_*_app.py")
    config = ["--config", "notes/restsvc.yaml"]
    with test_starter.database(tmp_path) as environ:
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        assert main([*config, "initdb"]) == 0, capsys.readouterr().err
        source = module_path.read_text(encoding="utf-8")
        done = "    done = peewee.BooleanField(default=False)\n"
        module_path.write_text(source.replace(done, f"{done}    {attribute}\n"), encoding="utf-8")
        sys.modules.pop(module_path.stem, None)       # the edited module, as a new process reads it
        capsys.readouterr()
        assert main([*config, "migrate", "--plan"]) == 0
        assert " / ".join(capsys.readouterr().out.strip().splitlines()) == plan
        sys.modules.pop(module_path.stem, None)
        assert main([*config, "migrate"]) == 0
        assert capsys.readouterr().out.startswith(applied)
