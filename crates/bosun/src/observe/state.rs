//! The running observer: its state, what each watch event, finished run, retry and `--names`
//! pass does to it, and the tasks that run commands.

use std::{sync::Arc, time::Instant};

use kube::{
    Api, Client,
    api::{DynamicObject, ListParams},
    runtime::watcher,
};
use serde_json::Value;
use tokio::task::JoinSet;

use super::{
    Event, Observer, Output, RunError, Spec, Stop, TemplateMissed,
    command::{self, Exit, Extras},
    known::{self, CommandRun, EventType, Key, Known, ObjectSource},
    queue::Queue,
};

/// What running a command needs, shared by the running tasks.
pub(super) struct Exec {
    pub(super) spec: Spec,
    pub(super) namespaced: bool,
    pub(super) api: Api<DynamicObject>,
    pub(super) client: Client,
    pub(super) resource: kube::api::ApiResource,
    pub(super) output: Arc<dyn Output>,
}

/// A run that ended.
pub(super) struct Finished {
    run: CommandRun,
    /// How the command ended, or why it did not run; `Ok(None)` when there was nothing to run
    /// (the object of a resync was gone by then).
    result: Result<Option<Exit>, RunError>,
    seconds: f64,
}

/// Names work in flight: the names command's output, then the names confirmed gone.
pub(super) enum NamesStage {
    Printed(Result<String, RunError>),
    Gone(Result<Vec<Key>, RunError>),
}

/// The observer's state while it runs.
pub(super) struct Loop<'a> {
    pub(super) observer: &'a Observer,
    pub(super) exec: Arc<Exec>,
    pub(super) known: Known,
    pub(super) queue: Queue,
    pub(super) running: JoinSet<Finished>,
    pub(super) retries: JoinSet<CommandRun>,
    pub(super) names: JoinSet<NamesStage>,
    pub(super) synced: bool,
    pub(super) runs: u64,
    pub(super) errors: u64,
    pub(super) stop: Option<Stop>,
}

