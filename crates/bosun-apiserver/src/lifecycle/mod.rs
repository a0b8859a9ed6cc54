//! The decisions of create, update and delete, as pure functions of the request and the stored
//! object: system fields, generation rules, status handling, finalizers and deletion, schema
//! pruning/defaulting/validation of custom resources, canonical form of built-ins.

pub mod author;
pub mod pods;
pub mod services;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{
    crd,
    error::{ApiError, FieldError},
    fields, object,
    registry::{ResourceInfo, VersionInfo},
    stamp,
    store::Mutation,
    validation,
};

/// Finalizer of an owner deleted with `propagationPolicy: Foreground` (the garbage collector
/// removes it once the dependents are gone).
pub const FOREGROUND: &str = "foregroundDeletion";
/// Finalizer of an owner deleted with `propagationPolicy: Orphan`.
pub const ORPHAN: &str = "orphan";

/// Namespaces that can never be deleted.
pub const PROTECTED_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The finalizer a namespace keeps until its content is removed.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

/// How unknown fields in a request are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the server default).
    #[default]
    Warn,
    /// Refuse the request.
    Strict,
}

/// What a request is about: the resource, the version addressed and the URL namespace.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The resource.
    pub info: &'a ResourceInfo,
    /// The version in the URL.
    pub version: &'a VersionInfo,
    /// The namespace in the URL (empty for cluster-scoped paths).
    pub namespace: &'a str,
}

/// The endpoint of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// The object itself.
    Main,
    /// `/status`.
    Status,
    /// `/finalize` (namespaces).
    Finalize,
}

/// Per-request facts that are not part of the object: the time, a fresh uid, a random suffix
/// for `generateName`, and the unknown-field policy. Warnings are collected here.
#[derive(Debug)]
pub struct Context {
    /// The current time (RFC 3339, seconds).
    pub now: String,
    /// A fresh UID for creations.
    pub uid: String,
    /// Five random characters for `generateName`.
    pub name_suffix: String,
    /// Unknown-field policy.
    pub field_validation: FieldValidation,
    /// Warnings to send back in `Warning` headers.
    pub warnings: Vec<String>,
    /// The field manager of the write; `None` when server-side apply already recorded ownership.
    pub manager: Option<String>,
    /// What Services hold already (set for writes to Services, to allocate around).
    pub allocations: Option<services::Allocations>,
    /// Who makes the write: the author of what pods run ([`author`]).
    pub writer: author::Writer,
}

const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Fills `apiVersion` and `kind` from the URL when missing and refuses a mismatch.
pub fn check_type(target: &Target, object: &mut Value) -> Result<(), ApiError> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request("the request body must be a JSON or YAML object"));
    };
    let expected_version = target.info.api_version(&target.version.name);
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string();
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    if api_version.is_empty() {
        map.insert("apiVersion".into(), json!(expected_version));
    } else if api_version != expected_version {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected_version})"
        )));
    }
    if kind.is_empty() {
        map.insert("kind".into(), json!(target.info.kind));
    } else if kind != target.info.kind {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {}: the kind in the data does not match the URL",
            target.version.name, target.info.kind
        )));
    }
    Ok(())
}

fn set(meta: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    match value {
        Some(v) => meta.insert(key.to_string(), v.clone()),
        None => meta.remove(key),
    };
}

/// Brings an object into the form it is stored in: built-ins through their typed struct,
/// custom resources through their schema (prune, default, validate). Unknown fields are handled
/// by `fieldValidation`; validation failures are 422 with one cause per field.
fn canonicalize(
    target: &Target,
    ctx: &mut Context,
    object: Value,
    old: Option<&Value>,
    name: &str,
) -> Result<Value, ApiError> {
    let info = target.info;
    if let Some(normalize) = target.version.normalizer {
        let mut unknown = Vec::new();
        crate::types::Node::for_resource(info, target.version).unknown_fields(&object, &mut unknown);
        report_unknown(ctx, unknown)?;
        let undecodable = |e: &str| {
            ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {e}",
                info.kind, target.version.name, info.kind
            ))
        };
        if validation::unreadable_quantity(&info.group, &info.kind, &object) {
            return Err(undecodable(validation::QUANTITY_FORMAT));
        }
        let mut object = normalize(object).map_err(|e| undecodable(&e))?;
        crate::defaults::apply(&info.group, &info.kind, &mut object);
        stamp::sort_fields(&mut object);
        return Ok(object);
    }
    let mut object = object;
    let mut pruned = Vec::new();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let unknown: Vec<String> = meta.keys().filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str())).cloned().collect();
        for key in unknown {
            meta.remove(&key);
            pruned.push(format!("metadata.{key}"));
        }
    }
    let Some(schema) = &target.version.schema else {
        return Ok(object);
    };
    schema.prune(&mut object, "", true, &mut pruned);
    report_unknown(ctx, pruned)?;
    schema.apply_defaults(&mut object);
    let mut errors = Vec::new();
    schema.validate(&object, "", &mut errors);
    errors.sort_by(|a, b| a.field.cmp(&b.field));
    // CEL rules run, in their order, on objects that passed the schema, as upstream's do.
    if errors.is_empty() {
        schema.validate_rules(&object, old, "", &mut errors);
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid_object(info, name, errors));
    }
    Ok(object)
}

