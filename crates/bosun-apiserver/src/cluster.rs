//! The API verbs as the server implements them, independent of HTTP: create, update, patch,
//! delete, delete-collection, get and list on a resolved resource. The HTTP layer and the
//! in-process controllers (namespace termination, CRD cleanup) both go through here, so every
//! write follows the same rules.

use std::{
    borrow::Cow,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use serde_json::Value;

use crate::{
    crd,
    error::ApiError,
    fields,
    lifecycle::{self, Context, DeleteOptions, Endpoint, FieldValidation, Target, author, services},
    object,
    patch::{self, PatchError, PatchType},
    registry::{Catalog, CatalogHandle, ResourceInfo, VersionInfo, shared},
    scale::{self, ScalePaths},
    selector::{FieldSelector, LabelSelector},
    stamp,
    store::{ListPage, Mutation, Outcome, Store, StoredObject},
    types::Node,
};

/// Storage key of CustomResourceDefinitions.
pub const CRD_KEY: &str = "apiextensions.k8s.io/customresourcedefinitions";
/// Storage key of Namespaces.
pub const NAMESPACE_KEY: &str = "namespaces";
/// Storage key of Services.
pub const SERVICES_KEY: &str = "services";
/// Storage key of ClusterRoles.
pub const CLUSTER_ROLES_KEY: &str = "rbac.authorization.k8s.io/clusterroles";
/// Storage key of Roles.
pub const ROLES_KEY: &str = "rbac.authorization.k8s.io/roles";
/// Storage key of ClusterRoleBindings.
pub const CLUSTER_ROLE_BINDINGS_KEY: &str = "rbac.authorization.k8s.io/clusterrolebindings";
/// Storage key of RoleBindings.
pub const ROLE_BINDINGS_KEY: &str = "rbac.authorization.k8s.io/rolebindings";
/// Storage keys of the RBAC resources, whose writes change what users may do.
pub const RBAC_KEYS: [&str; 4] = [CLUSTER_ROLES_KEY, ROLES_KEY, CLUSTER_ROLE_BINDINGS_KEY, ROLE_BINDINGS_KEY];

/// A storage failure reaches clients as a 500 with its message (the store knows nothing of
/// HTTP; the verbs translate).
impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        ApiError::internal(error.to_string())
    }
}

/// The server's state: objects and the catalogue of what is served.
pub struct Cluster {
    /// Objects, revisions and events.
    pub store: Store,
    /// Served resources.
    pub catalog: CatalogHandle,
    /// Addresses and node ports Services hold, read from the store at first use.
    services_taken: std::sync::OnceLock<services::SharedTaken>,
    /// Counts writes to RBAC objects, so authorization knows when its snapshot is stale.
    rbac_generation: AtomicU64,
}

/// A resolved request target: resource, addressed version and URL namespace.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The resource.
    pub info: Arc<ResourceInfo>,
    version: usize,
    /// Namespace from the URL; empty for cluster-scoped and all-namespaces paths.
    pub namespace: String,
}

impl Scope {
    /// Resolves `group/version/plural` in a catalogue.
    pub fn resolve(catalog: &Catalog, group: &str, version: &str, plural: &str, namespace: &str) -> Option<Scope> {
        let info = catalog.lookup(group, version, plural)?.clone();
        let index = info.versions.iter().position(|v| v.name == version)?;
        Some(Scope { info, version: index, namespace: namespace.to_string() })
    }

    /// The scope of a resource at its preferred version.
    pub fn preferred(info: Arc<ResourceInfo>, namespace: &str) -> Scope {
        Scope { info, version: 0, namespace: namespace.to_string() }
    }

    /// The addressed version.
    pub fn version(&self) -> &VersionInfo {
        &self.info.versions[self.version]
    }