impl Loop<'_> {
    pub(super) fn is_idle(&self) -> bool {
        self.queue.is_idle() && self.running.is_empty() && self.retries.is_empty() && self.names.is_empty()
    }

    pub(super) fn start_runs(&mut self) {
        if self.stop.is_some() {
            return;
        }
        while let Some(run) = self.queue.start() {
            self.running.spawn(perform(run, self.exec.clone()));
        }
    }

    /// Counts an error; too many stop the observer.
    pub(super) fn error(&mut self, error: RunError) {
        self.errors += 1;
        let output = &self.observer.output;
        output.event(&Event::Error(&error));
        if let Some(limit) = self.observer.spec.maximum_errors.filter(|limit| self.errors > *limit) {
            output.event(&Event::TooManyErrors { limit });
            self.stop = Some(Stop::TooManyErrors);
        }
    }

    pub(super) fn event(&mut self, event: watcher::Event<DynamicObject>) {
        let observer = self.observer;
        match event {
            watcher::Event::Init => self.known.begin_list(),
            watcher::Event::InitApply(object) | watcher::Event::Apply(object) => {
                let object = bosun_core::object::to_value(&object);
                let key = Key::of(&object);
                let version = bosun_core::object::resource_version(&object).to_string();
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
                let object = bosun_core::object::to_value(&object);
                let key = Key::of(&object);
                let args = match self.known.deleted(&key) {
                    Some(args) => Ok(args),
                    None => observer.render(&key, &object).args,
                };
                self.deleted(key, args, object);
            }
        }
    }

    fn deleted(&mut self, key: Key, args: Result<Vec<String>, TemplateMissed>, object: Value) {
        if self.observer.spec.delete.is_empty() {
            return;
        }
        let run = if object.is_null() {
            CommandRun {
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

    pub(super) fn finished(&mut self, finished: Finished) {
        self.queue.done(&finished.run.key);
        let spec = &self.observer.spec;
        let Finished { run, result, seconds } = finished;
        let error = match result {
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
                    self.observer.output.event(&Event::Retrying {
                        event: run.event,
                        key: &run.key,
                        code: *code,
                        attempt,
                        of: spec.retry_count,
                        wait,
                    });
                    self.retries.spawn(async move {
                        tokio::time::sleep(wait).await;
                        CommandRun { attempt, ..run }
                    });
                    return;
                }
                match exit {
                    Exit::Code(code) => RunError::Exit { event: run.event, key: run.key, code },
                    Exit::Signal(signal) => RunError::Killed { event: run.event, key: run.key, signal },
                }
            }
            Err(error) => {
                self.observer.metrics.ran(run.event, false, seconds);
                error
            }
        };
        self.error(error);
    }

    /// A retry is due: it runs unless a newer state of the object came (and ran) meanwhile.
    pub(super) fn retry(&mut self, run: CommandRun) {
        let current = match run.event {
            EventType::Deleted => !self.known.contains(&run.key),
            _ => self.known.version(&run.key) == Some(run.resource_version.as_str()),
        };
        if current {
            self.queue.push(run);
        }
    }

    pub(super) fn resync(&mut self) {
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
            // `prepare` checked that the command is there.
            let (program, args) = names.split_first().expect("--names has a command");
            let output =
                tokio::process::Command::new(program).args(args).stdin(std::process::Stdio::null()).output().await;
            NamesStage::Printed(match output {
                Ok(output) if output.status.success() => Ok(String::from_utf8_lossy(&output.stdout).into_owned()),
                Ok(output) => Err(RunError::NamesFailed {
                    status: output.status,
                    stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
                }),
                Err(error) => Err(RunError::NamesStart(error)),
            })
        });
    }

    pub(super) fn names_stage(&mut self, stage: NamesStage) {
        match stage {
            NamesStage::Printed(Err(error)) | NamesStage::Gone(Err(error)) => self.error(error),
            NamesStage::Printed(Ok(output)) => {
                let observer = self.observer;
                let keys = match known::parse_names(&output, observer.resource.namespaced, observer.namespace()) {
                    Ok(keys) => keys,
                    Err(bad) => return self.error(bad.into()),
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
pub(super) async fn perform(run: CommandRun, exec: Arc<Exec>) -> Finished {
    let started = Instant::now();
    let result = perform_inner(&run, &exec).await;
    Finished { run, result, seconds: started.elapsed().as_secs_f64() }
}

async fn perform_inner(run: &CommandRun, exec: &Exec) -> Result<Option<Exit>, RunError> {
    let (event, key) = (run.event, run.key.clone());
    let outputs = match &run.args {
        Ok(outputs) => outputs,
        Err(missed) => return Err(RunError::Template { event, key, source: missed.clone() }),
    };
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
                Ok(Some(object)) => Some(Arc::new(bosun_core::object::to_value(&object))),
                // Deleted since: the watch brings the deletion.
                Ok(None) => return Ok(None),
                Err(source) => return Err(RunError::Read { event, key, kind: exec.resource.kind.clone(), source }),
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
    exec.output.event(&Event::Running { event, key: &run.key, resource_version: &run.resource_version, line: &line });
    command::execute(&line, extras).await.map(Some).map_err(|source| RunError::Start {
        event,
        key,
        program: line[0].clone(),
        source,
    })
}

/// Of names `--names` printed and observe does not know, those the cluster really does not have
/// in the observed scope (a just-created object may not have reached the watch yet).
async fn gone(
    exec: &Exec,
    candidates: Vec<Key>,
    labels: Option<String>,
    fields: Option<String>,
) -> Result<Vec<Key>, RunError> {
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
            Err(source) => return Err(RunError::NamesCheck { kind: exec.resource.kind.clone(), key, source }),
        }
    }
    Ok(gone)
}
