//! `bosun observe`: run a command for every object of a kind and on every change — the script
//! controller, with `oc observe`'s contract and without its gotchas.
//!
//! One task owns all state and decides; commands run as child processes beside it:
//!
//! - a kube-runtime watcher lists and watches the resource (relisting by itself when the watch
//!   expires); `known::Known` turns its events into runs — new and changed objects, objects
//!   that vanished while the watch was down — keeping per object only its resourceVersion,
//!   template outputs and a change digest;
//! - `queue::Queue` holds runs: one at a time per object, later changes coalesced into one
//!   run with the newest state, `--concurrency` objects at once;
//! - `--names` lists what the user's external system knows; names the cluster no longer has
//!   (checked with a read, so a just-created object is never mistaken for a deleted one) get
//!   `--delete`, so deletions made while observe was down are not lost;
//! - failures retry with exponential backoff per object and count against `--maximum-errors`;
//! - what happens (each run, retry and error) goes to an [`Output`]: `bosun observe` prints
//!   oc observe's lines, the default [`Log`] writes `tracing` events. The library prints nothing.
//!
//! The running state and its event handlers are in `state`; errors and the output sink in
//! `output`.

pub mod command;
pub(crate) mod known;
pub(crate) mod metrics;
mod output;
pub(crate) mod queue;
pub(crate) mod resource;
mod state;

use std::{
    collections::hash_map::DefaultHasher,
    hash::{Hash, Hasher},
    net::SocketAddr,
    sync::Arc,
    time::Duration,
};

use futures::{Stream, StreamExt};
use kube::{
    Api, Client,
    api::DynamicObject,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::Value;
use tokio::task::JoinSet;

use bosun_core::jsonpath::{JsonPathError, JsonPathTemplate};
pub use known::{BadName, EventType, Key, TemplateMissed};
use known::{CommandRun, Known, ObjectSource, TemplateOutputs};
pub use metrics::ObserverMetrics;
pub use output::{Event, Log, Output, RunError};
use queue::Queue;
use resource::Candidate;
pub use resource::UnknownResource;
use state::{Exec, Loop};

/// Which namespaces to observe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    /// One namespace.
    One(String),
    /// Every namespace.
    All,
}

/// What to observe and what to run.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The resource, as kubectl names it (`services`, `svc`, `deployments.apps`, a CRD's plural).
    pub(crate) resource: String,
    /// Namespaces (ignored for cluster-scoped resources).
    pub(crate) namespaces: Namespaces,
    /// Label selector, sent to the server.
    pub label_selector: Option<String>,
    /// Field selector, sent to the server.
    pub field_selector: Option<String>,
    /// JSONPath templates whose outputs follow the name on the command line.
    pub templates: Vec<String>,
    /// A template that finds nothing is an error instead of an empty string.
    pub strict_templates: bool,
    /// CommandRun on a change only when this template's output changed.
    pub on_change: Option<String>,
    /// The command and its first arguments.
    pub(crate) command: Vec<String>,
    /// The command run for deleted objects (empty: none).
    pub delete: Vec<String>,
    /// The command printing the names the external system knows (empty: none).
    pub names: Vec<String>,
    /// CommandRun every object again this often.
    pub resync: Option<Duration>,
    /// Objects whose commands run at once.
    pub concurrency: usize,
    /// Retry a run that exits with this code.
    pub retry_on_exit_code: Option<i32>,
    /// Retries per run.
    pub retry_count: u32,
    /// First wait before a retry; doubles each time.
    pub retry_backoff: Duration,
    /// Stop after this many failures (`None`: never).
    pub maximum_errors: Option<u64>,
    /// Put the object's JSON into this environment variable.
    pub object_env_var: Option<String>,
    /// Put the event type into this environment variable.
    pub type_env_var: Option<String>,
    /// Write the object's JSON to the command's stdin.
    pub object_stdin: bool,
    /// Process the current state (and `--names` deletions), then stop.
    pub once: bool,
    /// Stop after this long.
    pub exit_after: Option<Duration>,
    /// Serve `/metrics` and `/healthz` here.
    pub listen: Option<SocketAddr>,
}

impl Spec {
    /// A spec with oc observe's defaults: one command, serial, 20 errors allowed.
    pub fn new(resource: &str, namespaces: Namespaces, command: Vec<String>) -> Spec {
        Spec {
            resource: resource.to_string(),
            namespaces,
            label_selector: None,
            field_selector: None,
            templates: Vec::new(),
            strict_templates: false,
            on_change: None,
            command,
            delete: Vec::new(),
            names: Vec::new(),
            resync: None,
            concurrency: 1,
            retry_on_exit_code: None,
            retry_count: 2,
            retry_backoff: Duration::from_secs(1),
            maximum_errors: Some(20),
            object_env_var: None,
            type_env_var: None,
            object_stdin: false,
            once: false,
            exit_after: None,
            listen: None,
        }
    }
}

