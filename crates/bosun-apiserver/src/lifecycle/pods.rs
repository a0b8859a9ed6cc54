//! Pods as upstream's admission plugins admit them on creation. ServiceAccount: the account
//! named (or `default`) in both `serviceAccountName` and the deprecated `serviceAccount`, its
//! image pull secrets when the pod names none, and — unless automounting is turned off — a
//! projected `kube-api-access-xxxxx` volume (token, `kube-root-ca.crt`, namespace) mounted
//! read-only at `/var/run/secrets/kubernetes.io/serviceaccount` in every container. Priority:
//! the priority (and preemption policy) of the pod's PriorityClass, or of the global default
//! one, or 0. DefaultTolerationSeconds: tolerating `not-ready` and `unreachable` nodes for five
//! minutes unless the pod says otherwise.

use serde_json::{Value, json};

/// Where containers find their ServiceAccount's token, CA and namespace.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the projected volume's name.
const VOLUME_PREFIX: &str = "kube-api-access-";
/// The lifetime of the projected token (upstream's warn-only bound token expiry).
const TOKEN_SECONDS: i64 = 3607;

/// The ServiceAccount pods run as when they name none.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The ServiceAccount a pod runs as: `spec.serviceAccountName`, else the deprecated
/// `spec.serviceAccount`, else `default`.
pub fn service_account_name(pod: &Value) -> &str {
    ["/spec/serviceAccountName", "/spec/serviceAccount"]
        .iter()
        .filter_map(|pointer| pod.pointer(pointer).and_then(Value::as_str))
        .find(|name| !name.is_empty())
        .unwrap_or(DEFAULT_SERVICE_ACCOUNT)
}

/// Whether a pod created through a kubelet's static manifest (a mirror pod), which the
/// plugin leaves alone.
fn is_mirror(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations/kubernetes.io~1config.mirror").is_some()
}

/// The projected volume upstream mounts (explicit default mode, as upstream writes it).
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    })
}

/// What a new pod is admitted with, found before it is written.
#[derive(Debug, Clone)]
pub struct Admitted {
    /// The stored ServiceAccount the pod runs as.
    pub account: Value,
    /// The PriorityClass that decides its priority (the named one, or the global default);
    /// `None` means priority 0 and `PreemptLowerPriority`.
    pub priority_class: Option<Value>,
    /// Names the token volume when one is added (`kube-api-access-<suffix>`).
    pub volume_suffix: String,
}

/// How long pods tolerate nodes that are not ready or unreachable (upstream's default).
const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// Admits a new pod; an error is the reason to refuse it (upstream's wording, for a 403).
pub fn admit(pod: &mut Value, admitted: &Admitted) -> Result<(), String> {
    priority(pod, admitted.priority_class.as_ref())?;
    default_tolerations(pod);
    service_account(pod, &admitted.account, &admitted.volume_suffix);
    crate::stamp::sort_fields(pod);
    Ok(())
}

/// The Priority plugin: the pod's priority from its PriorityClass (or 0); a priority or
/// preemption policy given in the pod must agree.
fn priority(pod: &mut Value, class: Option<&Value>) -> Result<(), String> {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    let value = class.and_then(|c| c.get("value")).and_then(Value::as_i64).unwrap_or(0);
    let policy = class
        .and_then(|c| c.get("preemptionPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("PreemptLowerPriority")
        .to_string();
    if let Some(class) = class {
        spec.insert("priorityClassName".into(), json!(crate::object::name(class)));
    }
    if let Some(given) = spec.get("priority").and_then(Value::as_i64).filter(|given| *given != value) {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        ));
    }
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str).filter(|given| *given != policy) {
        return Err(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
        ));
    }
    spec.insert("priority".into(), json!(value));
    spec.insert("preemptionPolicy".into(), json!(policy));
    Ok(())
}

