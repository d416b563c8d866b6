"""CPU instructions per request, restsvc and baseline, counted by valgrind (callgrind).

    python tests/benchmark/instructions.py [--only get] [--requests 1000] [--postgres URL]

Timings on a shared machine move with its load; instruction counts do not.
For each app and operation the script runs a process that answers N and then
N + ``--requests`` requests in process under ``valgrind --tool=callgrind``
and divides the difference by ``--requests`` (start-up cancels out), the
heap frozen after start as a served worker's is (``inprocess.as_served``). Needs
valgrind (``apt-get install valgrind``); slow: about a minute per figure.
With ``--postgres URL`` restsvc runs on PostgreSQL (a schema of its own,
dropped afterwards; the baseline stays on SQLite, as ``run.py --postgres``):
only restsvc's process is counted, not the server's.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE_REQUESTS = 50


def serve(workdir, app_name, operation, count):
    """In the measured process: answer ``count`` requests of ``operation``."""
    from dataset import REPO  # noqa: F401  (puts this checkout on sys.path)
    from inprocess import as_served, repeat
    from run import BODY, OPERATIONS
    state = json.loads((workdir / "state.json").read_text())
    os.environ.update(state["env"])
    if app_name == "restsvc":
        from restsvc.app import RestApp
        from restsvc.settings import load_settings
        app = RestApp(load_settings(environ=state["env"]))
    else:
        os.environ["BASELINE_DATABASE"] = str(workdir / "baseline.db")
        os.environ["BASELINE_SECRET_KEY"] = state["env"]["RESTSVC_SECRET_KEY"]
        from baseline import app
    as_served(app, slowed=True)
    method, path, first = OPERATIONS[operation]
    paths = [(first or path).format(id=i) for i in state["ids"]] if first else [path]
    repeat(app, method, paths, state["token"], BODY if method == "POST" else None, count)


def instructions(workdir, app_name, operation, count):
    out = workdir / f"callgrind.{app_name}.{operation}.{count}"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    sys.executable, __file__, "--serve", str(workdir), app_name, operation,
                    str(count)], check=True, capture_output=True, cwd=HERE)
    summary = re.search(r"^summary:\s*(\d+)", out.read_text(), re.MULTILINE)
    return int(summary.group(1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--postgres", metavar="URL",
                        help="restsvc on this PostgreSQL database (a schema of its own)")
    parser.add_argument("--serve", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        workdir, app_name, operation, count = args.serve
        return serve(Path(workdir), app_name, operation, int(count))
    if not shutil.which("valgrind"):
        print("valgrind is not installed: apt-get install -y valgrind", file=sys.stderr)
        return 2
    from baseline_data import build
    from dataset import prepare, scratch, share_token, tag_shape
    from run import OPERATIONS
    with scratch("restsvc-instructions-") as (workdir, cleanups):
        app, env, token, ids = prepare(workdir)
        if args.postgres:   # the same data on PostgreSQL; the baseline stays on SQLite
            from growth import postgres_schema
            url, drop_schema = postgres_schema(args.postgres)
            cleanups.append(drop_schema)
            app, env, token, _ = prepare(workdir, url, env["RESTSVC_SECRET_KEY"])
            cleanups.insert(0, app.database.close_all)
        build(workdir / "restsvc.db", workdir / "baseline.db", tag_shape(app, token))
        if args.postgres:
            share_token(app, token, workdir / "baseline.db")
        (workdir / "state.json").write_text(json.dumps({"env": env, "token": token, "ids": ids}))
        print(f"{'instructions per request':<26}{'restsvc':>12}{'baseline':>12}{'ratio':>8}")
        for operation in args.only or OPERATIONS:
            figures = []
            for app_name in ("restsvc", "baseline"):
                low = instructions(workdir, app_name, operation, BASE_REQUESTS)
                high = instructions(workdir, app_name, operation, BASE_REQUESTS + args.requests)
                figures.append((high - low) / args.requests)
            print(f"{operation:<26}{figures[0]:>12,.0f}{figures[1]:>12,.0f}"
                  f"{figures[0] / figures[1]:>8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
