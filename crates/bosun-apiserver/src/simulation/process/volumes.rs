//! A pod's volumes under `--run-pods`. Its containers are processes on this host, with no
//! mount namespace of their own, so a volume cannot appear at its `mountPath`: its files are
//! written to a directory of the pod's own instead, and a path beneath a mount path in a
//! container's command, arguments, environment and working directory (and in an `exec`'d
//! command) is rewritten to that directory. `/opt/server.py` with a ConfigMap mounted at
//! `/opt` runs the ConfigMap's `server.py`. The files are written when the pod's processes
//! are first planned; later changes to the objects are not followed.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde_json::Value;

use super::{Sources, field_of};

/// What a volume holds on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Files to write, by path within the volume, with their mode.
    Files(BTreeMap<String, (String, u32)>),
    /// An empty directory the containers may write to (`emptyDir`).
    Empty,
    /// A directory of the host itself (`hostPath`).
    Host(PathBuf),
    /// Nothing: why the volume is not available to local processes (said in an Event).
    Unavailable(String),
}

/// A container's mount: where it asked for a volume, and where the volume is on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The `mountPath`.
    pub path: String,
    /// The directory (or, with a `subPath`, the file) on this host.
    pub host: PathBuf,
}

fn items_of(source: &Value) -> Option<Vec<(String, String)>> {
    let items = source.get("items")?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|item| Some((item.get("key")?.as_str()?.to_string(), item.get("path")?.as_str()?.to_string())))
            .collect(),
    )
}

fn mode_of(value: Option<&Value>, default: u32) -> u32 {
    value.and_then(Value::as_u64).and_then(|m| u32::try_from(m).ok()).unwrap_or(default)
}

/// The files of a ConfigMap or Secret volume: every key (or the listed `items`) as a file.
fn object_files(
    kind: &str,
    name: &str,
    source: &Value,
    data: Option<BTreeMap<String, String>>,
) -> Result<BTreeMap<String, (String, u32)>, String> {
    let optional = source.get("optional").and_then(Value::as_bool) == Some(true);
    let default_mode = mode_of(source.get("defaultMode"), 0o644);
    let Some(data) = data else {
        return if optional { Ok(BTreeMap::new()) } else { Err(format!("{kind} \"{name}\" not found")) };
    };
    let Some(items) = items_of(source) else {
        return Ok(data.into_iter().map(|(key, text)| (key, (text, default_mode))).collect());
    };
    let mut files = BTreeMap::new();
    for (key, path) in items {
        match data.get(&key) {
            Some(text) => {
                files.insert(path, (text.clone(), default_mode));
            }
            None if optional => {}
            None => return Err(format!("{kind} \"{name}\" has no key \"{key}\"")),
        }
    }
    Ok(files)
}

/// The files of a `downwardAPI` volume: each item's field of the pod.
fn downward_files(pod: &Value, source: &Value) -> Result<BTreeMap<String, (String, u32)>, String> {
    let default_mode = mode_of(source.get("defaultMode"), 0o644);
    let items = source.get("items").and_then(Value::as_array).into_iter().flatten();
    let mut files = BTreeMap::new();
    for item in items {
        let path = item.get("path").and_then(Value::as_str).unwrap_or_default();
        let Some(field) = item.pointer("/fieldRef/fieldPath").and_then(Value::as_str) else {
            return Err(format!("item {path}: only fieldRef is available to local processes"));
        };
        let text = match field {
            "metadata.labels" | "metadata.annotations" => {
                let map = pod.pointer(&format!("/{}", field.replace('.', "/"))).and_then(Value::as_object);
                map.into_iter().flatten().map(|(k, v)| format!("{k}={v}\n")).collect()
            }
            _ => field_of(pod, field).ok_or_else(|| format!("item {path}: field {field} is not supported"))?,
        };
        files.insert(path.to_string(), (text, mode_of(item.get("mode"), default_mode)));
    }
    Ok(files)
}

