"""The benchmark's processes: gunicorn servers on free loopback ports, and wrk."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(name, target, env, log, cwd):
    """(name, process, base URL) of ``gunicorn -w 2 -k sync <target>`` in its own session."""
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "-w", "2", "-k", "sync", "--log-level", "warning",
               "-b", f"127.0.0.1:{port}", *target]
    with open(log, "w") as out:
        proc = subprocess.Popen(command, cwd=cwd, env={**os.environ, **env}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return name, proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    stop_server(proc)
    raise SystemExit(f"{name} did not start; its log {log}:\n{log.read_text()[-2000:]}")


def stop_server(proc):
    """The server's whole process group: master and workers."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def one_request(url, method, token, body=None):
    """(status, parsed JSON or text) of one request."""
    request = urllib.request.Request(url, method=method, data=body and body.encode(),
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text = response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode("utf-8", "replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


class Wrk:
    """``wrk -t2 -c16`` with the run's bearer token; ``scripts`` maps a path to its Lua file."""

    def __init__(self, token, scripts):
        self.token, self.scripts = token, scripts

    def rate(self, base_url, path, seconds):
        """Requests/sec, or RuntimeError naming what went wrong (also any non-2xx answer)."""
        return self.run(base_url, path, seconds)[0]

    def run(self, base_url, path, seconds):
        """(requests/sec, requests answered), or RuntimeError naming what went wrong
        (also any non-2xx answer)."""
        command = ["wrk", "-t2", "-c16", f"-d{seconds}s",
                   "-H", f"Authorization: Bearer {self.token}"]
        command += ["-s", str(self.scripts[path])] if path in self.scripts else []
        try:
            done = subprocess.run(command + [base_url + path], capture_output=True, text=True,
                                  timeout=seconds + 30)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"wrk did not finish within {seconds + 30}s") from None
        output = done.stdout + done.stderr
        rate = re.search(r"Requests/sec:\s*([\d.]+)", output)
        count = re.search(r"(\d+) requests in", output)
        bad = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", output)
        errors = re.search(r"Socket errors:.*", output)
        if done.returncode != 0 or not rate or not count:
            raise RuntimeError(f"wrk failed: {output.strip()[-500:]}")
        if bad or errors:
            raise RuntimeError(" ".join(([f"{bad.group(1)} non-2xx responses"] if bad else [])
                                        + ([errors.group(0)] if errors else [])))
        return float(rate.group(1)), int(count.group(1))


def _cpu_seconds(pid):
    """User + system CPU seconds of process ``pid`` so far, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime, stime


def workers_cpu(proc):
    """CPU seconds (user + system) used so far by the worker processes of the gunicorn
    master ``proc``: what serving the requests cost, without the load generator."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    return sum(filter(None, map(_cpu_seconds, children)))    # a worker just replaced: skipped


def backends_cpu(conn, application_name):
    """{pid: CPU seconds so far} of the PostgreSQL backends serving the connections named
    ``application_name`` (``pg_stat_activity``; the server runs on this machine, so its
    processes' ``/proc/<pid>/stat`` are readable): PostgreSQL's own work for one app."""
    with conn.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                       (application_name,))
        pids = [pid for pid, in cursor.fetchall()]
    return {pid: cpu for pid in pids if (cpu := _cpu_seconds(pid)) is not None}


def cpu_between(before, after):
    """CPU seconds used between two ``backends_cpu`` readings (a backend that started
    in between counts from its start)."""
    return sum(cpu - before.get(pid, 0) for pid, cpu in after.items())
