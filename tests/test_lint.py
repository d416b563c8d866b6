"""ruff and mypy over the checkout, as part of the test command (.ci/run runs it).

    python -m ruff check
    python -m mypy --strict restsvc tests/typed_app.py

Their settings are in pyproject.toml ([tool.ruff]) and setup.cfg ([mypy]):
``--strict`` holds for all of restsvc and tests/typed_app.py, a test
application that uses every public name, except the read-pipeline modules
setup.cfg names (checked where annotated until issue 38 makes them one).
Both come with the ``test`` extra; mypy keeps its cache in ``.mypy_cache``
of the checkout, so a second run takes seconds.
"""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(tool, *arguments):
    if importlib.util.find_spec(tool) is None:
        pytest.fail(f"{tool} is not installed: pip install -e '.[test]'")
    result = subprocess.run([sys.executable, "-m", tool, *arguments], cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        pytest.fail(f"{tool} {' '.join(arguments)}:\n{result.stdout}{result.stderr}", pytrace=False)


def test_ruff_finds_nothing():
    run("ruff", "check")


def test_mypy_strict_passes_on_the_demo_and_the_typed_application():
    run("mypy", "--strict", "restsvc", "tests/typed_app.py")