/// Unknown fields by `fieldValidation`: refused (Strict), warned about (Warn) or ignored.
fn report_unknown(ctx: &mut Context, mut unknown: Vec<String>) -> Result<(), ApiError> {
    unknown.sort();
    match ctx.field_validation {
        FieldValidation::Strict if !unknown.is_empty() => {
            let list: Vec<String> = unknown.iter().map(|p| format!("unknown field \"{p}\"")).collect();
            Err(ApiError::bad_request(format!("strict decoding error: {}", list.join(", "))))
        }
        FieldValidation::Warn => {
            ctx.warnings.extend(unknown.iter().map(|p| format!("unknown field \"{p}\"")));
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Validates name and metadata, then what `extra` found and the kind's own rules (of the
/// main endpoint, `spec`: status writes are not checked here); 422 listing every problem in
/// upstream's order.
fn check_metadata(info: &ResourceInfo, object: &Value, extra: Vec<FieldError>, spec: bool) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    let name = object::name(object);
    for message in crate::names::name(info.name_rule, name) {
        errors.push(FieldError::invalid("metadata.name", json!(name), message));
    }
    if let Some(meta) = object::metadata(object) {
        validation::object_meta(meta, &mut errors);
    }
    errors.extend(extra);
    if spec && !info.custom {
        errors.extend(validation::semantic(&info.group, &info.kind, object));
    }
    if errors.is_empty() { Ok(()) } else { Err(ApiError::invalid_object(info, name, errors)) }
}

/// Kind-specific rules on create and update.
fn kind_rules(ctx: &mut Context, info: &ResourceInfo, object: &mut Value, old: Option<&Value>) -> Vec<FieldError> {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Service") => services::prepare(object, old, ctx.allocations.get_or_insert_with(Default::default)),
        ("", "Namespace") => {
            let name = object::name(object).to_string();
            let meta = object::metadata_mut(object);
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            let spec_finalizers = match old {
                Some(old) => old.pointer("/spec/finalizers").cloned(),
                None => Some(json!([NAMESPACE_FINALIZER])),
            };
            let phase = old.and_then(|o| o.pointer("/status/phase").cloned()).unwrap_or_else(|| json!("Active"));
            object["spec"] = json!({});
            if let Some(finalizers) = spec_finalizers {
                object["spec"]["finalizers"] = finalizers;
            }
            object["status"] = json!({"phase": phase});
            Vec::new()
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            crd::apply_defaults(object);
            crd::validate(object, old)
        }
        _ => old.map(|old| immutable_fields(info, old, object)).unwrap_or_default(),
    }
}

/// Fields that may not change once set, per kind (the common ones of upstream's validation).
fn immutable_fields(info: &ResourceInfo, old: &Value, new: &Value) -> Vec<FieldError> {
    let frozen: &[&str] = match (info.group.as_str(), info.kind.as_str()) {
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => &["/spec/selector"],
        ("batch", "Job") => &["/spec/selector", "/spec/template"],
        ("", "ConfigMap" | "Secret") if old.get("immutable").and_then(Value::as_bool) == Some(true) => {
            &["/data", "/binaryData", "/immutable"]
        }
        _ => &[],
    };
    frozen
        .iter()
        .filter(|pointer| old.pointer(pointer).is_some() && old.pointer(pointer) != new.pointer(pointer))
        .map(|pointer| {
            let field = pointer.trim_start_matches('/').replace('/', ".");
            let shown = new.pointer(pointer).cloned().unwrap_or(Value::Null);
            let detail =
                if info.group.is_empty() { "field is immutable when `immutable` is set" } else { "field is immutable" };
            FieldError::invalid(field, shown, detail)
        })
        .collect()
}

/// Prepares an object for creation (everything but the namespace's existence and the name's
/// availability, which need the store).
pub fn prepare_create(target: &Target, ctx: &mut Context, mut object: Value) -> Result<Value, ApiError> {
    check_type(target, &mut object)?;
    let info = target.info;
    let meta = object::metadata_mut(&mut object);
    if info.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                meta.insert("namespace".into(), json!(target.namespace));
            }
            Some(ns) if ns != target.namespace => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            Some(_) => {}
        }
    } else {
        meta.remove("namespace");
    }
    let has_name = meta.get("name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    if !has_name {
        let prefix = meta.get("generateName").and_then(Value::as_str).unwrap_or_default().to_string();
        if prefix.is_empty() {
            return Err(ApiError::invalid_object(
                info,
                "",
                vec![FieldError::required("metadata.name", "name or generateName is required")],
            ));
        }
        let cut = prefix.char_indices().nth(58).map_or(prefix.len(), |(i, _)| i);
        meta.insert("name".into(), json!(format!("{}{}", &prefix[..cut], ctx.name_suffix)));
    }
    meta.insert("uid".into(), json!(ctx.uid));
    meta.insert("creationTimestamp".into(), json!(ctx.now));
    for field in ["deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"] {
        meta.remove(field);
    }
    if info.tracks_generation {
        meta.insert("generation".into(), json!(1));
    } else {
        meta.remove("generation");
    }
    if target.version.status
        && let Some(map) = object.as_object_mut()
    {
        map.remove("status");
    }
    let kind_errors = kind_rules(ctx, info, &mut object, None);
    let name = object::name(&object).to_string();
    let mut object = canonicalize(target, ctx, object, None, &name)?;
    check_metadata(info, &object, kind_errors, true)?;
    let authored = author_part(info);
    if authored.is_some() {
        author::keep(&mut object, None);
    }
    // The creator owns what it sent and the defaults; not what the registry sets on creation.
    track(target, ctx, None, &mut object, "");
    if let Some(part) = authored {
        author::stamp(part, &mut object, None, &ctx.writer);
    }
    if !info.custom {
        crate::defaults::on_create(&info.group, &info.kind, &mut object);
        stamp::sort_fields(&mut object);
    }
    Ok(object)
}

