"""A full default schemathesis run against the detailed document (issue 25, point 2).

    python tests/benchmark/schemathesis_full.py [--max-examples 25] [--seed 1]
        [--database URL] [--memory-cap-gb N]

Starts ``restsvc serve`` (the shipped settings; SQLite in a temporary
directory unless --database names a PostgreSQL URL), takes a full-access
token, and runs the ``schemathesis run`` command with all its phases and
checks at their defaults (except the checks tests/schemathesis.toml turns
off, each with its reason), a fixed seed and ``--max-examples`` examples per
operation, in an empty working folder (no replay of an earlier run's crashes
from a ``.schemathesis`` cache). Prints schemathesis' summary, its peak RSS (the largest resident
set of the child processes, from the kernel's accounting), the wall time and
the exit status (0: no failures). ``--memory-cap-gb`` limits schemathesis'
address space (for looking into a run that grows; the figures in README are
without one).
"""
import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
CONFIG = TESTS / "schemathesis.toml"
sys.path.insert(0, str(TESTS))

from servers import gunicorn_server  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-examples", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database", default="")
    parser.add_argument("--memory-cap-gb", type=float, default=0)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--output", help="write schemathesis' whole report to this file")
    args = parser.parse_args()
    schemathesis = Path(sys.executable).parent / "schemathesis"

    def cap():
        if args.memory_cap_gb:
            limit = int(args.memory_cap_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryDirectory() as directory:
        directory = Path(directory)
        database = args.database or f"sqlite:///{directory / 'restsvc.db'}"
        with gunicorn_server(directory / "server", database, workers=args.workers) as server:
            command = [str(schemathesis), "--config-file", str(CONFIG), "run",
                       f"{server.base_url}/rest/docs/openapiDetailed.json",
                       "--header", f"Authorization: Bearer {server.token}",
                       "--max-examples", str(args.max_examples), "--seed", str(args.seed),
                       "--no-color"]
            started = time.monotonic()
            result = subprocess.run(command, preexec_fn=cap, capture_output=True, text=True,
                                    cwd=directory)
            wall = time.monotonic() - started
            # Before the server stops: only schemathesis has been waited for yet.
            peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if args.output:
        Path(args.output).write_text(result.stdout)
    print(result.stdout[-6000:])
    print(result.stderr[-2000:], file=sys.stderr)
    print(f"schemathesis: exit status {result.returncode}, peak RSS {peak_mib:.0f} MiB, "
          f"wall time {wall:.0f} s ({args.max_examples} examples per operation, "
          f"seed {args.seed}, all phases)")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