/// The files of a `projected` volume: its ConfigMap, Secret and downward API sources, in
/// order (a later file of the same path wins). A service account token is left out: no token
/// is issued for local processes (the volume Kubernetes adds to every pod has one).
fn projected_files(
    pod: &Value,
    source: &Value,
    sources: &dyn Sources,
) -> Result<BTreeMap<String, (String, u32)>, String> {
    let mut files = BTreeMap::new();
    let default_mode = source.get("defaultMode").cloned().unwrap_or(Value::Null);
    for projection in source.get("sources").and_then(Value::as_array).into_iter().flatten() {
        let with_mode = |inner: &Value| {
            let mut inner = inner.clone();
            if inner.get("defaultMode").is_none() && !default_mode.is_null() {
                inner["defaultMode"] = default_mode.clone();
            }
            inner
        };
        let named = |inner: &Value| inner.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        let more = if let Some(inner) = projection.get("configMap") {
            object_files("configmap", &named(inner), &with_mode(inner), sources.config_map(&named(inner)))?
        } else if let Some(inner) = projection.get("secret") {
            object_files("secret", &named(inner), &with_mode(inner), sources.secret(&named(inner)))?
        } else if let Some(inner) = projection.get("downwardAPI") {
            downward_files(pod, &with_mode(inner))?
        } else {
            continue;
        };
        files.extend(more);
    }
    Ok(files)
}

/// What each of a pod's volumes holds, by name, from the objects it names.
pub fn contents(pod: &Value, sources: &dyn Sources) -> Vec<(String, Content)> {
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten();
    volumes
        .map(|volume| {
            let name = volume.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let named =
                |source: &Value, field: &str| source.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
            let files = if let Some(source) = volume.get("configMap") {
                let object = named(source, "name");
                object_files("configmap", &object, source, sources.config_map(&object))
            } else if let Some(source) = volume.get("secret") {
                let object = named(source, "secretName");
                object_files("secret", &object, source, sources.secret(&object))
            } else if let Some(source) = volume.get("downwardAPI") {
                downward_files(pod, source)
            } else if let Some(source) = volume.get("projected") {
                projected_files(pod, source, sources)
            } else if volume.get("emptyDir").is_some() {
                return (name, Content::Empty);
            } else if let Some(path) = volume.pointer("/hostPath/path").and_then(Value::as_str) {
                return (name, Content::Host(PathBuf::from(path)));
            } else {
                let kind =
                    volume.as_object().and_then(|o| o.keys().find(|k| *k != "name")).cloned().unwrap_or_default();
                Err(format!("{kind} volumes are not available to local processes"))
            };
            let content = match files {
                Ok(files) => Content::Files(files),
                Err(why) => Content::Unavailable(format!("volume {name}: {why}")),
            };
            (name, content)
        })
        .collect()
}

/// A container's mounts: each `volumeMount` of a volume that is on this host (`dirs`, by
/// volume name), longest mount path first (the innermost mount wins a path).
pub fn mounts(spec: &Value, dirs: &BTreeMap<String, PathBuf>) -> Vec<Mount> {
    let asked = spec.get("volumeMounts").and_then(Value::as_array).into_iter().flatten();
    let mut mounts: Vec<Mount> = asked
        .filter_map(|mount| {
            let dir = dirs.get(mount.get("name")?.as_str()?)?;
            let path = mount.get("mountPath")?.as_str()?.trim_end_matches('/').to_string();
            let host = match mount.get("subPath").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                Some(sub) => dir.join(sub),
                None => dir.clone(),
            };
            (!path.is_empty()).then_some(Mount { path, host })
        })
        .collect();
    mounts.sort_by_key(|mount| std::cmp::Reverse(mount.path.len()));
    mounts
}

/// Whether a byte can be part of a path's name (so a mount path next to it is not a path of
/// its own: `/opt` is not in `/optional` or `/usr/opt`).
fn in_name(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-' | b'/')
}

