"""schemathesis against the detailed document, every operation, every phase
(examples, coverage, fuzzing, stateful) and every check, with a valid token,
on a real server: no server error, and every answer is one the document
promises (status code, content type, headers, body schema). The checks
tests/schemathesis.toml turns off are off here too, each for its written
reason. A fixed seed and few examples per operation keep it deterministic and
short; tests/benchmark/schemathesis_full.py is the full run (25 examples)."""
import subprocess
import sys
from pathlib import Path

from servers import gunicorn_server

CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"
EXAMPLES = 3


def test_every_operation_answers_as_documented_in_every_phase(tmp_path, database_url):
    schemathesis = Path(sys.executable).parent / "schemathesis"
    with gunicorn_server(tmp_path / "server", database_url) as server:
        result = subprocess.run(
            [str(schemathesis), "--config-file", str(CONFIG), "--no-color", "run",
             f"{server.base_url}/rest/docs/openapiDetailed.json",
             "--header", f"Authorization: Bearer {server.token}",
             "--phases", "examples,coverage,fuzzing,stateful",
             "--max-examples", str(EXAMPLES), "--seed", "1"],
            capture_output=True, text=True, cwd=tmp_path, timeout=900)
    report = result.stdout
    assert "186 selected" in report or "selected /" in report, report[-3000:]
    for phase in ("Coverage", "Fuzzing", "Stateful"):
        assert phase in report, report[-3000:]
    assert result.returncode == 0, report[-12000:]
