"""The applications of one's own that the README and the tutorial build, built
from the pages themselves: `restsvc new`, the page's Python as the module, its
settings and report files, then every curl example of the page run against it
and its answer checked."""
import re
import sys
import textwrap
import uuid
from contextlib import contextmanager

import yaml
from werkzeug.test import Client

from conftest import basic, close_app
from docs_support import README, TUTORIAL, examples, run
from restsvc import create_app, hash_secret, starter
from restsvc.settings import load_settings
from test_starter import database     # this run's database for an application of one's own

READER_SECRET = "reader-secret-1234"      # the tutorial's `restsvc hash-secret reader-secret-1234`


def _merge(tree, changes):
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(tree.get(key), dict):
            _merge(tree[key], value)
        else:
            tree[key] = value


@contextmanager
def _own_application(tmp_path, name, module_text, settings=(), files=None):
    """`restsvc new <name>` with the page's module, settings and files, served
    in process on this run's database."""
    directory = tmp_path / name
    module = f"{name}_{uuid.uuid4().hex[:8]}_app"      # tests share one process
    made = starter.create(directory, module=module)
    (directory / f"{module}.py").write_text(module_text, encoding="utf-8")
    config = yaml.safe_load((directory / "restsvc.yaml").read_text(encoding="utf-8"))
    config["svc"]["authserver"]["client"]["app"]["client-id"] = f"{name}-client"
    for change in settings:
        _merge(config, change)
    (directory / "restsvc.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for path, text in (files or {}).items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_text(text, encoding="utf-8")
    with database(tmp_path) as environ:
        app = create_app(load_settings(directory / "restsvc.yaml", environ=environ))
        try:
            yield app, made.client_secret
        finally:
            close_app(app)
            sys.modules.pop(module, None)
            sys.path[:] = [entry for entry in sys.path if entry != str(directory)]


def _fenced(text, language):
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def _run_examples(app, found, variables, tmp_path):
    client = Client(app)
    for example in found:
        run(client, example, variables, tmp_path)
    return variables


def test_the_tutorial_builds_its_application_and_answers_as_it_shows(tmp_path):
    text = TUTORIAL.read_text(encoding="utf-8")
    module_text = "\n\n".join(_fenced(text, "python"))
    blocks = _fenced(text, "yaml")
    settings = [yaml.safe_load(block.replace("the output of restsvc hash-secret",
                                             hash_secret(READER_SECRET)))
                for block in blocks if block.startswith("svc:")]
    [report] = [block for block in blocks if block.startswith("groups:")]
    assert "library/reports/books.yaml" in text and settings
    found = examples(TUTORIAL)
    assert len(found) >= 15
    with _own_application(tmp_path, "library", module_text, settings,
                          {"reports/books.yaml": report}) as (app, secret):
        variables = _run_examples(app, found, {"$SECRET": secret}, tmp_path)
    assert {"$TOKEN", "$AUTHOR", "$BOOK", "$READER"} <= set(variables)


def test_the_readme_application_of_ones_own_serves_as_shown(tmp_path):
    text = README.read_text(encoding="utf-8")
    section = text.split("## An application of your own\n", 1)[1].split("\n## ", 1)[0]
    [code] = [textwrap.dedent(block) for block in
              re.findall(r"((?:^ {7}.*\n|^\n)+)", section, flags=re.MULTILINE)
              if "application = Application(" in block]
    roles = re.search(r"`resource-roles:\s*([^`]+)`", " ".join(section.split())).group(1)
    found = [example for example in examples(README)
             if example.section == "An application of your own"]
    assert found
    with _own_application(tmp_path, "shop", code, [
            {"svc": {"authserver": {"client": {"app": {"resource-roles": roles}}}}}]) as (
            app, secret):
        client = Client(app)
        token = client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                            headers={"Authorization": basic("shop-client", secret)}).json
        _run_examples(app, found, {"$TOKEN": token["access_token"]}, tmp_path)