    fn target(&self) -> Target<'_> {
        Target { info: &self.info, version: self.version(), namespace: &self.namespace }
    }

    /// `apiVersion` of the addressed version.
    pub fn api_version(&self) -> String {
        self.info.api_version(&self.version().name)
    }

    fn is_storage_version(&self) -> bool {
        self.version().name == self.info.storage_version
    }

    /// [`Scope::view`] of a borrowed object: borrowed still when the addressed version is the
    /// stored one (nothing to convert), so that reading a large list copies nothing.
    pub fn view_borrowed<'a>(&self, value: &'a Value) -> std::borrow::Cow<'a, Value> {
        match self.info.shares_storage() || !self.is_storage_version() {
            true => std::borrow::Cow::Owned(self.view(value.clone())),
            false => std::borrow::Cow::Borrowed(value),
        }
    }

    /// Converts a stored object to the addressed version (custom resources use conversion
    /// `None`, which only rewrites `apiVersion`; resources stored as another are converted).
    pub fn view(&self, value: Value) -> Value {
        let shared = self.info.shares_storage();
        let mut value = if shared { shared::from_storage(&self.info, value) } else { value };
        if (shared || !self.is_storage_version())
            && let Some(map) = value.as_object_mut()
        {
            map.insert("apiVersion".into(), Value::String(self.api_version()));
        }
        value
    }

    /// A stored object as an update starts from: at the addressed version and, for built-ins,
    /// defaulted as upstream defaults what it reads from storage (objects stored before a
    /// default existed compare equal to their defaulted updates).
    fn current(&self, value: Value) -> Value {
        let mut value = self.view(value);
        if !self.info.custom {
            crate::defaults::apply(&self.info.group, &self.info.kind, &mut value);
        }
        value
    }

    /// The JSON of a stored object at the addressed version.
    pub fn view_json<'a>(&self, stored: &'a StoredObject) -> Cow<'a, str> {
        if self.is_storage_version() && !self.info.shares_storage() {
            Cow::Borrowed(&stored.json)
        } else {
            Cow::Owned(self.view(stored.value.clone()).to_string())
        }
    }

    fn to_storage(&self, mutation: Mutation) -> Mutation {
        let storage_version = self.info.api_version(&self.info.storage_version);
        let convert = |mut value: Value| {
            if let Some(map) = value.as_object_mut() {
                map.insert("apiVersion".into(), Value::String(storage_version.clone()));
            }
            shared::to_storage(&self.info, value)
        };
        match mutation {
            Mutation::Put(v) => Mutation::Put(convert(v)),
            Mutation::Delete(v) => Mutation::Delete(v.map(convert)),
        }
    }
}

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `fieldManager` (or the client's User-Agent); writes without one record no ownership.
    pub field_manager: Option<String>,
    /// `force` (server-side apply only).
    pub force: bool,
    /// A check of the object the write would store (authorization's escalation prevention).
    pub admission: Option<Admission>,
    /// The user a request comes from, recorded as the author of what pods run (see
    /// [`author`]); `None` for the server's own writes.
    pub author: Option<author::Author>,
}

/// A check of the object a write would store against the one it replaces (`None` for a
/// creation), which may also change it (as mutating admission does); an error refuses the
/// write. Deletions are not checked.
#[derive(Clone)]
pub struct Admission(pub Arc<AdmissionCheck>);

/// The function of an [`Admission`]: the new object, the old one.
pub type AdmissionCheck = dyn Fn(&mut Value, Option<&Value>) -> Result<(), ApiError> + Send + Sync;

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission")
    }
}

impl WriteOptions {
    /// Runs the admission check, if any.
    fn admit(&self, new: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        self.admission.as_ref().map_or(Ok(()), |check| (check.0)(new, old))
    }
}

/// Runs the admission check on a mutation that stores an object.
fn admit_mutation(options: &WriteOptions, mutation: &mut Mutation, old: Option<&Value>) -> Result<(), ApiError> {
    match mutation {
        Mutation::Put(new) => options.admit(new, old),
        Mutation::Delete(_) => Ok(()),
    }
}

/// A successful write.
#[derive(Debug)]
pub struct Written {
    /// The object as stored (or as it would be, for dry runs), at the addressed version.
    pub object: Value,
    /// Whether the write created the object (a server-side apply of a missing object).
    pub created: bool,
    /// Warnings for the client.
    pub warnings: Vec<String>,
}

/// The result of a DELETE.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; its last state.
    Gone(Value),
    /// The object remains until its finalizers are removed; its current state.
    Pending(Value),
}

/// Parsed list options.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `limit` (0 = none).
    pub limit: Option<usize>,
    /// Object key to continue after (from the `continue` token).
    pub continue_after: Option<String>,
}

const GENERATE_NAME_ATTEMPTS: usize = 8;

