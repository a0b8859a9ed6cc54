#!/usr/bin/env python3
"""Generates src/protobuf/messages.txt: how the protobuf encoding of every built-in kind the
server serves maps to its JSON form.

The Go types of Kubernetes carry everything needed in their struct tags: the protobuf field
number (`protobuf:"bytes,3,opt,name=..."`), the JSON name and `omitempty` (`json:"...,omitempty"`),
whether a field is inlined in JSON (`json:",inline"`), and through the Go type whether it is a
pointer, a list, a map, or a nested message. (The wire type written in the tag is not reliable;
the Go type decides.) The table keeps, per message, one line per field:

    <number> <json name or "."> <one|rep|map> <type> <flags>

where type is a scalar (string, bool, int32, int64, double, bytes), a special encoding (time,
microtime, quantity, intorstring, raw, duration, strings, schemaorarray, schemaorbool,
schemaorstrings) or a message name, and flags are "z" (a Go value field with omitempty: the zero
value means absent), "i" (inlined into the parent's JSON) or "-".

Usage: protobuf_table.py API_DIR APIMACHINERY_DIR APIEXTENSIONS_DIR AGGREGATOR_DIR > src/protobuf/messages.txt
with checkouts of kubernetes/api, kubernetes/apimachinery, kubernetes/apiextensions-apiserver and
kubernetes/kube-aggregator at the release whose types k8s-openapi serves (v0.33.0 for
k8s-openapi's v1_33).
"""

import os
import re
import sys

# Packages read: Go import path -> (directory key, OpenAPI definition prefix).
def packages(api, machinery, extensions, aggregator):
    result = {}
    for group_version in [
        "core/v1", "admissionregistration/v1", "apps/v1", "authentication/v1", "authorization/v1",
        "autoscaling/v1", "autoscaling/v2", "batch/v1",
        "certificates/v1", "coordination/v1", "discovery/v1", "events/v1", "networking/v1", "node/v1",
        "policy/v1", "rbac/v1", "scheduling/v1", "storage/v1",
    ]:
        group, version = group_version.split("/")
        result["k8s.io/api/" + group_version] = (os.path.join(api, group, version), f"io.k8s.api.{group}.{version}")
    result["k8s.io/apimachinery/pkg/apis/meta/v1"] = (
        os.path.join(machinery, "pkg/apis/meta/v1"), "io.k8s.apimachinery.pkg.apis.meta.v1")
    result["k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"] = (
        os.path.join(aggregator, "pkg/apis/apiregistration/v1"), "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1")
    result["k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"] = (
        os.path.join(extensions, "pkg/apis/apiextensions/v1"),
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1")
    return result

# The kinds served (crates/bosun-apiserver/src/registry/builtin.rs), plus Scale and TokenRequest
# (the bodies of the scale and token subresources).
ROOTS = [
    ("k8s.io/api/core/v1", k) for k in [
        "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node", "PersistentVolumeClaim",
        "PersistentVolume", "Pod", "PodTemplate", "ReplicationController", "ResourceQuota", "Secret",
        "ServiceAccount", "Service"]
] + [
    ("k8s.io/api/admissionregistration/v1", k) for k in [
        "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration"]
] + [
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "CustomResourceDefinition"),
    ("k8s.io/kube-aggregator/pkg/apis/apiregistration/v1", "APIService"),
] + [
    ("k8s.io/api/apps/v1", k) for k in ["ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"]
] + [
    ("k8s.io/api/authentication/v1", k) for k in ["SelfSubjectReview", "TokenRequest", "TokenReview"]
] + [
    ("k8s.io/api/authorization/v1", k) for k in [
        "LocalSubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview", "SubjectAccessReview"]
] + [
    ("k8s.io/api/autoscaling/v1", "Scale"),
    ("k8s.io/api/autoscaling/v2", "HorizontalPodAutoscaler"),
    ("k8s.io/api/batch/v1", "CronJob"), ("k8s.io/api/batch/v1", "Job"),
    ("k8s.io/api/certificates/v1", "CertificateSigningRequest"),
    ("k8s.io/api/coordination/v1", "Lease"),
    ("k8s.io/api/discovery/v1", "EndpointSlice"),
    ("k8s.io/api/events/v1", "Event"),
    ("k8s.io/api/networking/v1", "IngressClass"), ("k8s.io/api/networking/v1", "Ingress"),
    ("k8s.io/api/networking/v1", "NetworkPolicy"),
    ("k8s.io/api/node/v1", "RuntimeClass"),
    ("k8s.io/api/policy/v1", "PodDisruptionBudget"),
] + [
    ("k8s.io/api/rbac/v1", k) for k in ["ClusterRoleBinding", "ClusterRole", "RoleBinding", "Role"]
] + [
    ("k8s.io/api/scheduling/v1", "PriorityClass"),
] + [
    ("k8s.io/api/storage/v1", k) for k in [
        "CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass", "VolumeAttachment"]
]