/// `text` with every path beneath a mount path rewritten to the mount's directory on this
/// host: a mount path counts where it starts a path (nothing of a name before it) and is
/// whole (`/` or the end of the path after it).
pub fn rewrite(text: &str, mounts: &[Mount]) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        let starts_path = bytes[at] == b'/' && (at == 0 || !in_name(bytes[at - 1]));
        let found = starts_path
            .then(|| {
                mounts.iter().find(|mount| {
                    let end = at + mount.path.len();
                    text[at..].starts_with(&mount.path)
                        && (end == bytes.len() || bytes[end] == b'/' || !in_name(bytes[end]))
                })
            })
            .flatten();
        match found {
            Some(mount) => {
                out.push_str(&mount.host.to_string_lossy());
                at += mount.path.len();
            }
            None => {
                let next = text[at..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&text[at..at + next]);
                at += next;
            }
        }
    }
    out
}

/// A container's spec with its mounts' paths rewritten in `command`, `args`, `workingDir`
/// and the values of `env`.
pub fn rewrite_container(spec: &Value, mounts: &[Mount]) -> Value {
    let mut spec = spec.clone();
    if mounts.is_empty() {
        return spec;
    }
    let strings = |value: &mut Value| {
        if let Some(list) = value.as_array_mut() {
            for item in list.iter_mut() {
                if let Some(text) = item.as_str() {
                    *item = Value::String(rewrite(text, mounts));
                }
            }
        }
    };
    if let Some(command) = spec.get_mut("command") {
        strings(command);
    }
    if let Some(args) = spec.get_mut("args") {
        strings(args);
    }
    if let Some(dir) = spec.get("workingDir").and_then(Value::as_str) {
        spec["workingDir"] = Value::String(rewrite(dir, mounts));
    }
    if let Some(env) = spec.get_mut("env").and_then(Value::as_array_mut) {
        for var in env {
            if let Some(value) = var.get("value").and_then(Value::as_str) {
                var["value"] = Value::String(rewrite(value, mounts));
            }
        }
    }
    spec
}