fn context(options: &WriteOptions) -> Context {
    let name_suffix = stamp::random_suffix();
    Context {
        now: stamp::now(),
        uid: uuid::Uuid::new_v4().to_string(),
        name_suffix,
        field_validation: options.field_validation,
        warnings: Vec::new(),
        manager: options.field_manager.clone(),
        allocations: None,
        writer: match &options.author {
            Some(author) => author::Writer::Request(author.clone()),
            None => author::Writer::default(),
        },
    }
}

fn written(scope: &Scope, outcome: &Outcome, warnings: Vec<String>) -> Written {
    let created = matches!(outcome, Outcome::Created(_));
    Written { object: scope.view(outcome.value().clone()), created, warnings }
}

impl Cluster {
    /// A cluster over a store, serving built-ins plus the store's established CRDs.
    pub fn new(store: Store) -> Self {
        let cluster = Cluster {
            store,
            catalog: CatalogHandle::new(),
            services_taken: Default::default(),
            rbac_generation: AtomicU64::new(0),
        };
        cluster.refresh_catalog();
        cluster
    }

    /// The context of a write; writes to Services learn which addresses and node ports are
    /// taken.
    fn context(&self, scope: &Scope, options: &WriteOptions) -> Context {
        let mut ctx = context(options);
        if scope.info.key == SERVICES_KEY {
            ctx.allocations = Some(services::Allocations::of(self.services_taken().clone()));
        }
        ctx
    }

    /// Who makes a write that may create `object`: the requesting user, or the server for the
    /// owner whose author it passes on.
    fn writer(&self, options: &WriteOptions, namespace: &str, object: &Value) -> author::Writer {
        if let Some(requester) = &options.author {
            return author::Writer::Request(requester.clone());
        }
        let owner = author::controller_owner(object).and_then(|(key, name)| {
            let stored = self.store.get(key, namespace, name)?;
            author::recorded(&stored.value).map(str::to_string)
        });
        author::Writer::Server { owner }
    }

    fn services_taken(&self) -> &services::SharedTaken {
        self.services_taken.get_or_init(|| {
            let stored = self.store.all(SERVICES_KEY);
            Arc::new(std::sync::Mutex::new(services::Taken::of(stored.iter().map(|s| &s.value))))
        })
    }

