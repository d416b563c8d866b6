"""The declaration API: an application needs only what ``restsvc`` exports."""
import ast
from pathlib import Path

import restsvc

DEMO = Path(restsvc.__file__).parent / "demo"


def test_the_demo_application_imports_only_the_public_api():
    for path in sorted(DEMO.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert not node.module.startswith("restsvc.") or node.module.startswith("restsvc.demo"), \
                    f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                assert all(not alias.name.startswith("restsvc.") for alias in node.names), path.name


def test_everything_exported_exists():
    assert all(hasattr(restsvc, name) for name in restsvc.__all__)
