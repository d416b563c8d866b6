"""What the docs page shows before one signs in: the API's title and
description, how to sign in, and the operations that need no token, with
only the schemas those use (the model stays behind the sign-in)."""
import json
import re
from collections.abc import Collection
from typing import Any

_REF = re.compile(r'"#/components/(schemas|responses)/([^"]+)"')
_FLOWS = (("client_credentials", "**clientCredentials** (a registered client's id and secret)"),
          ("password", "**password** (your user name and password, with a client's id and "
                       "secret)"))


def public_document(detailed: dict[str, Any], grants: Collection[str]) -> dict[str, Any]:
    """The public part of the whole detailed document (built without a caller)."""
    paths = {}
    for path, methods in detailed["paths"].items():
        kept = {method: op for method, op in methods.items() if not _needs_token(op)}
        if kept:
            paths[path] = kept
    components = detailed["components"]
    schemas, responses = _reachable(paths, components)
    used_tags = {tag for methods in paths.values() for op in methods.values()
                 for tag in op.get("tags", ())}
    info = dict(detailed["info"])
    info["description"] = f"{info.get('description', '')}\n\n{sign_in_text(grants)}".strip()
    return {**detailed, "info": info, "paths": paths,
            "tags": [tag for tag in detailed["tags"] if tag["name"] in used_tags],
            "components": {**components,
                           "schemas": {n: s for n, s in components["schemas"].items()
                                       if n in schemas},
                           "responses": {n: r for n, r in components["responses"].items()
                                         if n in responses}}}


def sign_in_text(grants: Collection[str]) -> str:
    flows = [text for grant, text in _FLOWS if grant in grants]
    ways = " or ".join(flows)
    get = f"get a token with {ways}, or paste" if flows else "paste"
    return (f"**Sign in** to see the operations your roles allow: press **Authorize**, {get} "
            f"a token into **bearerAuth**. Listed below until then: what needs no token.")


def _needs_token(op: dict[str, Any]) -> bool:
    return any("bearerAuth" in requirement for requirement in op.get("security", ()))


def _reachable(paths: dict[str, Any],
               components: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The component schemas and responses ``paths`` refer to, through each other."""
    found: dict[str, set[str]] = {"schemas": set(), "responses": set()}
    pending = [paths]
    while pending:
        for kind, name in _REF.findall(json.dumps(pending.pop())):
            if name not in found[kind] and name in components.get(kind, {}):
                found[kind].add(name)
                pending.append(components[kind][name])
    return found["schemas"], found["responses"]