/// The DefaultTolerationSeconds plugin.
fn default_tolerations(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    let Some(list) = tolerations.as_array_mut() else { return };
    let tolerates = |taint: &str| {
        list.iter().any(|t| {
            let key = t.get("key").and_then(Value::as_str).unwrap_or_default();
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or_default();
            (key == taint || key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let missing: Vec<&str> = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
        .into_iter()
        .filter(|t| !tolerates(t))
        .collect();
    for taint in missing {
        list.push(json!({"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}));
    }
    if list.is_empty() {
        spec.remove("tolerations");
    }
}

/// The ServiceAccount plugin: the pod runs as `account` (its stored ServiceAccount); `suffix`
/// names the token volume when one is added.
fn service_account(pod: &mut Value, account: &Value, suffix: &str) {
    if is_mirror(pod) {
        return;
    }
    let name = service_account_name(pod).to_string();
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return };
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
    let has_pull_secrets = spec.get("imagePullSecrets").and_then(Value::as_array).is_some_and(|s| !s.is_empty());
    let account_secrets = account.get("imagePullSecrets").and_then(Value::as_array).filter(|s| !s.is_empty());
    if let (false, Some(secrets)) = (has_pull_secrets, account_secrets) {
        let names: Vec<Value> =
            secrets.iter().map(|s| json!({"name": s.get("name").cloned().unwrap_or_default()})).collect();
        spec.insert("imagePullSecrets".into(), Value::Array(names));
    }
    let automount = spec
        .get("automountServiceAccountToken")
        .or_else(|| account.get("automountServiceAccountToken"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !automount {
        return;
    }
    let volumes: Vec<&str> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    let existing = volumes.iter().find(|v| v.starts_with(VOLUME_PREFIX)).map(|v| v.to_string());
    let volume = existing.clone().unwrap_or_else(|| format!("{VOLUME_PREFIX}{suffix}"));
    let mount = json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut mounted = false;
    for kind in ["initContainers", "containers"] {
        for container in spec.get_mut(kind).and_then(Value::as_array_mut).into_iter().flatten() {
            let mounts = container.as_object_mut().map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])));
            let Some(mounts) = mounts.and_then(Value::as_array_mut) else { continue };
            if !mounts.iter().any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH)) {
                mounts.push(mount.clone());
                mounted = true;
            }
        }
    }
    if mounted && existing.is_none() {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(list) = volumes.as_array_mut() {
            list.push(token_volume(&volume));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_comes_from_the_class_and_must_agree_with_the_pod() {
        let critical = json!({"metadata": {"name": "system-node-critical"}, "value": 2000001000});
        let mut pod = json!({"spec": {"priorityClassName": "system-node-critical"}});
        priority(&mut pod, Some(&critical)).expect("admitted");
        assert_eq!(pod["spec"]["priority"], 2000001000);
        assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
        let mut plain = json!({"spec": {}});
        priority(&mut plain, None).expect("admitted");
        assert_eq!((plain["spec"]["priority"].as_i64(), plain["spec"].get("priorityClassName")), (Some(0), None));
        let mut wrong = json!({"spec": {"priority": 7}});
        assert_eq!(
            priority(&mut wrong, None).expect_err("refused"),
            "the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
        );
    }

    #[test]
    fn pods_tolerate_unready_and_unreachable_nodes_for_five_minutes_unless_they_say_so() {
        let mut plain = json!({"spec": {}});
        default_tolerations(&mut plain);
        let keys: Vec<&str> =
            plain["spec"]["tolerations"].as_array().expect("list").iter().filter_map(|t| t["key"].as_str()).collect();
        assert_eq!(keys, ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]);
        assert_eq!(plain["spec"]["tolerations"][0]["tolerationSeconds"], 300);
        let mut everything = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        default_tolerations(&mut everything);
        assert_eq!(everything["spec"]["tolerations"].as_array().map(Vec::len), Some(1));
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn pods_get_the_default_account_and_its_token_mounted_everywhere() {
        let mut admitted = pod(
            json!({"initContainers": [{"name": "i"}], "containers": [{"name": "c", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}),
        );
        service_account(&mut admitted, &json!({"metadata": {"name": "default"}}), "x7k2p");
        let spec = &admitted["spec"];
        assert_eq!(
            (spec["serviceAccountName"].as_str(), spec["serviceAccount"].as_str()),
            (Some("default"), Some("default"))
        );
        assert_eq!(spec["volumes"], json!([token_volume("kube-api-access-x7k2p")]));
        let mount = json!({"name": "kube-api-access-x7k2p", "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
        assert_eq!(spec["initContainers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(spec["containers"][0]["volumeMounts"][1], mount);
    }

    #[test]
    fn automounting_off_own_mounts_pull_secrets_and_mirror_pods() {
        let account = json!({"automountServiceAccountToken": false, "imagePullSecrets": [{"name": "registry"}]});
        let mut off = pod(json!({"serviceAccountName": "builder", "containers": [{"name": "c"}]}));
        service_account(&mut off, &account, "aaaaa");
        assert!(off["spec"].get("volumes").is_none(), "the account turns automounting off");
        assert_eq!(off["spec"]["imagePullSecrets"], json!([{"name": "registry"}]));
        assert_eq!(off["spec"]["serviceAccount"], "builder");
        let mut on = pod(
            json!({"automountServiceAccountToken": true, "imagePullSecrets": [{"name": "mine"}], "containers": [{"name": "c"}]}),
        );
        service_account(&mut on, &account, "bbbbb");
        assert_eq!(on["spec"]["volumes"][0]["name"], "kube-api-access-bbbbb", "the pod's own setting wins");
        assert_eq!(on["spec"]["imagePullSecrets"], json!([{"name": "mine"}]));
        let own = json!({"name": "own", "mountPath": TOKEN_MOUNT_PATH});
        let mut mounted = pod(json!({"containers": [{"name": "c", "volumeMounts": [own]}]}));
        service_account(&mut mounted, &json!({}), "ccccc");
        assert!(mounted["spec"].get("volumes").is_none(), "a container mounting the path itself keeps its own");
        let mut mirror = json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"containers": [{"name": "c"}]}});
        service_account(&mut mirror, &json!({}), "ddddd");
        assert!(mirror["spec"].get("serviceAccountName").is_none());
    }
}
