#!/usr/bin/env python3
"""Prunes the upstream Kubernetes OpenAPI v3 documents to what the tests compare against.

The tests check the server's tables (list types, merge keys, patch strategies, atomic structs)
and its generated OpenAPI documents (property names, group-version-kinds) against upstream.
The full documents are 11 MB; this keeps, per group-version document and definition, only the
property names, the `x-kubernetes-*` extensions, defaults, and what map lists' items refer to
(about a tenth of that), so the check runs on every checkout.

Usage: tools/prune_openapi.py UPSTREAM_DIR OUT_DIR
  UPSTREAM_DIR: the documents as served by kube-apiserver under /openapi/v3 (api/v1.json,
  apis/<group>/<version>.json), e.g. fetched with `kubectl get --raw /openapi/v3/apis/apps/v1`.
"""
import json
import pathlib
import sys


def item_ref(spec):
    """The definition a list's items refer to, if any."""
    items = spec.get("items", {})
    for candidate in [items] + items.get("allOf", []):
        if "$ref" in candidate:
            return candidate["$ref"]
    return None


def prune_property(spec):
    kept = {k: v for k, v in spec.items() if k.startswith("x-kubernetes-") or k == "default"}
    ref = item_ref(spec) if spec.get("x-kubernetes-list-type") == "map" else None
    if ref:
        kept["items"] = {"$ref": ref}
    return kept


def prune(schema):
    kept = {k: v for k, v in schema.items() if k.startswith("x-kubernetes-")}
    properties = schema.get("properties")
    if properties is not None:
        kept["properties"] = {name: prune_property(spec) for name, spec in properties.items()}
    return kept


def main(upstream, out):
    upstream, out = pathlib.Path(upstream), pathlib.Path(out)
    for path in sorted(upstream.rglob("*.json")):
        doc = json.loads(path.read_text())
        schemas = doc.get("components", {}).get("schemas", {})
        pruned = {"components": {"schemas": {name: prune(s) for name, s in sorted(schemas.items())}}}
        target = out / path.relative_to(upstream)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(pruned, indent=None, separators=(",", ":"), sort_keys=True) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
