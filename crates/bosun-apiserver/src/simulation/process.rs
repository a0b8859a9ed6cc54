//! Decisions for `--run-pods`, where a container whose command exists on the host runs as a
//! local process: whether a container can run and as what, its environment (from the spec,
//! ConfigMaps, Secrets and the pod's fields), the exit code a finished process reports, and
//! which lines of a container's log a request asks for. The acting layer is [`super::runtime`].

mod images;
pub mod policy;
pub mod probes;
pub mod volumes;

use std::{collections::BTreeMap, path::PathBuf};

use base64::Engine;
use serde_json::Value;

/// How a container of a pod runs under `--run-pods`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// As a local process: the program found on the host and its arguments.
    Local {
        /// The program (an absolute path).
        program: PathBuf,
        /// Its arguments (the rest of `command`, then `args`).
        args: Vec<String>,
        /// The user and group it runs as, if not the server's ([`policy::identity`]).
        identity: Option<policy::Identity>,
    },
    /// Simulated, for this reason (said in an Event).
    Simulated(String),
}

/// How a container runs: Kubernetes runs `command` + `args`; with no `command`, the image's
/// entrypoint with `args` (else its `CMD`). bosun never pulls images: for well-known ones the
/// [`images`] table says what they run, others are simulated. `find` resolves a program name
/// as a shell would (absolute paths and `PATH`). `$(VAR)` references in the command and
/// arguments are expanded from `env`.
pub fn plan(spec: &Value, env: &[(String, String)], find: impl Fn(&str) -> Option<PathBuf>) -> Plan {
    let name = spec.get("name").and_then(Value::as_str).unwrap_or_default();
    let strings = |field: &str| -> Vec<String> {
        spec.get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|s| expand(s, env))
            .collect()
    };
    let command = strings("command");
    let image = spec.get("image").and_then(Value::as_str).unwrap_or_default();
    let from_image = command.is_empty();
    let line = if from_image {
        match images::command_line(image, &strings("args")) {
            Some(line) => line,
            None => {
                return Plan::Simulated(format!(
                    "container {name} has no command and --run-pods does not know what image {image:?} runs (images are not used; docs/apiserver.md lists the images it knows), so the container is simulated"
                ));
            }
        }
    } else {
        [command, strings("args")].concat()
    };
    let Some((first, rest)) = line.split_first() else {
        return Plan::Simulated(format!("container {name} has nothing to run, so it is simulated"));
    };
    match find(first).or_else(|| images::host_name(image, first).and_then(&find)) {
        Some(program) => Plan::Local { program, args: rest.to_vec(), identity: None },
        // Said so for a command the image stands for: the user never wrote it.
        None if from_image => Plan::Simulated(format!(
            "container {name}: image {image:?} runs {first:?}, which is not installed on this host (or not runnable by the user it would run as); --run-pods runs containers as host commands and never pulls images, so the container is simulated"
        )),
        None => Plan::Simulated(format!(
            "container {name}: command {first:?} is not found on this host (or not runnable by the user it would run as), so the container is simulated"
        )),
    }
}

/// Expands `$(NAME)` from `env` as the kubelet does: unknown references stay as they are and
/// `$$` escapes a `$`.
pub fn expand(text: &str, env: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match env.iter().rev().find(|(key, _)| key == name) {
                Some((_, value)) => out.push_str(value),
                None => out.push_str(&rest[at..at + end + 3]),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The objects environment variables come from: ConfigMaps and Secrets of the pod's
/// namespace, by name.
pub trait Sources {
    /// A ConfigMap's `data`, if it exists.
    fn config_map(&self, name: &str) -> Option<BTreeMap<String, String>>;
    /// A Secret's `data` (decoded), if it exists.
    fn secret(&self, name: &str) -> Option<BTreeMap<String, String>>;
}

/// The data of a ConfigMap object (`data`, and `binaryData` as text where it is UTF-8).
pub fn config_map_data(object: &Value) -> BTreeMap<String, String> {
    let mut data: BTreeMap<String, String> = object
        .get("data")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    data.extend(decoded(object.get("binaryData")));
    data
}

/// The data of a Secret object (`data` decoded, and `stringData`).
pub fn secret_data(object: &Value) -> BTreeMap<String, String> {
    let mut data = decoded(object.get("data"));
    if let Some(strings) = object.get("stringData").and_then(Value::as_object) {
        data.extend(strings.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))));
    }
    data
}

fn decoded(map: Option<&Value>) -> BTreeMap<String, String> {
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let bytes = base64::engine::general_purpose::STANDARD.decode(v.as_str()?).ok()?;
            Some((k.clone(), String::from_utf8(bytes).ok()?))
        })
        .collect()
}

/// The value of a `fieldRef` path of a pod, as the downward API gives it.
fn field_of(pod: &Value, path: &str) -> Option<String> {
    let quoted = |prefix: &str| {
        path.strip_prefix(prefix)?.strip_suffix("']").map(|key| key.trim_start_matches('\'').to_string())
    };
    if let Some(key) = quoted("metadata.labels['") {
        return pod.pointer("/metadata/labels").and_then(|l| l.get(&key)).and_then(Value::as_str).map(String::from);
    }
    if let Some(key) = quoted("metadata.annotations['") {
        return pod
            .pointer("/metadata/annotations")
            .and_then(|l| l.get(&key))
            .and_then(Value::as_str)
            .map(String::from);
    }
    let pointer = match path {
        "metadata.name" => "/metadata/name",
        "metadata.namespace" => "/metadata/namespace",
        "metadata.uid" => "/metadata/uid",
        "spec.nodeName" => "/spec/nodeName",
        "spec.serviceAccountName" => "/spec/serviceAccountName",
        "status.podIP" => "/status/podIP",
        "status.hostIP" => "/status/hostIP",
        _ => return None,
    };
    Some(pod.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string())
}

