"""``restsvc bundle``: one file that runs the demo on a machine with only Python.

The bundle is started with the interpreter this virtualenv was made from,
isolated (``-I``) and without any site-packages (``-S``), from an empty
folder: everything it runs comes from the file.
"""
import json
import os
import subprocess
import zipfile

import pytest
import yaml
from bundle_support import bundle_database, plain_python, run_bundle, serving_bundle

from restsvc.cli import main

SHIPPED = os.path.join(os.path.dirname(__file__), os.pardir, "config", "restsvc.yaml")


@pytest.fixture(scope="module")
def demo_bundle(tmp_path_factory):
    output = tmp_path_factory.mktemp("build") / "demo.pyz"
    assert main(["--config", SHIPPED, "bundle", "--output", str(output), "--extra", "docs"]) == 0
    return output


@pytest.fixture
def clean_dir(tmp_path):
    directory = tmp_path / "clean"
    directory.mkdir()
    return directory


def test_the_plain_interpreter_has_none_of_the_dependencies(clean_dir):
    """What the next tests prove rests on this: nothing comes from an installation."""
    probe = subprocess.run([plain_python(), "-I", "-S", "-c", "import werkzeug"],
                           cwd=clean_dir, capture_output=True, text=True, check=False)
    assert "No module named 'werkzeug'" in probe.stderr


def test_bundle_serves_the_demo_from_a_clean_folder(demo_bundle, clean_dir):
    with bundle_database(demo_bundle) as env, serving_bundle(demo_bundle, clean_dir, env) as server:
        status, body = server.request("GET", "/rest/entities/Customer?limit=5")
        assert status == 200, body
        assert len(json.loads(body)) == 5
        # The bundled message bundles answer, in German too.
        status, body = server.request("GET", "/rest/messages/entities/Customer",
                                      headers={"Accept-Language": "de"})
        assert status == 200 and json.loads(body)["Customer"] == "Kunde"
        # --extra docs: the documentation page's viewer came along.
        status, body = server.request("GET", "/rest/docs/assets/swagger-ui-bundle.js")
        assert status == 200 and len(body) > 100_000
    if not env:
        assert (clean_dir / "var" / "restsvc.db").is_file()


def test_bundle_runs_migrate_status(demo_bundle, clean_dir):
    with bundle_database(demo_bundle) as env:
        before = run_bundle(demo_bundle, clean_dir, "migrate", "--status", env=env)
        assert before.returncode == 0, before.stderr
        assert "no migrations recorded" in before.stdout and "pending" in before.stdout
        assert run_bundle(demo_bundle, clean_dir, "initdb", env=env).returncode == 0
        after = run_bundle(demo_bundle, clean_dir, "migrate", "--status", env=env)
        assert after.returncode == 0, after.stderr
        assert "init-schema" in after.stdout and "up to date" in after.stdout


def test_bundle_unpacks_once_into_an_owner_only_cache(demo_bundle, clean_dir):
    cache = clean_dir / "cache"
    for _ in range(2):
        result = run_bundle(demo_bundle, clean_dir, "routes",
                            env={"RESTSVC_BUNDLE_CACHE": str(cache)})
        assert result.returncode == 0 and "/rest/entities/" in result.stdout
    [unpacked] = list(cache.iterdir())
    assert unpacked.stat().st_mode & 0o077 == 0
    assert (unpacked / "config" / "restsvc.yaml").is_file()
    assert oct(demo_bundle.stat().st_mode & 0o777) == oct(0o700)


def test_bundle_refuses_an_unpacked_folder_others_may_write_to(demo_bundle, clean_dir):
    """A shared cache folder must not let another user plant the code that runs."""
    bundle_id = json.loads(zipfile.ZipFile(demo_bundle).read("restsvc-bundle.json"))["id"]
    planted = clean_dir / "cache" / f"bundle-{bundle_id}"
    (planted / "lib" / "restsvc").mkdir(parents=True)
    (planted / "lib" / "restsvc" / "cli.py").write_text("def main(): print('planted')\n")
    planted.chmod(0o777)
    result = run_bundle(demo_bundle, clean_dir, "routes",
                        env={"RESTSVC_BUNDLE_CACHE": str(clean_dir / "cache")})
    assert result.returncode != 0 and "planted" not in result.stdout
    assert "others may write to it" in result.stderr


def test_bundle_names_an_unknown_extra(tmp_path, capsys):
    assert main(["--config", SHIPPED, "bundle", "--output", str(tmp_path / "x.pyz"),
                 "--extra", "nosuch"]) == 1
    assert "--extra nosuch: restsvc has no such extra" in capsys.readouterr().err


def test_a_settings_file_outside_the_config_folder_is_refused(tmp_path, capsys):
    config = {"svc": {"secret-key": "a-test-secret-key-of-some-length",
                      "rest": {"services-config": "../elsewhere/services.xml"}}}
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "services.xml").write_text("<services/>")
    (tmp_path / "conf").mkdir()
    path = tmp_path / "conf" / "restsvc.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["--config", str(path), "bundle", "--output", str(tmp_path / "x.pyz")]) == 2
    assert "svc.rest.services-config" in capsys.readouterr().err
    assert not (tmp_path / "x.pyz").exists()
