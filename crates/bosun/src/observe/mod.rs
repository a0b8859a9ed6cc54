//! `bosun observe`: run a command for every object of a kind and on every change — the script
//! controller, with `oc observe`'s contract and without its gotchas.
//!
//! One task owns all state and decides; commands run as child processes beside it:
//!
//! - a kube-runtime watcher lists and watches the resource (relisting by itself when the watch
//!   expires); [`known::Known`] turns its events into runs — new and changed objects, objects
//!   that vanished while the watch was down — keeping per object only its resourceVersion,
//!   template outputs and a change digest;
//! - [`queue::Queue`] holds runs: one at a time per object, later changes coalesced into one
//!   run with the newest state, `--concurrency` objects at once;
//! - `--names` lists what the user's external system knows; names the cluster no longer has
//!   (checked with a read, so a just-created object is never mistaken for a deleted one) get
//!   `--delete`, so deletions made while observe was down are not lost;
//! - failures retry with exponential backoff per object and count against `--maximum-errors`.

pub mod command;
pub mod known;
pub mod metrics;
pub mod queue;
pub mod resource;

use std::{
    collections::hash_map::DefaultHasher,
    hash::{Hash, Hasher},
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::{Stream, StreamExt};
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams},
    runtime::{WatchStreamExt, watcher},
};
use serde_json::Value;
use tokio::task::JoinSet;