# Go types with their own protobuf and JSON encodings.
SPECIAL = {
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "Time"): "time",
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "MicroTime"): "microtime",
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "Duration"): "duration",
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "FieldsV1"): "raw",
    ("k8s.io/apimachinery/pkg/api/resource", "Quantity"): "quantity",
    ("k8s.io/apimachinery/pkg/util/intstr", "IntOrString"): "intorstring",
    ("k8s.io/apimachinery/pkg/runtime", "RawExtension"): "raw",
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSON"): "raw",
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSONSchemaPropsOrArray"): "schemaorarray",
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSONSchemaPropsOrBool"): "schemaorbool",
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSONSchemaPropsOrStringArray"):
        "schemaorstrings",
    ("k8s.io/apimachinery/pkg/types", "UID"): "string",
}

SCALARS = {
    "string": "string", "bool": "bool", "int32": "int32", "int64": "int64", "int": "int64",
    "uint32": "int64", "uint64": "int64", "float64": "double", "float32": "double", "byte": "int32",
}


class Package:
    def __init__(self, path, directory, prefix):
        self.path = path
        self.prefix = prefix
        self.structs = {}  # name -> list of (go field name, go type, tags)
        self.aliases = {}  # name -> go type expression
        self.imports = {}  # file -> {alias: path}
        self.file_of = {}
        for name in sorted(os.listdir(directory)):
            if not name.endswith(".go") or name.endswith("_test.go") or name.startswith("zz_") or \
                    name.startswith("generated"):
                continue
            self.read(os.path.join(directory, name))

    def read(self, file):
        text = open(file, encoding="utf-8").read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        lines = [re.sub(r"^\s*//.*$", "", line) for line in text.split("\n")]
        imports = {}
        block = re.search(r"^import \((.*?)^\)", "\n".join(lines), flags=re.S | re.M)
        single = re.findall(r'^import\s+(\w+\s+)?"([^"]+)"', "\n".join(lines), flags=re.M)
        entries = re.findall(r'^\s*(\w+\s+)?"([^"]+)"', block.group(1), flags=re.M) if block else []
        for alias, path in entries + single:
            imports[alias.strip() if alias.strip() else path.split("/")[-1]] = path
        self.imports[file] = imports
        i = 0
        while i < len(lines):
            line = lines[i]
            empty = re.match(r"^type (\w+) struct ?\{\}\s*$", line)
            struct = re.match(r"^type (\w+) struct \{\s*$", line)
            alias = re.match(r"^type (\w+) (=\s*)?([^{}\s][^{}]*?)\s*$", line)
            if empty:
                self.structs[empty.group(1)] = []
                self.file_of[empty.group(1)] = file
            elif struct:
                name = struct.group(1)
                fields = []
                i += 1
                while not lines[i].startswith("}"):
                    field = lines[i].strip()
                    i += 1
                    if not field:
                        continue
                    m = re.match(r"^(\w+)\s+([^`]+?)\s*(`.*`)?$", field)
                    embedded = re.match(r"^(\*?[\w.]+)\s*(`.*`)?$", field)
                    if embedded and (not m or m.group(3) is None and " " not in field.split("`")[0].strip()):
                        fields.append((None, embedded.group(1), embedded.group(2) or ""))
                    elif m:
                        fields.append((m.group(1), m.group(2), m.group(3) or ""))
                    else:
                        raise SystemExit(f"{file}: cannot read field {field!r} of {name}")
                self.structs[name] = fields
                self.file_of[name] = file
            elif alias:
                self.aliases[alias.group(1)] = alias.group(3)
                self.file_of[alias.group(1)] = file
            i += 1


