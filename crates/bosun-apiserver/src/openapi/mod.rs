//! OpenAPI v3: the `/openapi/v3` index and one document per served group version, as
//! kubectl reads them for validation (whether PATCH takes `fieldValidation`), `kubectl explain`
//! and client-side apply (strategic merge metadata).
//!
//! The documents are generated from what is served rather than embedded from upstream's
//! published files: the paths then list exactly the served resources and subresources, custom
//! resources use the same code, and the schemas are the `k8s-openapi` types' own (the types the
//! server decodes into, generated from the same upstream definitions, with their descriptions).
//! What those schemas lack — list types, patch strategies and merge keys, atomic structs — comes
//! from the merge table, which a test checks against upstream's documents; another test checks
//! that every served kind's document has upstream's properties.

pub mod v2;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, LazyLock, OnceLock},
};

use serde_json::{Map, Value, json};

use crate::{
    registry::{BUILTINS, Catalog, ResourceInfo, VersionInfo},
    types::{ListType, table},
};

const SCHEMAS: &str = "#/components/schemas/";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// The autoscaling/v1 `Scale` object of `/scale` subresources.
pub const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
/// The body of `serviceaccounts/<name>/token`.
const TOKEN_REQUEST: &str = "io.k8s.api.authentication.v1.TokenRequest";

/// One group version's document, serialized, with its content hash.
#[derive(Debug)]
pub struct Document {
    /// The JSON text.
    pub json: String,
    /// Upper-case hex content hash (the `hash` query parameter and the ETag).
    pub hash: String,
}

impl Document {
    fn new(value: &Value) -> Self {
        let json = value.to_string();
        let hash = content_hash(json.as_bytes());
        Document { json, hash }
    }
}

/// Every group version's document, by `api/v1` / `apis/<group>/<version>`, and the OpenAPI v2
/// document made of them (on first use).
#[derive(Debug, Default)]
pub struct Documents {
    by_path: BTreeMap<String, Arc<Document>>,
    v2: OnceLock<V2>,
}

/// The OpenAPI v2 document, in both encodings.
#[derive(Debug)]
pub struct V2 {
    /// The JSON text, with its content hash.
    pub json: Document,
    /// gnostic's protobuf encoding.
    pub protobuf: Vec<u8>,
}

impl Documents {
    /// The document of a group version path.
    pub fn get(&self, path: &str) -> Option<&Arc<Document>> {
        self.by_path.get(path)
    }

    /// The OpenAPI v2 document of everything served.
    pub fn v2(&self) -> &V2 {
        self.v2.get_or_init(|| {
            let parsed: Vec<Value> =
                self.by_path.values().filter_map(|document| serde_json::from_str(&document.json).ok()).collect();
            let document = v2::document(&parsed);
            V2 { protobuf: v2::protobuf(&document), json: Document::new(&document) }
        })
    }