use crate::jsonpath::{Template, TemplateError};
use command::{Exit, Extras};
use known::{EventType, Key, Known, ObjectSource, Rendered, Run};
use metrics::Metrics;
use queue::Queue;
use resource::{Candidate, UnknownResource};

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
    pub resource: String,
    /// Namespaces (ignored for cluster-scoped resources).
    pub namespaces: Namespaces,
    /// Label selector, sent to the server.
    pub label_selector: Option<String>,
    /// Field selector, sent to the server.
    pub field_selector: Option<String>,
    /// JSONPath templates whose outputs follow the name on the command line.
    pub templates: Vec<String>,
    /// A template that finds nothing is an error instead of an empty string.
    pub strict_templates: bool,
    /// Run on a change only when this template's output changed.
    pub on_change: Option<String>,
    /// The command and its first arguments.
    pub command: Vec<String>,
    /// The command run for deleted objects (empty: none).
    pub delete: Vec<String>,
    /// The command printing the names the external system knows (empty: none).
    pub names: Vec<String>,
    /// Run every object again this often.
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
    /// Print no header line before each run.
    pub quiet: bool,
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
            quiet: false,
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
        source: TemplateError,
    },
    /// A command cannot be started.
    #[error("{0}")]
    Command(String),
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
    Cluster(#[from] crate::cluster::ClusterError),
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
pub struct Outcome {
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
    templates: Vec<Template>,
    on_change: Option<Template>,
    metrics: Arc<Metrics>,
    listen: Option<(SocketAddr, tokio::task::JoinHandle<()>)>,
}

/// What running a command needs, shared by the running tasks.
struct Exec {
    spec: Spec,
    namespaced: bool,
    api: Api<DynamicObject>,
    client: Client,
    resource: kube::api::ApiResource,
}

/// A run that ended.
struct Finished {
    run: Run,
    /// How the command ended, or why it did not run; `Ok(None)` when there was nothing to run
    /// (the object of a resync was gone by then).
    result: Result<Option<Exit>, String>,
    seconds: f64,
}

/// Names work in flight: the names command's output, then the names confirmed gone.
enum NamesStage {
    Printed(Result<String, String>),
    Gone(Result<Vec<Key>, String>),
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
        let template =
            |flag: String, text: &str| Template::parse(text).map_err(|source| ObserveError::Template { flag, source });
        let templates = spec
            .templates
            .iter()
            .enumerate()
            .map(|(index, text)| template(format!("--template #{} ({text:?})", index + 1), text))
            .collect::<Result<Vec<_>, _>>()?;
        let on_change = spec.on_change.as_deref().map(|text| template("--on-change".into(), text)).transpose()?;
        command::check(&spec.command, "command").map_err(ObserveError::Command)?;
        if !spec.delete.is_empty() {
            command::check(&spec.delete, "--delete").map_err(ObserveError::Command)?;
            command::check(&spec.names, "--names").map_err(ObserveError::Command)?;
        }
        let candidates = resource::candidates(&client).await.map_err(|e| ObserveError::Cluster(e.into()))?;
        let resource = resource::resolve(&spec.resource, &candidates)?.clone();
        let metrics = Arc::new(Metrics::default());
        let listen = match spec.listen {
            Some(address) => Some(
                metrics::serve(metrics.clone(), address)
                    .await
                    .map_err(|source| ObserveError::Listen { address, source })?,
            ),
            None => None,
        };
        Ok(Observer { client, spec, resource, templates, on_change, metrics, listen })
    }

    /// The resource observed.
    pub fn resource(&self) -> &Candidate {
        &self.resource
    }

    /// Where `/metrics` and `/healthz` are served.
    pub fn listen_address(&self) -> Option<SocketAddr> {
        self.listen.as_ref().map(|(address, _)| *address)
    }

    /// The metrics.
    pub fn metrics(&self) -> Arc<Metrics> {
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

    fn render(&self, key: &Key, object: &Value) -> Rendered {
        let args = self
            .templates
            .iter()
            .zip(&self.spec.templates)
            .map(|(template, text)| {
                template
                    .render(object, self.spec.strict_templates)
                    .map_err(|missing| format!("{}/{key}: template {text:?}: {missing}", self.resource.kind))
            })
            .collect();
        let change = self.on_change.as_ref().map(|t| digest(&t.render(object, false).unwrap_or_default()));
        Rendered { args, change }
    }

    fn wants_object(&self) -> bool {
        self.spec.object_env_var.is_some() || self.spec.object_stdin
    }

    fn run_for(&self, key: Key, event: EventType, args: Result<Vec<String>, String>, object: Value) -> Run {
        let resource_version = crate::object::resource_version(&object).to_string();
        let object = if self.wants_object() { ObjectSource::Inline(Arc::new(object)) } else { ObjectSource::None };
        Run { key, event, args, resource_version, object, attempt: 0 }
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
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Outcome {
        let exec = Arc::new(Exec {
            spec: self.spec.clone(),
            namespaced: self.resource.namespaced,
            api: self.api(self.namespace()),
            client: self.client.clone(),
            resource: self.resource.api_resource(),
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
                        state.error(format!("watching {}: {error}", self.resource.display()));
                    }
                    None => state.stop = Some(Stop::Signal),
                },
                Some(finished) = state.running.join_next() => match finished {
                    Ok(finished) => state.finished(finished),
                    Err(error) => state.error(format!("a command task failed: {error}")),
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
        Outcome { stop: state.stop.unwrap_or(Stop::Signal), runs: state.runs, errors: state.errors }
    }
}

/// The observer's state while it runs.
struct Loop<'a> {
    observer: &'a Observer,
    exec: Arc<Exec>,
    known: Known,
    queue: Queue,
    running: JoinSet<Finished>,
    retries: JoinSet<Run>,
    names: JoinSet<NamesStage>,
    synced: bool,
    runs: u64,
    errors: u64,
    stop: Option<Stop>,
}

impl Loop<'_> {
    fn is_idle(&self) -> bool {
        self.queue.is_idle() && self.running.is_empty() && self.retries.is_empty() && self.names.is_empty()
    }

    fn start_runs(&mut self) {
        if self.stop.is_some() {
            return;
        }
        while let Some(run) = self.queue.start() {
            self.running.spawn(perform(run, self.exec.clone()));
        }
    }

    /// Counts an error; too many stop the observer.
    fn error(&mut self, message: String) {
        self.errors += 1;
        eprintln!("bosun observe: {message}");
        if self.observer.spec.maximum_errors.is_some_and(|limit| self.errors > limit) {
            eprintln!("bosun observe: more than {} errors; stopping", self.errors - 1);
            self.stop = Some(Stop::TooManyErrors);
        }
    }

    fn event(&mut self, event: watcher::Event<DynamicObject>) {
        let observer = self.observer;
        match event {
            watcher::Event::Init => self.known.begin_list(),
            watcher::Event::InitApply(object) | watcher::Event::Apply(object) => {
                let object = crate::object::to_value(&object);
                let key = Key::of(&object);
                let version = crate::object::resource_version(&object).to_string();
                let rendered = observer.render(&key, &object);
                let new_version = self.known.version(&key).is_some_and(|known| known != version);
                let decided = if self.known.is_listing() {
                    self.known.listed(&key, &version, &rendered)
                } else {
                    self.known.applied(&key, &version, &rendered)
                };
                match decided {
                    Some(event) => self.queue.push(observer.run_for(key, event, rendered.args, object)),
                    None if new_version => observer.metrics.skipped(),
                    None => {}
                }
            }
            watcher::Event::InitDone => {
                for (key, args) in self.known.end_list() {
                    self.deleted(key, Ok(args), Value::Null);
                }
                if !self.synced {
                    self.synced = true;
                    observer.metrics.set_ready();
                    self.start_names();
                }
            }
            watcher::Event::Delete(object) => {
                let object = crate::object::to_value(&object);
                let key = Key::of(&object);
                let args = match self.known.deleted(&key) {
                    Some(args) => Ok(args),
                    None => observer.render(&key, &object).args,
                };
                self.deleted(key, args, object);
            }
        }
    }

    fn deleted(&mut self, key: Key, args: Result<Vec<String>, String>, object: Value) {
        if self.observer.spec.delete.is_empty() {
            return;
        }
        let run = if object.is_null() {
            Run {
                key,
                event: EventType::Deleted,
                args,
                resource_version: String::new(),
                object: ObjectSource::None,
                attempt: 0,
            }
        } else {
            self.observer.run_for(key, EventType::Deleted, args, object)
        };
        self.queue.push(run);
    }

    fn finished(&mut self, finished: Finished) {
        self.queue.done(&finished.run.key);
        let spec = &self.observer.spec;
        let Finished { run, result, seconds } = finished;
        let failure = match result {
            Ok(None) => return,
            Ok(Some(Exit::Code(0))) => {
                self.runs += 1;
                self.observer.metrics.ran(run.event, true, seconds);
                return;
            }
            Ok(Some(exit)) => {
                self.runs += 1;
                self.observer.metrics.ran(run.event, false, seconds);
                if let (Exit::Code(code), Some(retry_on)) = (&exit, spec.retry_on_exit_code)
                    && *code == retry_on
                    && run.attempt < spec.retry_count
                {
                    let attempt = run.attempt + 1;
                    let wait = command::backoff(attempt, spec.retry_backoff);
                    eprintln!(
                        "bosun observe: {} {}: exit code {code}; retry {attempt} of {} in {}",
                        run.event.as_str(),
                        run.key,
                        spec.retry_count,
                        crate::package::Interval(wait)
                    );
                    self.retries.spawn(async move {
                        tokio::time::sleep(wait).await;
                        Run { attempt, ..run }
                    });
                    return;
                }
                match exit {
                    Exit::Code(code) => format!("exit code {code}"),
                    Exit::Signal => "killed by a signal".to_string(),
                }
            }
            Err(message) => {
                self.observer.metrics.ran(run.event, false, seconds);
                message
            }
        };
        self.error(format!("{} {}: command failed: {failure}", run.event.as_str(), run.key));
    }

    /// A retry is due: it runs unless a newer state of the object came (and ran) meanwhile.
    fn retry(&mut self, run: Run) {
        let current = match run.event {
            EventType::Deleted => !self.known.contains(&run.key),
            _ => self.known.version(&run.key) == Some(run.resource_version.as_str()),
        };
        if current {
            self.queue.push(run);
        }
    }

    fn resync(&mut self) {
        let object = if self.observer.wants_object() { ObjectSource::Fetch } else { ObjectSource::None };
        for run in self.known.resync(&object) {
            self.queue.push(run);
        }
        self.start_names();
    }

    fn start_names(&mut self) {
        let names = self.observer.spec.names.clone();
        if names.is_empty() {
            return;
        }
        self.names.spawn(async move {
            let Some((program, args)) = names.split_first() else {
                return NamesStage::Printed(Err("--names: no command".into()));
            };
            let output =
                tokio::process::Command::new(program).args(args).stdin(std::process::Stdio::null()).output().await;
            NamesStage::Printed(match output {
                Ok(output) if output.status.success() => Ok(String::from_utf8_lossy(&output.stdout).into_owned()),
                Ok(output) => Err(format!(
                    "--names failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                )),
                Err(error) => Err(format!("--names: {error}")),
            })
        });
    }

    fn names_stage(&mut self, stage: NamesStage) {
        match stage {
            NamesStage::Printed(Err(message)) | NamesStage::Gone(Err(message)) => self.error(message),
            NamesStage::Printed(Ok(output)) => {
                let observer = self.observer;
                let keys = match known::parse_names(&output, observer.resource.namespaced, observer.namespace()) {
                    Ok(keys) => keys,
                    Err(message) => return self.error(format!("--names printed {message}")),
                };
                let candidates: Vec<Key> = self.known.unknown(&keys).into_iter().cloned().collect();
                if candidates.is_empty() {
                    return;
                }
                let exec = self.exec.clone();
                let labels = observer.spec.label_selector.clone();
                let fields = observer.spec.field_selector.clone();
                self.names.spawn(async move { NamesStage::Gone(gone(&exec, candidates, labels, fields).await) });
            }
            NamesStage::Gone(Ok(keys)) => {
                for key in keys {
                    if !self.known.contains(&key) {
                        self.deleted(key, Ok(Vec::new()), Value::Null);
                    }
                }
            }
        }
    }
}

/// Runs one command: the template failure, the object (read now for resyncs), the header, the
/// environment and stdin.
async fn perform(run: Run, exec: Arc<Exec>) -> Finished {
    let started = Instant::now();
    let result = perform_inner(&run, &exec).await;
    Finished { run, result, seconds: started.elapsed().as_secs_f64() }
}

async fn perform_inner(run: &Run, exec: &Exec) -> Result<Option<Exit>, String> {
    let outputs = run.args.as_ref().map_err(Clone::clone)?;
    let spec = &exec.spec;
    let object = match &run.object {
        ObjectSource::None => None,
        ObjectSource::Inline(object) => Some(object.clone()),
        ObjectSource::Fetch => {
            let api = if exec.namespaced {
                Api::namespaced_with(exec.client.clone(), &run.key.namespace, &exec.resource)
            } else {
                exec.api.clone()
            };
            match api.get_opt(&run.key.name).await {
                Ok(Some(object)) => Some(Arc::new(crate::object::to_value(&object))),
                // Deleted since: the watch brings the deletion.
                Ok(None) => return Ok(None),
                Err(error) => return Err(format!("reading {} {}: {error}", exec.resource.kind, run.key)),
            }
        }
    };
    let base = if run.event == EventType::Deleted { &spec.delete } else { &spec.command };
    let line = command::command_line(base, &run.key, exec.namespaced, outputs);
    let json = object.as_ref().map(|object| object.to_string());
    let mut extras = Extras::default();
    if let Some(name) = &spec.type_env_var {
        extras.env.push((name.clone(), run.event.as_str().to_string()));
    }
    if let (Some(name), Some(json)) = (&spec.object_env_var, &json) {
        extras.env.push((name.clone(), json.clone()));
    }
    if spec.object_stdin {
        extras.stdin = Some(json.unwrap_or_default().into_bytes());
    }
    if !spec.quiet {
        println!("{}", command::header(run.event, &run.resource_version, &line));
    }
    command::execute(&line, extras).await.map(Some).map_err(|error| format!("cannot run {:?}: {error}", line[0]))
}

/// Of names `--names` printed and observe does not know, those the cluster really does not have
/// in the observed scope (a just-created object may not have reached the watch yet).
async fn gone(
    exec: &Exec,
    candidates: Vec<Key>,
    labels: Option<String>,
    fields: Option<String>,
) -> Result<Vec<Key>, String> {
    let mut gone = Vec::new();
    for key in candidates {
        let api: Api<DynamicObject> = if exec.namespaced {
            Api::namespaced_with(exec.client.clone(), &key.namespace, &exec.resource)
        } else {
            Api::all_with(exec.client.clone(), &exec.resource)
        };
        let by_name = format!("metadata.name={}", key.name);
        let mut params = ListParams::default().fields(&match &fields {
            Some(fields) => format!("{by_name},{fields}"),
            None => by_name,
        });
        if let Some(labels) = &labels {
            params = params.labels(labels);
        }
        match api.list_metadata(&params).await {
            Ok(list) if list.items.is_empty() => gone.push(key),
            Ok(_) => {}
            Err(error) => return Err(format!("checking {} {key}: {error}", exec.resource.kind)),
        }
    }
    Ok(gone)
}
