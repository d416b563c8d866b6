"""Imports go one way (ARCHITECTURE.md rule 15): no cycle between restsvc's
modules, and no module imports a package layered above its own.

Every import counts, wherever it is written: at the top, inside a function
(an import put there to dodge a cycle is that cycle) and under
``if TYPE_CHECKING:`` (a type names the module all the same). A package's
``__init__`` importing its own submodules is not a cycle: that is how a
package gathers what it offers.
"""
import ast
from pathlib import Path

import restsvc

ROOT = Path(restsvc.__file__).resolve().parent

# Top to bottom: each top-level module or package of restsvc, with its layer.
# A module may import its own layer and those below, never one above.
LAYERS = {
    # The process: builds everything once and serves it (WSGI app, command
    # line, gunicorn hooks, the public declaration API, the demo application).
    # Backup and restore of a whole deployment run here too, on a built app.
    "entry": ("app", "cli", "clibase", "datacommands", "keycommands", "tenantcommands", "bundle",
              "streamcommands", "bundle_boot", "starter", "gunicorn_config", "wsgi", "__init__", "demo", "backup"),
    # Thin handlers, one module per API area (their route rules, HTTP in and out).
    "api": ("api",),
    # HTTP plumbing the handlers share: responses, request bodies and uploads,
    # the router, proxies, what handlers see of the app, per-request observation.
    "http": ("web", "request", "parts", "responses", "bodies", "uploads", "router", "proxies",
             "observability"),
    # Domain packages: features built on the data layer (no Werkzeug).
    "domain": ("events", "files", "services", "reports", "exports", "openapi", "idempotency",
               "health", "application"),
    # The only way to read and write entities (permissions applied in it, rule 16).
    "data": ("data",),
    # Who calls and what they may do (tokens, clients, roles, policies): the
    # data layer enforces its permissions, so it sits below data.
    "security": ("security",),
    # Metadata and the values it is made of (datatypes), and the settings
    # (their values parsed with the model's datatypes).
    "model": ("model", "values", "settings", "settinggroups"),
    # The database (its statements, the PostgreSQL pool), its schema and
    # migrations, and what knows no model: the
    # error family, JSON text, numbers from input, paths, private files, XML;
    # the bound of SQLite's write-ahead log, the queue for its write lock.
    "db": ("db", "statements", "pgpool", "schema", "errors", "jsonio", "numbers", "paths",
           "privatefiles", "xmlfile", "walbound", "writequeue"),
}
ORDER = list(LAYERS)        # top first


def _modules():
    """{dotted name: (path, is a package's __init__)} of every module of restsvc."""
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ("restsvc",) + path.relative_to(ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


MODULES = _modules()


def _existing(name):
    """The module ``name`` loads: itself, or the package (module) it is a name of."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _targets(module, is_package, node):
    if isinstance(node, ast.Import):
        return [_existing(alias.name) for alias in node.names
                if alias.name == "restsvc" or alias.name.startswith("restsvc.")]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source != "restsvc" and not source.startswith("restsvc."):
        return []
    return [f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else _existing(source)
            for alias in node.names]


def _imports():
    """{module: {imported module: line}}, a package's own submodules left out."""
    graph = {}
    for module, (path, is_package) in MODULES.items():
        edges = graph[module] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, is_package, node):
                    if target != module and not (is_package and target.startswith(module + ".")):
                        edges.setdefault(target, node.lineno)
    return graph


def _cycles(graph):
    """One cycle (a path that ends where it starts) per strongly connected
    group of modules (Tarjan), each as [module, ..., module]."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(start):
        # Iterative Tarjan: (node, iterator over its targets).
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return [_path_in(graph, group) for group in groups]


def _path_in(graph, group):
    """A shortest cycle through the first (by name) module of ``group``."""
    start = min(group)
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for target in sorted(graph[path[-1]]):
            if target == start:
                return path + [start]
            if target in group and target not in seen:
                seen.add(target)
                paths.append(path + [target])
    return [start]


def _layer(module):
    top = module.split(".")[1] if "." in module else "__init__"
    for number, (name, members) in enumerate(LAYERS.items()):
        if top in members:
            return number, name
    return None


GRAPH = _imports()


def test_every_top_level_module_has_a_layer():
    missing = sorted({module.split(".")[1] for module in MODULES
                      if "." in module and _layer(module) is None})
    assert not missing, f"add these to LAYERS in {Path(__file__).name}: {missing}"


def test_no_module_imports_one_that_imports_it_back():
    cycles = _cycles(GRAPH)
    lines = [" -> ".join(f"{module}:{GRAPH[module][following]}" if following else module
                         for module, following in zip(cycle, cycle[1:] + [None]))
             for cycle in cycles]
    assert not cycles, "import cycles (module:line of the import that goes on):\n" + "\n".join(lines)


def test_no_module_imports_a_layer_above_its_own():
    wrong = []
    for module, targets in sorted(GRAPH.items()):
        own = _layer(module)
        for target, line in sorted(targets.items()):
            above = _layer(target)
            if own is not None and above is not None and above[0] < own[0]:
                wrong.append(f"{module}:{line} ({own[1]}) imports {target} ({above[1]})")
    assert not wrong, "imports against the layers (rule 15):\n" + "\n".join(wrong)


def test_the_walk_sees_imports_inside_functions_and_type_checking():
    assert "restsvc.files.objects" in GRAPH["restsvc.files.configured"]  # inside a function
    assert "restsvc.app" in GRAPH["restsvc.wsgi"]
    assert "restsvc.security.gate" in GRAPH["restsvc.web"]              # under TYPE_CHECKING
    assert _cycles({"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}) == [
        ["a", "b", "c", "a"]]