    fn check_namespace(&self, scope: &Scope, name: &str) -> Result<(), ApiError> {
        if !scope.info.namespaced {
            return Ok(());
        }
        match self.store.get(NAMESPACE_KEY, "", &scope.namespace) {
            None => Err(ApiError::not_found_plain("namespaces", "", &scope.namespace)),
            Some(ns) if object::deletion_timestamp(&ns.value).is_some() => Err(ApiError::forbidden(
                &scope.info,
                name,
                &format!(
                    "unable to create new content in namespace {} because it is being terminated",
                    scope.namespace
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Creates an object (POST).
    pub async fn create(&self, scope: &Scope, body: Value, options: &WriteOptions) -> Result<Written, ApiError> {
        if scope.info.terminating {
            return Err(ApiError::method_not_allowed("create", &scope.info)
                .with_message("create not allowed while custom resource definition is terminating"));
        }
        // Upstream's storage refuses to create what still carries a version (kubectl's create
        // and apply clear it first).
        if object::resource_version(&body).parse::<u64>().is_ok_and(|version| version != 0) {
            return Err(ApiError::unknown("resourceVersion should not be set on objects to be created"));
        }
        let generated = object::name(&body).is_empty();
        let writer = self.writer(options, &scope.namespace, &body);
        for _ in 0..GENERATE_NAME_ATTEMPTS {
            let mut ctx = Context { writer: writer.clone(), ..self.context(scope, options) };
            let mut prepared = lifecycle::prepare_create(&scope.target(), &mut ctx, body.clone())?;
            let name = object::name(&prepared).to_string();
            self.check_namespace(scope, &name)?;
            options.admit(&mut prepared, None)?;
            let mutation = scope.to_storage(Mutation::Put(prepared));
            let result = self
                .store
                .write(scope.info.store_key(), &scope.namespace, &name, options.dry_run, |current| match current {
                    Some(_) => Err(ApiError::already_exists(&scope.info, &name)),
                    None => Ok(Some(mutation)),
                })
                .await;
            match result {
                Err(e) if generated && e.reason == "AlreadyExists" => continue,
                Err(e) => return Err(e),
                Ok(outcome) => {
                    self.after_write(&scope.info, &outcome, &name).await;
                    let outcome = self.reread(scope, &name, outcome);
                    return Ok(written(scope, &outcome, ctx.warnings));
                }
            }
        }
        Err(ApiError::generate_name_exhausted(&scope.info, object::name(&body)))
    }

    /// Updates an object (PUT) at an endpoint.
    pub async fn update(
        &self,
        scope: &Scope,
        name: &str,
        endpoint: Endpoint,
        body: Value,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        self.rewrite(scope, name, endpoint, options, |_| Ok(body)).await
    }

    /// Patches an object (PATCH) at an endpoint.
    pub async fn patch(
        &self,
        scope: &Scope,
        name: &str,
        endpoint: Endpoint,
        patch_type: PatchType,
        body: &[u8],
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        if patch_type == PatchType::Apply {
            return self.apply(scope, name, endpoint, body, options).await;
        }
        if patch_type == PatchType::Strategic && scope.info.custom {
            // Custom resources have no patch strategies, as upstream.
            let [json, merge, _, apply] = patch::PATCH_MEDIA_TYPES;
            return Err(ApiError::unsupported_media_type(&[json, merge, apply]));
        }
        self.rewrite(scope, name, endpoint, options, |current| {
            let mut patched = current.clone();
            let applied = match patch_type {
                PatchType::Json => patch::apply_json_patch(&mut patched, body),
                PatchType::Strategic => {
                    let node = Node::for_resource(&scope.info, scope.version());
                    patch::apply_strategic_merge_patch(&mut patched, body, node)
                }
                _ => patch::apply_merge_patch(&mut patched, body),
            };
            applied.map_err(|e| match e {
                PatchError::Malformed(m) => ApiError::bad_request(m),
                PatchError::NotApplicable(m) => ApiError::unprocessable(&scope.info, name, m),
                PatchError::Internal(m) => ApiError::internal(m),
                too_many @ PatchError::TooManyOperations(_) => ApiError::bad_request(too_many.to_string()),
            })?;
            // A patch only conflicts when it sets a resourceVersion itself.
            if object::resource_version(&patched).is_empty() {
                let current_version = object::resource_version(current).to_string();
                object::metadata_mut(&mut patched).insert("resourceVersion".into(), Value::String(current_version));
            }
            Ok(patched)
        })
        .await
    }

    /// Server-side apply (`application/apply-patch+yaml`): creates the object when missing,
    /// else merges the configuration into it with field ownership, conflicts and removal.
    async fn apply(
        &self,
        scope: &Scope,
        name: &str,
        endpoint: Endpoint,
        body: &[u8],
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let Some(manager) = options.field_manager.clone().filter(|m| !m.is_empty()) else {
            return Err(ApiError::invalid(
                "PatchOptions",
                "meta.k8s.io",
                "",
                vec![crate::error::FieldError::required("fieldManager", "is required for apply patch")],
            ));
        };
        let mut applied = patch::parse_apply(body)?;
        if applied.pointer("/metadata/managedFields").is_some() {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        let applied_name = object::name(&applied).to_string();
        if applied_name.is_empty() {
            object::metadata_mut(&mut applied).insert("name".into(), Value::String(name.to_string()));
        } else if applied_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({applied_name}) does not match the name on the URL ({name})"
            )));
        }
        let target = scope.target();
        lifecycle::check_type(&target, &mut applied)?;
        if endpoint == Endpoint::Main && scope.version().status {
            // Status belongs to the status subresource; the main endpoint ignores it.
            if let Some(map) = applied.as_object_mut() {
                map.remove("status");
            }
        }
        if self.store.get(scope.info.store_key(), &scope.namespace, name).is_none() {
            self.check_namespace(scope, name)?;
        }
        let writer = self.writer(options, &scope.namespace, &applied);
        let mut ctx = Context { manager: None, writer, ..self.context(scope, options) };
        let api_version = scope.api_version();
        let request = fields::Apply {
            manager: &manager,
            force: options.force,
            api_version: &api_version,
            subresource: if endpoint == Endpoint::Status { "status" } else { "" },
            now: &ctx.now.clone(),
        };
        let node = Node::for_resource(&scope.info, scope.version());
        let outcome = self
            .store
            .write::<ApiError>(scope.info.store_key(), &scope.namespace, name, options.dry_run, |current| {
                let conflicts = |c: Vec<fields::Conflict>| fields::conflicts_error(&scope.info, name, &c);
                let Some(current) = current else {
                    if endpoint != Endpoint::Main {
                        return Err(ApiError::not_found(&scope.info, name));
                    }
                    let object = fields::apply(None, &applied, node, &request).map_err(conflicts)?;
                    let mut prepared = lifecycle::prepare_create(&target, &mut ctx, object)?;
                    options.admit(&mut prepared, None)?;
                    return Ok(Some(scope.to_storage(Mutation::Put(prepared))));
                };
                let view = scope.current(current.value.clone());
                let mut merged = fields::apply(Some(&view), &applied, node, &request).map_err(conflicts)?;
                if object::resource_version(&applied).is_empty() {
                    stamp::set_resource_version(&mut merged, current.revision);
                }
                let mut mutation = lifecycle::prepare_update(&target, &mut ctx, &view, merged, endpoint)?;
                admit_mutation(options, &mut mutation, Some(&view))?;
                Ok(Some(scope.to_storage(mutation)))
            })
            .await?;
        self.after_write(&scope.info, &outcome, name).await;
        let outcome = self.reread(scope, name, outcome);
        Ok(written(scope, &outcome, ctx.warnings))
    }

    /// Replaces an existing object by what `new_body` makes of its current state (at the
    /// addressed version), under the update rules.
    async fn rewrite(
        &self,
        scope: &Scope,
        name: &str,
        endpoint: Endpoint,
        options: &WriteOptions,
        new_body: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Written, ApiError> {
        let mut ctx = self.context(scope, options);
        let target = scope.target();
        let outcome = self
            .store
            .write::<ApiError>(scope.info.store_key(), &scope.namespace, name, options.dry_run, |current| {
                let current = current.ok_or_else(|| ApiError::not_found(&scope.info, name))?;
                let view = scope.current(current.value.clone());
                let body = new_body(&view)?;
                let mut mutation = lifecycle::prepare_update(&target, &mut ctx, &view, body, endpoint)?;
                admit_mutation(options, &mut mutation, Some(&view))?;
                Ok(Some(scope.to_storage(mutation)))
            })
            .await?;
        self.after_write(&scope.info, &outcome, name).await;
        let outcome = self.reread(scope, name, outcome);
        Ok(written(scope, &outcome, ctx.warnings))
    }

    /// The Scale of an object (GET on `/scale`).
    pub fn get_scale(&self, scope: &Scope, paths: &ScalePaths, name: &str) -> Result<Value, ApiError> {
        let stored = self.get(scope, name)?;
        Ok(scale::to_scale(paths, &scope.view(stored.value.clone())))
    }

    /// A write through `/scale`: `change` turns the current Scale into the wanted one (a PUT
    /// body, or the current one patched); its replicas are written to the object, which answers
    /// with its new Scale.
    pub async fn write_scale(
        &self,
        scope: &Scope,
        paths: &ScalePaths,
        name: &str,
        options: &WriteOptions,
        change: impl FnOnce(Value) -> Result<Value, ApiError>,
    ) -> Result<Written, ApiError> {
        let written = self
            .rewrite(scope, name, Endpoint::Main, options, |current| {
                let wanted = change(scale::to_scale(paths, current))?;
                scale::apply_scale(paths, current, &wanted)
            })
            .await?;
        Ok(Written { object: scale::to_scale(paths, &written.object), ..written })
    }

    /// Deletes an object (DELETE).
    pub async fn delete(
        &self,
        scope: &Scope,
        name: &str,
        options: &DeleteOptions,
        dry_run: bool,
    ) -> Result<Deleted, ApiError> {
        let now = stamp::now();
        let outcome = self
            .store
            .write(scope.info.store_key(), &scope.namespace, name, dry_run, |current| {
                let current = current.ok_or_else(|| ApiError::not_found(&scope.info, name))?;
                lifecycle::prepare_delete(&scope.info, &current.value, options, &now)
            })
            .await?;
        self.after_write(&scope.info, &outcome, name).await;
        let outcome = self.reread(scope, name, outcome);
        Ok(match outcome {
            Outcome::Deleted(last) => Deleted::Gone(scope.view(last.value.clone())),
            Outcome::DryRun { value, deleted: true } => Deleted::Gone(scope.view(value)),
            other => Deleted::Pending(scope.view(other.value().clone())),
        })
    }

    /// Deletes every object matching the options (DELETE on a collection); returns what was
    /// deleted or marked for deletion.
    pub async fn delete_collection(
        &self,
        scope: &Scope,
        list: &ListOptions,
        options: &DeleteOptions,
        dry_run: bool,
    ) -> Result<Vec<Value>, ApiError> {
        let page = self.list(scope, &ListOptions { limit: None, continue_after: None, ..list.clone() });
        let mut affected = Vec::new();
        for stored in page.items {
            let name = object::name(&stored.value).to_string();
            let item_scope = Scope { namespace: object::namespace(&stored.value).to_string(), ..scope.clone() };
            match self.delete(&item_scope, &name, options, dry_run).await {
                Ok(Deleted::Gone(v) | Deleted::Pending(v)) => affected.push(v),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(affected)
    }

    /// Reads one object.
    pub fn get(&self, scope: &Scope, name: &str) -> Result<Arc<StoredObject>, ApiError> {
        self.store
            .get(scope.info.store_key(), &scope.namespace, name)
            .ok_or_else(|| ApiError::not_found(&scope.info, name))
    }

    /// Lists objects matching the options.
    pub fn list(&self, scope: &Scope, options: &ListOptions) -> ListPage {
        let namespace = (!scope.namespace.is_empty()).then_some(scope.namespace.as_str());
        self.store.list(scope.info.store_key(), namespace, options.continue_after.as_deref(), options.limit, |stored| {
            options.labels.matches_object(&stored.value) && options.fields.matches(&stored.value)
        })
    }

    /// After a write that changed something: keep CRD status and the catalogue in step.
    async fn after_write(&self, info: &ResourceInfo, outcome: &Outcome, name: &str) {
        let changed = matches!(outcome, Outcome::Created(_) | Outcome::Updated(_) | Outcome::Deleted(_));
        if changed && RBAC_KEYS.contains(&info.key.as_str()) {
            self.rbac_generation.fetch_add(1, Ordering::Release);
        }
        if info.key == SERVICES_KEY {
            let mut taken = self.services_taken().lock().unwrap_or_else(|e| e.into_inner());
            match outcome {
                Outcome::Created(stored) | Outcome::Updated(stored) => taken.add(&stored.value),
                Outcome::Deleted(last) => taken.remove(&last.value),
                _ => {}
            }
        }
        if info.key != CRD_KEY || matches!(outcome, Outcome::DryRun { .. } | Outcome::Unchanged(_) | Outcome::Absent) {
            return;
        }
        if !matches!(outcome, Outcome::Deleted(_)) {
            self.establish_crd(name).await;
        }
        self.refresh_catalog();
    }

    /// After establishing a CRD, answer with its newest state rather than the pre-status one.
    fn reread(&self, scope: &Scope, name: &str, outcome: Outcome) -> Outcome {
        if scope.info.key != CRD_KEY || !matches!(outcome, Outcome::Created(_) | Outcome::Updated(_)) {
            return outcome;
        }
        self.store.get(CRD_KEY, "", name).map(Outcome::Updated).unwrap_or(outcome)
    }

    /// Writes the names/establishing status of a CRD, as upstream's controllers would.
    pub(crate) async fn establish_crd(&self, name: &str) {
        let all = self.store.all(CRD_KEY);
        let others: Vec<&Value> = all.iter().map(|s| &s.value).collect();
        let now = stamp::now();
        let result = self
            .store
            .write::<ApiError>(CRD_KEY, "", name, false, |current| {
                let Some(current) = current else {
                    return Ok(None);
                };
                let status = crd::status(&current.value, &others, &now);
                if current.value.get("status") == Some(&status) {
                    return Ok(None);
                }
                let mut new = current.value.clone();
                new["status"] = status;
                Ok(Some(Mutation::Put(new)))
            })
            .await;
        if let Err(error) = result {
            tracing::warn!(crd = name, %error, "could not write CRD status");
        }
    }

    /// How many writes RBAC objects have had (a snapshot of them is stale once this moves).
    pub fn rbac_generation(&self) -> u64 {
        self.rbac_generation.load(Ordering::Acquire)
    }

    /// Rebuilds the catalogue from the stored CRDs.
    pub(crate) fn refresh_catalog(&self) {
        let custom =
            self.store.all(CRD_KEY).iter().filter_map(|s| crd::resource_info(&s.value)).map(Arc::new).collect();
        self.catalog.install(custom);
    }
}