/// The part of a built-in object whose writer the server records as its author.
fn author_part(info: &ResourceInfo) -> Option<&'static str> {
    if info.custom { None } else { author::authored_part(&info.group, &info.kind) }
}

/// Records the write's field ownership (unless an apply did already).
fn track(target: &Target, ctx: &Context, old: Option<&Value>, new: &mut Value, subresource: &str) {
    let Some(manager) = &ctx.manager else { return };
    let api_version = target.info.api_version(&target.version.name);
    let request = fields::Update { manager, api_version: &api_version, subresource, now: &ctx.now };
    fields::track_update(old, new, crate::types::Node::for_resource(target.info, target.version), &request);
}

fn without_metadata(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
    }
    copy
}

fn is_deployment(info: &ResourceInfo) -> bool {
    info.kind == "Deployment" && info.group == "apps"
}

/// Whether an update of `old` into `new` bumps `metadata.generation`.
fn changes_generation(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    if !info.tracks_generation {
        return false;
    }
    if info.custom {
        return without_metadata(old) != without_metadata(new);
    }
    // Deployments also count annotation changes: they are copied to ReplicaSets.
    let annotations_count = is_deployment(info);
    old.get("spec") != new.get("spec")
        || (annotations_count && old.pointer("/metadata/annotations") != new.pointer("/metadata/annotations"))
}