def tag(tags, key):
    m = re.search(key + r':"([^"]*)"', tags)
    return m.group(1) if m else None


class Generator:
    def __init__(self, roots_dirs):
        self.packages = {path: Package(path, d, prefix) for path, (d, prefix) in roots_dirs.items()}
        self.messages = {}  # definition -> lines
        self.queue = []

    def definition(self, package, name):
        return self.packages[package].prefix + "." + name

    def resolve(self, package, file, expression):
        """Resolves a Go type expression to (shape, type) where shape is one/rep/map/pointer."""
        expression = expression.strip()
        pointer = expression.startswith("*")
        expression = expression.lstrip("*")
        if expression == "[]byte":
            return "one", "bytes", pointer
        if expression.startswith("[]"):
            shape, inner, _ = self.resolve(package, file, expression[2:])
            if shape != "one":
                raise SystemExit(f"nested list {expression} in {package}")
            return "rep", inner, pointer
        if expression.startswith("map["):
            key, value = re.match(r"map\[([^\]]+)\](.+)", expression).groups()
            key_shape, key_type, _ = self.resolve(package, file, key)
            if key_type != "string":
                raise SystemExit(f"map key {key} in {package}")
            shape, inner, _ = self.resolve(package, file, value)
            if shape == "rep" and inner == "string":
                inner = "strings"  # named []string map values travel as a message of `items`
            elif shape != "one":
                raise SystemExit(f"map value {value} in {package}")
            return "map", inner, pointer
        if "." in expression:
            alias, name = expression.split(".")
            target = self.packages[package].imports[file][alias]
        else:
            target, name = package, expression
        if (target, name) in SPECIAL:
            return "one", SPECIAL[(target, name)], pointer
        if target == package and name in SCALARS:
            return "one", SCALARS[name], pointer
        owner = self.packages.get(target)
        if owner is None:
            raise SystemExit(f"type {expression} from unread package {target}")
        if name in owner.structs:
            definition = self.definition(target, name)
            if definition not in self.messages and (target, name) not in self.queue:
                self.queue.append((target, name))
            return "one", definition, pointer
        if name in owner.aliases:
            shape, inner, _ = self.resolve(target, owner.file_of[name], owner.aliases[name])
            return shape, inner, pointer
        raise SystemExit(f"unknown type {expression} in {package}")

    def message(self, package, name):
        owner = self.packages[package]
        file = owner.file_of[name]
        lines = []
        for go_name, go_type, tags in owner.structs[name]:
            proto = tag(tags, "protobuf")
            if proto is None or proto == "-":
                continue
            number = int(proto.split(",")[1])
            json = (tag(tags, "json") or go_name or "").split(",")
            json_name = json[0] or (go_name if go_name and "inline" not in json else ".")
            if go_name is None and json_name == ".":
                pass
            shape, inner, pointer = self.resolve(package, file, go_type)
            flags = ""
            if json_name == ".":
                flags += "i"
            elif "omitempty" in json[1:] and not pointer and shape == "one" and \
                    inner in ("string", "bool", "int32", "int64", "double", "bytes"):
                flags += "z"
            lines.append(f"{number} {json_name} {shape} {inner} {flags or '-'}")
        lines.sort(key=lambda line: int(line.split()[0]))
        self.messages[self.definition(package, name)] = lines

    def run(self):
        for package, name in ROOTS:
            self.queue.append((package, name))
        while self.queue:
            package, name = self.queue.pop(0)
            if self.definition(package, name) not in self.messages:
                self.message(package, name)
        out = ["# Generated by tools/protobuf_table.py from the Go types of Kubernetes v1.33; do not edit."]
        for definition in sorted(self.messages):
            out.append("@" + definition)
            out.extend(self.messages[definition])
        return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    sys.stdout.write(Generator(packages(*sys.argv[1:])).run())


if __name__ == "__main__":
    main()
