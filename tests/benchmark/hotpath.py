"""``run.py --profile N``: restsvc in process under cProfile: where a request's time goes."""
import cProfile
import pstats
import time

from werkzeug.test import Client


def profile(app, token, requests, count, top=25):
    """``requests``: {label: (method, [paths], body or None)}; prints the top functions by
    cumulative time for ``count`` requests of each."""
    client, headers, status = Client(app), {"Authorization": f"Bearer {token}"}, 0
    for label, (method, paths, body) in requests.items():
        paths = [paths[i % len(paths)] for i in range(count)]
        response = client.open(paths[0], method=method, headers=headers, data=body)
        if not 200 <= response.status_code < 300:
            print(f"{label}: restsvc answered {response.status_code} {response.text[:200]}")
            status = 1
            continue
        profiler, started = cProfile.Profile(), time.perf_counter()
        profiler.enable()
        for path in paths:
            client.open(path, method=method, headers=headers, data=body)
        profiler.disable()
        elapsed = time.perf_counter() - started
        print(f"\n== {label}: {count} requests in process, "
              f"{count / elapsed:.0f} req/s under the profiler")
        pstats.Stats(profiler).strip_dirs().sort_stats("cumulative").print_stats(top)
    return status