/// Prepares the update of `current` by a PUT (or a patch result) to an endpoint. Returns the
/// object to store, or a deletion when the update removed the last finalizer of an object
/// that is being deleted.
pub fn prepare_update(
    target: &Target,
    ctx: &mut Context,
    current: &Value,
    mut body: Value,
    endpoint: Endpoint,
) -> Result<Mutation, ApiError> {
    check_type(target, &mut body)?;
    let info = target.info;
    let name = object::name(current).to_string();
    let body_name = object::name(&body);
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if info.namespaced && !object::namespace(&body).is_empty() && object::namespace(&body) != object::namespace(current)
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    match object::resource_version(&body) {
        "" if !info.allow_unconditional_update => {
            return Err(ApiError::invalid_object(
                info,
                &name,
                vec![FieldError::invalid_shown("metadata.resourceVersion", "0x0", "must be specified for an update")],
            ));
        }
        "" => {}
        rv if rv != object::resource_version(current) => {
            return Err(ApiError::conflict(info, &name));
        }
        _ => {}
    }
    let body_uid = object::uid(&body);
    if !body_uid.is_empty() && body_uid != object::uid(current) {
        return Err(ApiError::conflict_with(
            info,
            &name,
            &format!(
                "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {}",
                object::uid(current)
            ),
        ));
    }
    let mut new = match endpoint {
        Endpoint::Main => {
            let mut new = body;
            if target.version.status {
                set(new.as_object_mut().expect("checked object"), "status", current.get("status"));
            }
            new
        }
        Endpoint::Status => {
            // Only status changes here; managedFields travel with it (they record this write).
            let mut new = current.clone();
            set(new.as_object_mut().expect("stored objects are maps"), "status", body.get("status"));
            set(
                object::metadata_mut(&mut new),
                "managedFields",
                object::metadata(&body).and_then(|m| m.get("managedFields")),
            );
            // Upstream's Deployment status strategy keeps only the spec and labels: its
            // controller records `deployment.kubernetes.io/revision` through /status, so the
            // generation does not move.
            if is_deployment(info) {
                set(
                    object::metadata_mut(&mut new),
                    "annotations",
                    object::metadata(&body).and_then(|m| m.get("annotations")),
                );
            }
            new
        }
        Endpoint::Finalize => {
            let mut new = current.clone();
            new["spec"]["finalizers"] = body.pointer("/spec/finalizers").cloned().unwrap_or_else(|| json!([]));
            new
        }
    };
    {
        let old_meta = object::metadata(current).cloned().unwrap_or_default();
        let meta = object::metadata_mut(&mut new);
        for field in
            ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace"]
        {
            set(meta, field, old_meta.get(field));
        }
        meta.remove("resourceVersion");
        meta.remove("selfLink");
    }
    let kind_errors =
        if endpoint == Endpoint::Main { kind_rules(ctx, info, &mut new, Some(current)) } else { Vec::new() };
    let mut new = canonicalize(target, ctx, new, Some(current), &name)?;
    if endpoint == Endpoint::Main && changes_generation(info, current, &new) {
        let generation = object::generation(current) + 1;
        object::metadata_mut(&mut new).insert("generation".into(), json!(generation));
    }
    let mut errors = kind_errors;
    if object::deletion_timestamp(current).is_some() {
        let old: Vec<&str> = object::finalizers(current);
        let added: Vec<&str> = object::finalizers(&new).into_iter().filter(|f| !old.contains(f)).collect();
        if !added.is_empty() {
            let list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            errors.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    list.join(", ")
                ),
            ));
        }
    }
    check_metadata(info, &new, errors, endpoint == Endpoint::Main)?;
    let authored = author_part(info);
    if authored.is_some() {
        author::keep(&mut new, Some(current));
    }
    let subresource = if endpoint == Endpoint::Status { "status" } else { "" };
    track(target, ctx, Some(current), &mut new, subresource);
    if let Some(part) = authored {
        author::stamp(part, &mut new, Some(current), &ctx.writer);
    }
    keep_timestamps_of_a_no_op(current, &mut new);
    if ready_to_delete(info, &new) {
        return Ok(Mutation::Delete(Some(new)));
    }
    Ok(Mutation::Put(new))
}

/// A write that changes nothing but the times in managedFields keeps the old times, as
/// upstream's field manager does: otherwise a no-op apply (for instance of a manifest carrying
/// `creationTimestamp: null`, as `kubectl create --dry-run -o yaml` prints) would answer, and
/// store, a changed object.
fn keep_timestamps_of_a_no_op(current: &Value, new: &mut Value) {
    if same_but_times(current, new) {
        let old = object::metadata(current).and_then(|m| m.get("managedFields")).cloned();
        set(object::metadata_mut(new), "managedFields", old.as_ref());
    }
}