/// Writes a volume's content to `dir`, readable (and for `emptyDir` writable) by whichever
/// user the pod's processes run as; returns where the volume is on this host.
pub fn write(dir: &Path, content: &Content) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let files = match content {
        Content::Host(path) => return Ok(path.clone()),
        Content::Unavailable(why) => return Err(std::io::Error::other(why.clone())),
        Content::Empty => {
            std::fs::create_dir_all(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))?;
            return Ok(dir.to_path_buf());
        }
        Content::Files(files) => files,
    };
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for (path, (text, mode)) in files {
        // A path with `..` would write outside the volume; upstream refuses it too.
        if Path::new(path).components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            return Err(std::io::Error::other(format!("file path {path:?} must be relative, without '..'")));
        }
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&file, text)?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode & 0o777))?;
    }
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mount(path: &str, host: &str) -> Mount {
        Mount { path: path.into(), host: host.into() }
    }

    #[test]
    fn paths_beneath_a_mount_are_rewritten_and_nothing_else() {
        let mounts = [mount("/opt/conf", "/tmp/v/conf"), mount("/opt", "/tmp/v/opt")];
        for (text, expected) in [
            ("/opt/port-server.py", "/tmp/v/opt/port-server.py"),
            ("/opt", "/tmp/v/opt"),
            ("/opt/", "/tmp/v/opt/"),
            ("/opt/conf/app.yaml", "/tmp/v/conf/app.yaml"),
            ("--config=/opt/conf/a.yaml", "--config=/tmp/v/conf/a.yaml"),
            ("python /opt/a.py && cat /opt/b", "python /tmp/v/opt/a.py && cat /tmp/v/opt/b"),
            ("'/opt/x'", "'/tmp/v/opt/x'"),
            ("/optional", "/optional"),
            ("/usr/opt/x", "/usr/opt/x"),
            ("opt/x", "opt/x"),
            ("/öpt/opt", "/öpt/opt"),
        ] {
            assert_eq!(rewrite(text, &mounts), expected, "{text}");
        }
    }

    #[test]
    fn mounts_follow_volume_mounts_with_sub_paths_innermost_first() {
        let dirs: BTreeMap<String, PathBuf> =
            [("code".to_string(), PathBuf::from("/v/code")), ("conf".to_string(), PathBuf::from("/v/conf"))].into();
        let spec = json!({"volumeMounts": [
            {"name": "code", "mountPath": "/opt/"},
            {"name": "conf", "mountPath": "/opt/app/config.yaml", "subPath": "app.yaml"},
            {"name": "unknown", "mountPath": "/data"}]});
        assert_eq!(
            mounts(&spec, &dirs),
            vec![mount("/opt/app/config.yaml", "/v/conf/app.yaml"), mount("/opt", "/v/code")]
        );
    }

    struct Objects;
    impl Sources for Objects {
        fn config_map(&self, name: &str) -> Option<BTreeMap<String, String>> {
            (name == "code")
                .then(|| [("a.py".to_string(), "print(1)".to_string()), ("b".to_string(), "B".to_string())].into())
        }
        fn secret(&self, _: &str) -> Option<BTreeMap<String, String>> {
            None
        }
    }

    #[test]
    fn volumes_hold_their_objects_files_or_say_why_not() {
        let pod = json!({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"volumes": [
            {"name": "all", "configMap": {"name": "code"}},
            {"name": "some", "configMap": {"name": "code", "defaultMode": 493, "items": [{"key": "a.py", "path": "bin/a.py"}]}},
            {"name": "missing", "secret": {"secretName": "tls"}},
            {"name": "maybe", "secret": {"secretName": "tls", "optional": true}},
            {"name": "scratch", "emptyDir": {}},
            {"name": "host", "hostPath": {"path": "/srv"}},
            {"name": "info", "downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                                                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "claim", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "kube-api-access-x1", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"path": "token"}},
                {"configMap": {"name": "code", "items": [{"key": "b", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}}]}});
        let files = |list: &[(&str, &str, u32)]| {
            Content::Files(list.iter().map(|(p, t, m)| ((*p).to_string(), ((*t).to_string(), *m))).collect())
        };
        assert_eq!(
            contents(&pod, &Objects),
            vec![
                ("all".into(), files(&[("a.py", "print(1)", 0o644), ("b", "B", 0o644)])),
                ("some".into(), files(&[("bin/a.py", "print(1)", 0o755)])),
                ("missing".into(), Content::Unavailable("volume missing: secret \"tls\" not found".into())),
                ("maybe".into(), files(&[])),
                ("scratch".into(), Content::Empty),
                ("host".into(), Content::Host("/srv".into())),
                ("info".into(), files(&[("labels", "app=\"web\"\n", 0o644), ("name", "web", 0o644)])),
                (
                    "claim".into(),
                    Content::Unavailable(
                        "volume claim: persistentVolumeClaim volumes are not available to local processes".into()
                    )
                ),
                ("kube-api-access-x1".into(), files(&[("ca.crt", "B", 0o644), ("namespace", "web", 0o644)])),
            ]
        );
    }

    #[test]
    fn a_container_sees_its_mounts_in_command_arguments_environment_and_working_directory() {
        let spec = json!({"command": ["python", "-u", "/opt/server.py"], "args": ["/opt"], "workingDir": "/opt",
                          "env": [{"name": "CONF", "value": "/opt/c"}, {"name": "X", "valueFrom": {}}]});
        let rewritten = rewrite_container(&spec, &[mount("/opt", "/v")]);
        assert_eq!(
            rewritten,
            json!({"command": ["python", "-u", "/v/server.py"], "args": ["/v"], "workingDir": "/v",
                   "env": [{"name": "CONF", "value": "/v/c"}, {"name": "X", "valueFrom": {}}]})
        );
    }
}
