"""``run.py --profile N``: restsvc in process under cProfile: where a request's time goes."""
import cProfile
import pstats
import time

from inprocess import one_answer, repeat


def profile(app, token, requests, count, top=30):
    """``requests``: {label: (method, [paths], body or None)}; prints the top functions by
    cumulative and by own time for ``count`` WSGI calls of each (no client in between)."""
    status = 0
    for label, (method, paths, body) in requests.items():
        answer_status, payload = one_answer(app, method, paths[0], token, body)
        if not answer_status.startswith("2"):
            print(f"{label}: restsvc answered {answer_status} {payload[:200]!r}")
            status = 1
            continue
        profiler, started = cProfile.Profile(), time.perf_counter()
        profiler.enable()
        repeat(app, method, paths, token, body, count)
        profiler.disable()
        elapsed = time.perf_counter() - started
        print(f"\n== {label}: {count} requests in process, "
              f"{elapsed / count * 1e6:.0f} µs each under the profiler")
        stats = pstats.Stats(profiler).strip_dirs()
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top)
    return status