/// A container's environment: `envFrom` first, then `env` (later entries win, as upstream);
/// an error names the variable and the missing object or key unless the reference is
/// optional.
pub fn environment(pod: &Value, spec: &Value, sources: &dyn Sources) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, name: String, value: String| {
        env.retain(|(key, _)| *key != name);
        env.push((name, value));
    };
    for from in spec.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
        let prefix = from.get("prefix").and_then(Value::as_str).unwrap_or_default();
        let (kind, reference, data) = if let Some(reference) = from.get("configMapRef") {
            let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
            ("configmap", reference, sources.config_map(name))
        } else if let Some(reference) = from.get("secretRef") {
            let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
            ("secret", reference, sources.secret(name))
        } else {
            continue;
        };
        match data {
            Some(data) => {
                for (key, value) in data {
                    set(&mut env, format!("{prefix}{key}"), value);
                }
            }
            None if reference.get("optional").and_then(Value::as_bool) == Some(true) => {}
            None => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
                return Err(format!("{kind} \"{name}\" not found"));
            }
        }
    }
    for variable in spec.get("env").and_then(Value::as_array).into_iter().flatten() {
        let name = variable.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Some(value) = variable.get("value").and_then(Value::as_str) {
            let value = expand(value, &env);
            set(&mut env, name, value);
            continue;
        }
        let Some(from) = variable.get("valueFrom") else {
            set(&mut env, name, String::new());
            continue;
        };
        let keyed = |reference: &Value, kind: &str, data: Option<BTreeMap<String, String>>| {
            let object = reference.get("name").and_then(Value::as_str).unwrap_or_default();
            let key = reference.get("key").and_then(Value::as_str).unwrap_or_default();
            let optional = reference.get("optional").and_then(Value::as_bool) == Some(true);
            match data {
                None if optional => Ok(None),
                None => Err(format!("{kind} \"{object}\" not found")),
                Some(data) => match data.get(key) {
                    Some(value) => Ok(Some(value.clone())),
                    None if optional => Ok(None),
                    None => Err(format!("couldn't find key {key} in {kind} \"{object}\" (variable {name})")),
                },
            }
        };
        let value = if let Some(reference) = from.get("configMapKeyRef") {
            let object = reference.get("name").and_then(Value::as_str).unwrap_or_default();
            keyed(reference, "configmap", sources.config_map(object))?
        } else if let Some(reference) = from.get("secretKeyRef") {
            let object = reference.get("name").and_then(Value::as_str).unwrap_or_default();
            keyed(reference, "secret", sources.secret(object))?
        } else if let Some(path) = from.pointer("/fieldRef/fieldPath").and_then(Value::as_str) {
            Some(field_of(pod, path).ok_or_else(|| format!("variable {name}: unsupported fieldRef {path:?}"))?)
        } else {
            // resourceFieldRef: no limits are enforced locally, so there is nothing to report.
            None
        };
        if let Some(value) = value {
            set(&mut env, name, value);
        }
    }
    Ok(env)
}

/// The exit code the kubelet reports for a process: its code, or 128 + the signal that ended
/// it.
pub fn exit_code(code: Option<i32>, signal: Option<i32>) -> i32 {
    code.unwrap_or_else(|| 128 + signal.unwrap_or(0))
}

/// One line a container wrote (with its newline, if it had one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// When it was written.
    pub at: jiff::Timestamp,
    /// The bytes.
    pub text: Vec<u8>,
}

/// Which lines of a log a request wants (`tailLines`, `sinceSeconds`/`sinceTime`,
/// `timestamps`, `limitBytes`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// Only the last this many lines.
    pub tail: Option<usize>,
    /// Only lines written at or after this time.
    pub since: Option<jiff::Timestamp>,
    /// Prefix every line with its RFC 3339 time.
    pub timestamps: bool,
    /// At most this many bytes.
    pub limit_bytes: Option<usize>,
}

/// The first lines of a log to send, as the options say; following a log, later lines only
/// get [`render`]ed.
pub fn select<'a>(lines: &'a [LogLine], options: &LogOptions) -> &'a [LogLine] {
    let start = options.since.map_or(0, |since| lines.partition_point(|line| line.at < since));
    let lines = &lines[start..];
    match options.tail {
        Some(tail) => &lines[lines.len().saturating_sub(tail)..],
        None => lines,
    }
}

/// Lines as sent: with their timestamps if asked.
pub fn render(lines: &[LogLine], timestamps: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        if timestamps {
            out.extend_from_slice(format!("{} ", line.at.strftime("%Y-%m-%dT%H:%M:%S%.fZ")).as_bytes());
        }
        out.extend_from_slice(&line.text);
    }
    out
}

#[cfg(test)]
mod tests;