/// Why an observer cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// The resource name means nothing the cluster serves.
    #[error(transparent)]
    UnknownResource(#[from] UnknownResource),
    /// A template does not parse.
    #[error("{flag}: {source}")]
    Template {
        /// The flag that gave it.
        flag: String,
        /// What is wrong, and where.
        #[source]
        source: JsonPathError,
    },
    /// A command is missing.
    #[error("{flag}: no command given")]
    NoCommand {
        /// The flag (`command` for the main one).
        flag: &'static str,
    },
    /// A command is not found on PATH or not executable.
    #[error("{flag}: command {program:?} not found or not executable")]
    CommandNotFound {
        /// The flag (`command` for the main one).
        flag: &'static str,
        /// The program.
        program: String,
    },
    /// `--delete` without `--names`.
    #[error(
        "--delete needs --names: without the names the external system knows, objects deleted while bosun observe is not running are never cleaned up"
    )]
    DeleteWithoutNames,
    /// `--names` without `--delete`.
    #[error("--names needs --delete: it only finds objects to run --delete for")]
    NamesWithoutDelete,
    /// Discovery failed (unreachable, credentials, permissions).
    #[error(transparent)]
    Cluster(#[from] bosun_core::cluster::ClusterError),
    /// The metrics address cannot be bound.
    #[error("--listen-addr {address}: {source}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Why an observer stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `--once`: the current state was processed.
    Once,
    /// `--exit-after` elapsed.
    ExitAfter,
    /// The shutdown signal came.
    Signal,
    /// `--maximum-errors` was exceeded.
    TooManyErrors,
}

/// How an observer ended.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Why it stopped.
    pub stop: Stop,
    /// Commands run to the end (successful or not).
    pub runs: u64,
    /// Runs that failed after their retries, failed `--names` runs and watch errors.
    pub errors: u64,
}

/// A prepared observer: resource resolved, templates parsed, commands checked, metrics bound.
pub struct Observer {
    client: Client,
    spec: Spec,
    resource: Candidate,
    templates: Vec<JsonPathTemplate>,
    on_change: Option<JsonPathTemplate>,
    metrics: Arc<ObserverMetrics>,
    listen: Option<(SocketAddr, tokio::task::JoinHandle<()>)>,
    output: Arc<dyn Output>,
}