/// Whether two objects are equal apart from `metadata.resourceVersion` and the times in
/// `metadata.managedFields`. Compares in place: this runs on every write.
fn same_but_times(a: &Value, b: &Value) -> bool {
    /// Equal maps, leaving out `skip` and comparing the keys in `special` with `compare`.
    fn maps(
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        skip: &str,
        special: (&str, fn(&Value, &Value) -> bool),
    ) -> bool {
        let count = |m: &Map<String, Value>| m.len() - usize::from(m.contains_key(skip));
        count(a) == count(b)
            && a.iter().filter(|(k, _)| *k != skip).all(|(key, value)| match b.get(key) {
                Some(other) if key == special.0 => (special.1)(value, other),
                Some(other) => value == other,
                None => false,
            })
    }
    fn entries(a: &Value, b: &Value) -> bool {
        match (a.as_array(), b.as_array()) {
            (Some(a), Some(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| match (x.as_object(), y.as_object()) {
                        (Some(x), Some(y)) => maps(x, y, "time", ("", |p, q| p == q)),
                        _ => x == y,
                    })
            }
            _ => a == b,
        }
    }
    fn metadata(a: &Value, b: &Value) -> bool {
        match (a.as_object(), b.as_object()) {
            (Some(a), Some(b)) => maps(a, b, "resourceVersion", ("managedFields", entries)),
            _ => a == b,
        }
    }
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => maps(a, b, "", ("metadata", metadata)),
        _ => a == b,
    }
}

/// Whether an object that is being deleted has nothing left holding it.
pub fn ready_to_delete(info: &ResourceInfo, object: &Value) -> bool {
    if object::deletion_timestamp(object).is_none() || !object::finalizers(object).is_empty() {
        return false;
    }
    let namespace_held = info.key == "namespaces"
        && object.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
    !namespace_held
}

fn add_finalizer(object: &mut Value, finalizer: &str) {
    let finalizers = object::metadata_mut(object).entry("finalizers").or_insert_with(|| json!([]));
    if let Some(list) = finalizers.as_array_mut()
        && !list.contains(&json!(finalizer))
    {
        list.push(json!(finalizer));
    }
}

/// `DeleteOptions`, from the body or the query.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    /// `Background`, `Foreground` or `Orphan`.
    pub propagation_policy: Option<String>,
    /// Preconditions on uid and resourceVersion.
    #[serde(default)]
    pub preconditions: Preconditions,
    /// `["All"]` for a dry run.
    #[serde(default)]
    pub dry_run: Vec<String>,
}

/// `DeleteOptions.preconditions`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// Required uid.
    pub uid: Option<String>,
    /// Required resourceVersion.
    pub resource_version: Option<String>,
}

/// Decides what a DELETE does to `current`: remove it, mark it as being deleted (finalizers
/// pending), or nothing (already being deleted).
pub fn prepare_delete(
    info: &ResourceInfo,
    current: &Value,
    options: &DeleteOptions,
    now: &str,
) -> Result<Option<Mutation>, ApiError> {
    let name = object::name(current);
    if let Some(uid) = options.preconditions.uid.as_deref().filter(|u| *u != object::uid(current)) {
        return Err(ApiError::conflict_with(
            info,
            name,
            &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", object::uid(current)),
        ));
    }
    if let Some(rv) =
        options.preconditions.resource_version.as_deref().filter(|rv| *rv != object::resource_version(current))
    {
        return Err(ApiError::conflict_with(
            info,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                object::resource_version(current)
            ),
        ));
    }
    if info.key == "namespaces" && PROTECTED_NAMESPACES.contains(&name) {
        return Err(ApiError::forbidden(info, name, "this namespace may not be deleted"));
    }
    if object::deletion_timestamp(current).is_some() {
        return Ok(None);
    }
    let mut marked = current.clone();
    let propagation = match options.propagation_policy.as_deref() {
        Some("Foreground") => Some(FOREGROUND),
        Some("Orphan") => Some(ORPHAN),
        _ => None,
    };
    if let Some(finalizer) = propagation {
        add_finalizer(&mut marked, finalizer);
    }
    if info.key == "apiextensions.k8s.io/customresourcedefinitions" {
        add_finalizer(&mut marked, crd::CLEANUP_FINALIZER);
    }
    if info.key == "namespaces" {
        marked["status"]["phase"] = json!("Terminating");
    }
    let held = !object::finalizers(&marked).is_empty()
        || marked.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
            && info.key == "namespaces";
    if !held {
        return Ok(Some(Mutation::Delete(None)));
    }
    let generation = object::generation(current);
    let meta = object::metadata_mut(&mut marked);
    meta.insert("deletionTimestamp".into(), json!(now));
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    if generation > 0 {
        meta.insert("generation".into(), json!(generation + 1));
    }
    Ok(Some(Mutation::Put(marked)))
}

#[cfg(test)]
mod tests;