    /// The `/openapi/v3` index: each group version with a URL carrying its content hash.
    pub fn index(&self) -> Value {
        let paths: Map<String, Value> = self
            .by_path
            .iter()
            .map(|(path, document)| {
                (path.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", document.hash)}))
            })
            .collect();
        json!({ "paths": paths })
    }
}

/// A 128-bit FNV-1a hash in upper-case hex. Upstream uses SHA-512; clients only compare the
/// hash (it is part of the URL they cache by), so any content hash serves.
pub fn content_hash(bytes: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let hash = bytes.iter().fold(OFFSET, |hash, byte| (hash ^ u128::from(*byte)).wrapping_mul(PRIME));
    format!("{hash:032X}")
}

/// The path of a group version in `/openapi/v3/…`.
pub fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// Documents of the built-in group versions, generated once per process.
static BUILTIN_DOCUMENTS: LazyLock<BTreeMap<String, Arc<Document>>> = LazyLock::new(|| {
    let catalog = Catalog::new([]);
    group_versions(&catalog, |_| true)
        .into_iter()
        .map(|(group, version)| {
            let document = Document::new(&document(&catalog, &group, &version));
            (group_version_path(&group, &version), Arc::new(document))
        })
        .collect()
});

fn group_versions(catalog: &Catalog, wanted: impl Fn(&ResourceInfo) -> bool) -> BTreeSet<(String, String)> {
    catalog
        .resources()
        .iter()
        .filter(|info| wanted(info))
        .flat_map(|info| info.versions.iter().map(|v| (info.group.clone(), v.name.clone())))
        .collect()
}

/// The documents of everything a catalogue serves: the built-in ones, plus one per group
/// version that has custom resources (regenerated whenever the catalogue changes).
pub fn documents(catalog: &Catalog) -> Documents {
    let mut by_path = BUILTIN_DOCUMENTS.clone();
    for (group, version) in group_versions(catalog, |info| info.custom) {
        let document = Document::new(&document(catalog, &group, &version));
        by_path.insert(group_version_path(&group, &version), Arc::new(document));
    }
    Documents { by_path, v2: OnceLock::new() }
}

/// The OpenAPI v3 document of one group version.
pub fn document(catalog: &Catalog, group: &str, version: &str) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for info in catalog.resources().iter().filter(|info| info.group == group) {
        let Some(served) = info.version(version) else { continue };
        let (name, schema) = kind_schema(info, served);
        let list_name = format!("{name}List");
        if !info.create_only {
            schemas.insert(list_name.clone(), list_schema(info, version, &name));
        }
        schemas.insert(name.clone(), schema);
        let resource = Resource { info, version: served, schema: &name, list_schema: &list_name };
        resource.add_paths(&mut paths);
    }
    if paths.keys().any(|path| path.ends_with("/token")) {
        add_definition(&mut schemas, TOKEN_REQUEST);
    }
    for fixed in [STATUS, DELETE_OPTIONS, SCALE] {
        add_definition(&mut schemas, fixed);
    }
    schemas.insert(
        PATCH.to_string(),
        json!({"description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", "type": "object"}),
    );
    add_referenced(&mut schemas);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::KUBERNETES_MINOR)},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn reference(name: &str) -> Value {
    json!({ "$ref": format!("{SCHEMAS}{name}") })
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

/// The definition name and schema of a kind: the built-in type's, or one generated from the
/// CRD's schema under upstream's name (`com.example.v1.Widget` for `example.com/v1 Widget`).
fn kind_schema(info: &ResourceInfo, version: &VersionInfo) -> (String, Value) {
    let extension = json!([gvk(&info.group, &version.name, &info.kind)]);
    if let Some(name) = BUILTINS.definition_of.get(&info.key) {
        let mut schema = with_merge_extensions(name, BUILTINS.definitions.get(name).cloned().unwrap_or_default());
        schema["x-kubernetes-group-version-kind"] = extension;
        return (name.clone(), schema);
    }
    let reversed: Vec<&str> = info.group.split('.').rev().collect();
    let name = format!("{}.{}.{}", reversed.join("."), version.name, info.kind);
    let mut schema = version
        .definition
        .as_deref()
        .and_then(|d| d.pointer("/schema/openAPIV3Schema"))
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    schema["type"] = json!("object");
    let properties = schema.as_object_mut().expect("an object").entry("properties").or_insert_with(|| json!({}));
    if let Some(properties) = properties.as_object_mut() {
        properties.insert("apiVersion".into(), type_meta_property(API_VERSION_DESCRIPTION));
        properties.insert("kind".into(), type_meta_property(KIND_DESCRIPTION));
        properties.insert(
            "metadata".into(),
            json!({"allOf": [reference(OBJECT_META)], "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
        );
    }
    schema["x-kubernetes-group-version-kind"] = extension;
    (name, schema)
}

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

fn type_meta_property(description: &str) -> Value {
    json!({"description": description, "type": "string"})
}

fn list_schema(info: &ResourceInfo, version: &str, item: &str) -> Value {
    json!({
        "description": format!("{} is a list of {}.", info.list_kind, info.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": type_meta_property(API_VERSION_DESCRIPTION),
            "items": {"description": format!("List of {}.", info.plural), "type": "array", "items": reference(item)},
            "kind": type_meta_property(KIND_DESCRIPTION),
            "metadata": {"allOf": [reference(LIST_META)], "description": "Standard list metadata."},
        },
        "x-kubernetes-group-version-kind": [gvk(&info.group, version, &info.list_kind)],
    })
}

/// A built-in definition with the merge information of the table as upstream publishes it.
fn with_merge_extensions(name: &str, mut schema: Value) -> Value {
    if table::ATOMIC_STRUCTS.binary_search(&name).is_ok() {
        schema["x-kubernetes-map-type"] = json!("atomic");
    }
    for field in table::FIELDS.iter().filter(|f| f.definition == name) {
        let Some(property) = schema.pointer_mut(&format!("/properties/{}", field.property)) else { continue };
        match field.list {
            ListType::Atomic => property["x-kubernetes-list-type"] = json!("atomic"),
            ListType::Set => property["x-kubernetes-list-type"] = json!("set"),
            ListType::Map(keys) => {
                property["x-kubernetes-list-type"] = json!("map");
                property["x-kubernetes-list-map-keys"] = json!(keys);
            }
        }
        if let Some(strategy) = field.patch_strategy {
            property["x-kubernetes-patch-strategy"] = json!(strategy);
        }
        if let Some(key) = field.merge_key {
            property["x-kubernetes-patch-merge-key"] = json!(key);
        }
    }
    schema
}

fn add_definition(schemas: &mut Map<String, Value>, name: &str) {
    if !schemas.contains_key(name)
        && let Some(schema) = BUILTINS.definitions.get(name)
    {
        schemas.insert(name.to_string(), with_merge_extensions(name, schema.clone()));
    }
}

fn collect_references<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::Object(map) => {
            if let Some(target) = map.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(SCHEMAS)) {
                out.push(target);
            }
            map.values().for_each(|v| collect_references(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_references(v, out)),
        _ => {}
    }
}

/// Adds every built-in definition the schemas refer to, transitively.
fn add_referenced(schemas: &mut Map<String, Value>) {
    let mut pending: Vec<String> = schemas.keys().cloned().collect();
    while let Some(name) = pending.pop() {
        let mut found = Vec::new();
        if let Some(schema) = schemas.get(&name) {
            collect_references(schema, &mut found);
        }
        let missing: Vec<String> =
            found.into_iter().filter(|r| !schemas.contains_key(*r)).map(str::to_string).collect();
        for target in missing {
            add_definition(schemas, &target);
            if schemas.contains_key(&target) {
                pending.push(target);
            }
        }
    }
}

/// One resource at one version, for generating its paths.
struct Resource<'a> {
    info: &'a ResourceInfo,
    version: &'a VersionInfo,
    schema: &'a str,
    list_schema: &'a str,
}

fn query_parameter(name: &str, kind: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": kind, "uniqueItems": true}})
}

fn path_parameter(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "description": description, "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

const DRY_RUN: &str = "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed";
const FIELD_MANAGER: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.";
const FIELD_VALIDATION: &str = "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.";

fn write_parameters(patch: bool) -> Vec<Value> {
    let mut parameters = vec![
        query_parameter("dryRun", "string", DRY_RUN),
        query_parameter("fieldManager", "string", FIELD_MANAGER),
        query_parameter("fieldValidation", "string", FIELD_VALIDATION),
    ];
    if patch {
        parameters.push(query_parameter("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."));
    }
    parameters
}

fn list_parameters() -> Vec<Value> {
    [
        ("allowWatchBookmarks", "boolean"),
        ("continue", "string"),
        ("fieldSelector", "string"),
        ("labelSelector", "string"),
        ("limit", "integer"),
        ("resourceVersion", "string"),
        ("resourceVersionMatch", "string"),
        ("sendInitialEvents", "boolean"),
        ("timeoutSeconds", "integer"),
        ("watch", "boolean"),
    ]
    .into_iter()
    .map(|(name, kind)| query_parameter(name, kind, &format!("{name} (see the Kubernetes API conventions)")))
    .collect()
}

fn delete_parameters() -> Vec<Value> {
    vec![
        query_parameter("dryRun", "string", DRY_RUN),
        query_parameter(
            "gracePeriodSeconds",
            "integer",
            "The duration in seconds before the object should be deleted.",
        ),
        query_parameter(
            "propagationPolicy",
            "string",
            "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'.",
        ),
    ]
}

fn responses(codes: &[&str], schema: &str) -> Value {
    let content = json!({
        "application/json": {"schema": reference(schema)},
        "application/yaml": {"schema": reference(schema)},
    });
    let mut out = Map::new();
    for code in codes {
        let description = match *code {
            "201" => "Created",
            "202" => "Accepted",
            _ => "OK",
        };
        out.insert(code.to_string(), json!({"description": description, "content": content}));
    }
    out.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(out)
}

fn body(schema: &str, media_types: &[&str]) -> Value {
    let content: Map<String, Value> =
        media_types.iter().map(|m| (m.to_string(), json!({"schema": reference(schema)}))).collect();
    json!({"content": content, "required": true})
}

/// Patch media types a resource accepts (no strategic merge patch for custom resources).
fn patch_media_types(custom: bool) -> Vec<&'static str> {
    crate::patch::PATCH_MEDIA_TYPES
        .into_iter()
        .filter(|m| !custom || *m != "application/strategic-merge-patch+json")
        .collect()
}

/// `operationId` as upstream spells it: `patchAppsV1NamespacedDeploymentStatus`.
fn operation_id(verb: &str, group: &str, version: &str, namespaced: bool, kind: &str, suffix: &str) -> String {
    let group = if group.is_empty() { "core" } else { group.trim_end_matches(".k8s.io") };
    let camel: String = group
        .split(['.', '-'])
        .chain([version])
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect();
    let scope = if namespaced { "Namespaced" } else { "" };
    format!("{verb}{camel}{scope}{kind}{suffix}")
}

impl Resource<'_> {
    fn operation(&self, verb: &str, action: &str, suffix: &str, extra: Map<String, Value>, kind: Value) -> Value {
        let info = self.info;
        let mut op = Map::new();
        op.insert("tags".into(), json!([operation_id("", &info.group, &self.version.name, false, "", "")]));
        op.insert(
            "operationId".into(),
            json!(operation_id(verb, &info.group, &self.version.name, info.namespaced, &info.kind, suffix)),
        );
        op.extend(extra);
        op.insert("x-kubernetes-action".into(), json!(action));
        op.insert("x-kubernetes-group-version-kind".into(), kind);
        Value::Object(op)
    }

    fn kind(&self) -> Value {
        gvk(&self.info.group, &self.version.name, &self.info.kind)
    }

    fn add_paths(&self, paths: &mut Map<String, Value>) {
        let info = self.info;
        let prefix = format!("/{}", group_version_path(&info.group, &self.version.name));
        let namespace = if info.namespaced { "/namespaces/{namespace}" } else { "" };
        let collection = format!("{prefix}{namespace}/{}", info.plural);
        let item = format!("{collection}/{{name}}");
        let mut scope_parameters = Vec::new();
        if info.namespaced {
            scope_parameters
                .push(path_parameter("namespace", "object name and auth scope, such as for teams and projects"));
        }
        let pretty = query_parameter("pretty", "string", "If 'true', then the output is pretty printed.");
        let with = |mut list: Vec<Value>, more: &[Value]| {
            list.extend_from_slice(more);
            list
        };
        let fields = |pairs: Vec<(&str, Value)>| -> Map<String, Value> {
            pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
        };
        let object_types = ["application/json", "application/yaml"];
        if info.create_only {
            let create = self.operation(
                "create",
                "post",
                "",
                fields(vec![
                    ("description", json!(format!("create a {}", info.kind))),
                    ("parameters", json!(write_parameters(false))),
                    ("requestBody", body(self.schema, &object_types)),
                    ("responses", responses(&["200", "201", "202"], self.schema)),
                ]),
                self.kind(),
            );
            let parameters = with(scope_parameters, std::slice::from_ref(&pretty));
            paths.insert(collection, json!({"post": create, "parameters": parameters}));
            return;
        }
        paths.insert(
            collection.clone(),
            json!({
                "get": self.operation("list", "list", "", fields(vec![
                    ("description", json!(format!("list or watch objects of kind {}", info.kind))),
                    ("parameters", json!(list_parameters())),
                    ("responses", responses(&["200"], self.list_schema)),
                ]), self.kind()),
                "post": self.operation("create", "post", "", fields(vec![
                    ("description", json!(format!("create a {}", info.kind))),
                    ("parameters", json!(write_parameters(false))),
                    ("requestBody", body(self.schema, &object_types)),
                    ("responses", responses(&["200", "201", "202"], self.schema)),
                ]), self.kind()),
                "delete": self.operation("deleteCollection", "deletecollection", "", fields(vec![
                    ("description", json!(format!("delete collection of {}", info.kind))),
                    ("parameters", json!(with(delete_parameters(), &list_parameters()))),
                    ("requestBody", body(DELETE_OPTIONS, &object_types)),
                    ("responses", responses(&["200"], STATUS)),
                ]), self.kind()),
                "parameters": with(scope_parameters.clone(), std::slice::from_ref(&pretty)),
            }),
        );
        if info.namespaced {
            paths.insert(
                format!("{prefix}/{}", info.plural),
                json!({
                    "get": self.operation("list", "list", "ForAllNamespaces", fields(vec![
                        ("description", json!(format!("list or watch objects of kind {}", info.kind))),
                        ("parameters", json!(list_parameters())),
                        ("responses", responses(&["200"], self.list_schema)),
                    ]), self.kind()),
                    "parameters": [pretty.clone()],
                }),
            );
        }
        let item_parameters =
            with(vec![path_parameter("name", &format!("name of the {}", info.kind))], &scope_parameters);
        let item_parameters = with(item_parameters, std::slice::from_ref(&pretty));
        let patch_types = patch_media_types(info.custom);
        let mut item_path = json!({
            "get": self.operation("read", "get", "", fields(vec![
                ("description", json!(format!("read the specified {}", info.kind))),
                ("responses", responses(&["200"], self.schema)),
            ]), self.kind()),
            "put": self.operation("replace", "put", "", fields(vec![
                ("description", json!(format!("replace the specified {}", info.kind))),
                ("parameters", json!(write_parameters(false))),
                ("requestBody", body(self.schema, &object_types)),
                ("responses", responses(&["200", "201"], self.schema)),
            ]), self.kind()),
            "patch": self.operation("patch", "patch", "", fields(vec![
                ("description", json!(format!("partially update the specified {}", info.kind))),
                ("parameters", json!(write_parameters(true))),
                ("requestBody", body(PATCH, &patch_types)),
                ("responses", responses(&["200", "201"], self.schema)),
            ]), self.kind()),
            "delete": self.operation("delete", "delete", "", fields(vec![
                ("description", json!(format!("delete a {}", info.kind))),
                ("parameters", json!(delete_parameters())),
                ("requestBody", body(DELETE_OPTIONS, &object_types)),
                ("responses", responses(&["200", "202"], STATUS)),
            ]), self.kind()),
            "parameters": item_parameters.clone(),
        });
        paths.insert(item.clone(), item_path.take());
        if self.version.status {
            paths.insert(
                format!("{item}/status"),
                self.subresource_path("Status", "status", self.schema, self.kind(), &item_parameters, &patch_types),
            );
        }
        if info.key == "serviceaccounts" {
            let kind = gvk("authentication.k8s.io", "v1", "TokenRequest");
            let create = self.operation(
                "create",
                "post",
                "Token",
                fields(vec![
                    ("description", json!("create token of a ServiceAccount")),
                    ("parameters", json!(write_parameters(false))),
                    ("requestBody", body(TOKEN_REQUEST, &object_types)),
                    ("responses", responses(&["200", "201", "202"], TOKEN_REQUEST)),
                ]),
                kind,
            );
            paths.insert(format!("{item}/token"), json!({"post": create, "parameters": item_parameters.clone()}));
        }
        if crate::scale::paths(info, self.version).is_some() {
            let scale_patches = patch_media_types(false)
                .into_iter()
                .filter(|m| !m.starts_with("application/apply"))
                .collect::<Vec<_>>();
            let kind = gvk("autoscaling", "v1", "Scale");
            paths.insert(
                format!("{item}/scale"),
                self.subresource_path("Scale", "scale", SCALE, kind, &item_parameters, &scale_patches),
            );
        }
    }

    /// get/put/patch of a subresource whose object is `schema` of kind `kind`.
    fn subresource_path(
        &self,
        suffix: &str,
        name: &str,
        schema: &str,
        kind: Value,
        parameters: &[Value],
        patch_types: &[&str],
    ) -> Value {
        let fields = |description: String, extra: Vec<(&str, Value)>| -> Map<String, Value> {
            let mut map = Map::new();
            map.insert("description".into(), json!(description));
            map.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
            map
        };
        let of = format!("{name} of the specified {}", self.info.kind);
        json!({
            "get": self.operation("read", "get", suffix, fields(format!("read {of}"), vec![
                ("responses", responses(&["200"], schema)),
            ]), kind.clone()),
            "put": self.operation("replace", "put", suffix, fields(format!("replace {of}"), vec![
                ("parameters", json!(write_parameters(false))),
                ("requestBody", body(schema, &["application/json", "application/yaml"])),
                ("responses", responses(&["200", "201"], schema)),
            ]), kind.clone()),
            "patch": self.operation("patch", "patch", suffix, fields(format!("partially update {of}"), vec![
                ("parameters", json!(write_parameters(true))),
                ("requestBody", body(PATCH, patch_types)),
                ("responses", responses(&["200", "201"], schema)),
            ]), kind),
            "parameters": parameters,
        })
    }
}

#[cfg(test)]
mod tests;