fn digest(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

impl Observer {
    /// Checks the spec and resolves the resource.
    pub async fn prepare(client: Client, spec: Spec) -> Result<Observer, ObserveError> {
        match (spec.delete.is_empty(), spec.names.is_empty()) {
            (false, true) => return Err(ObserveError::DeleteWithoutNames),
            (true, false) => return Err(ObserveError::NamesWithoutDelete),
            _ => {}
        }
        let template = |flag: String, text: &str| {
            JsonPathTemplate::parse(text).map_err(|source| ObserveError::Template { flag, source })
        };
        let templates = spec
            .templates
            .iter()
            .enumerate()
            .map(|(index, text)| template(format!("--template #{} ({text:?})", index + 1), text))
            .collect::<Result<Vec<_>, _>>()?;
        let on_change = spec.on_change.as_deref().map(|text| template("--on-change".into(), text)).transpose()?;
        command::check(&spec.command, "command")?;
        if !spec.delete.is_empty() {
            command::check(&spec.delete, "--delete")?;
            command::check(&spec.names, "--names")?;
        }
        let candidates = resource::candidates(&client).await.map_err(|e| ObserveError::Cluster(e.into()))?;
        let resource = resource::resolve(&spec.resource, &candidates)?.clone();
        let metrics = Arc::new(ObserverMetrics::default());
        let listen = match spec.listen {
            Some(address) => Some(
                bosun_core::endpoints::serve_exposed(metrics.clone(), address)
                    .await
                    .map_err(|source| ObserveError::Listen { address, source })?,
            ),
            None => None,
        };
        Ok(Observer { client, spec, resource, templates, on_change, metrics, listen, output: Arc::new(Log) })
    }

    /// Reports to `output` instead of `tracing` ([`Log`]).
    pub fn with_output(self, output: Arc<dyn Output>) -> Observer {
        Observer { output, ..self }
    }

    /// Where `/metrics` and `/healthz` are served.
    pub fn listen_address(&self) -> Option<SocketAddr> {
        self.listen.as_ref().map(|(address, _)| *address)
    }

    /// The metrics.
    pub fn metrics(&self) -> Arc<ObserverMetrics> {
        self.metrics.clone()
    }

    fn api(&self, namespace: Option<&str>) -> Api<DynamicObject> {
        let resource = self.resource.api_resource();
        match namespace {
            Some(namespace) if self.resource.namespaced => {
                Api::namespaced_with(self.client.clone(), namespace, &resource)
            }
            _ => Api::all_with(self.client.clone(), &resource),
        }
    }

    /// The observed namespace, when only one is (and the resource is namespaced).
    fn namespace(&self) -> Option<&str> {
        match &self.spec.namespaces {
            Namespaces::One(namespace) if self.resource.namespaced => Some(namespace),
            _ => None,
        }
    }

    fn render(&self, key: &Key, object: &Value) -> TemplateOutputs {
        let args = self
            .templates
            .iter()
            .zip(&self.spec.templates)
            .map(|(template, text)| {
                template.render(object, self.spec.strict_templates).map_err(|missing| TemplateMissed {
                    object: format!("{}/{key}", self.resource.kind),
                    template: text.clone(),
                    missing: missing.to_string(),
                })
            })
            .collect();
        let change = self.on_change.as_ref().map(|t| digest(&t.render(object, false).unwrap_or_default()));
        TemplateOutputs { args, change }
    }

    fn wants_object(&self) -> bool {
        self.spec.object_env_var.is_some() || self.spec.object_stdin
    }

    fn run_for(
        &self,
        key: Key,
        event: EventType,
        args: Result<Vec<String>, TemplateMissed>,
        object: Value,
    ) -> CommandRun {
        let resource_version = bosun_core::object::resource_version(&object).to_string();
        let object = if self.wants_object() { ObjectSource::Inline(Arc::new(object)) } else { ObjectSource::None };
        CommandRun { key, event, args, resource_version, object, attempt: 0 }
    }

    fn watch(&self) -> impl Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send + use<> {
        let mut config = watcher::Config::default();
        if let Some(labels) = &self.spec.label_selector {
            config = config.labels(labels);
        }
        if let Some(fields) = &self.spec.field_selector {
            config = config.fields(fields);
        }
        watcher(self.api(self.namespace()), config).default_backoff()
    }

    /// Observes until `--once` is done, `--exit-after` elapses, `shutdown` completes or too many
    /// errors happened; then waits for the commands still running.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Summary {
        let exec = Arc::new(Exec {
            spec: self.spec.clone(),
            namespaced: self.resource.namespaced,
            api: self.api(self.namespace()),
            client: self.client.clone(),
            resource: self.resource.api_resource(),
            output: self.output.clone(),
        });
        let mut state = Loop {
            observer: &self,
            exec,
            known: Known::default(),
            queue: Queue::new(self.spec.concurrency),
            running: JoinSet::new(),
            retries: JoinSet::new(),
            names: JoinSet::new(),
            synced: false,
            runs: 0,
            errors: 0,
            stop: None,
        };
        let mut events = std::pin::pin!(self.watch());
        let mut shutdown = std::pin::pin!(shutdown);
        let exit_after = tokio::time::sleep(self.spec.exit_after.unwrap_or(Duration::MAX / 4));
        let mut exit_after = std::pin::pin!(exit_after);
        let period = self.spec.resync.unwrap_or(Duration::MAX / 4);
        let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            state.start_runs();
            self.metrics.gauges(state.queue.waiting(), state.queue.running(), state.known.len());
            if state.stop.is_some() {
                break;
            }
            if self.spec.once && state.synced && state.is_idle() {
                state.stop = Some(Stop::Once);
                break;
            }
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => state.event(event),
                    Some(Err(error)) => {
                        self.metrics.watch_error();
                        state.error(RunError::Watch { resource: self.resource.display(), source: error });
                    }
                    None => state.stop = Some(Stop::Signal),
                },
                Some(finished) = state.running.join_next() => match finished {
                    Ok(finished) => state.finished(finished),
                    Err(error) => state.error(error.into()),
                },
                Some(Ok(run)) = state.retries.join_next() => state.retry(run),
                Some(Ok(stage)) = state.names.join_next() => state.names_stage(stage),
                _ = resync.tick(), if self.spec.resync.is_some() && state.synced => state.resync(),
                () = &mut exit_after, if self.spec.exit_after.is_some() => state.stop = Some(Stop::ExitAfter),
                () = &mut shutdown => state.stop = Some(Stop::Signal),
            }
        }
        // Commands already running finish; nothing new starts.
        while let Some(finished) = state.running.join_next().await {
            if let Ok(finished) = finished {
                state.finished(finished);
            }
        }
        self.metrics.gauges(state.queue.waiting(), 0, state.known.len());
        Summary { stop: state.stop.unwrap_or(Stop::Signal), runs: state.runs, errors: state.errors }
    }
}
