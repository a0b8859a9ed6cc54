//! Pods as upstream's ServiceAccount admission plugin admits them on creation: the ServiceAccount
//! named (or `default`) in both `serviceAccountName` and the deprecated `serviceAccount`, its
//! image pull secrets when the pod names none, and — unless automounting is turned off — a
//! projected `kube-api-access-xxxxx` volume (token, `kube-root-ca.crt`, namespace) mounted
//! read-only at `/var/run/secrets/kubernetes.io/serviceaccount` in every container.

use serde_json::{Value, json};

/// Where containers find their ServiceAccount's token, CA and namespace.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the projected volume's name.
const VOLUME_PREFIX: &str = "kube-api-access-";
/// The lifetime of the projected token (upstream's warn-only bound token expiry).
const TOKEN_SECONDS: i64 = 3607;

/// The ServiceAccount a pod runs as: `spec.serviceAccountName`, else the deprecated
/// `spec.serviceAccount`, else `default`.
pub fn service_account_name(pod: &Value) -> &str {
    ["/spec/serviceAccountName", "/spec/serviceAccount"]
        .iter()
        .filter_map(|pointer| pod.pointer(pointer).and_then(Value::as_str))
        .find(|name| !name.is_empty())
        .unwrap_or(crate::controllers::namespaces::DEFAULT_SERVICE_ACCOUNT)
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

/// Admits a new pod that runs as `account` (its stored ServiceAccount); `suffix` names the
/// token volume when one is added.
pub fn admit(pod: &mut Value, account: &Value, suffix: &str) {
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

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn pods_get_the_default_account_and_its_token_mounted_everywhere() {
        let mut admitted = pod(
            json!({"initContainers": [{"name": "i"}], "containers": [{"name": "c", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}),
        );
        admit(&mut admitted, &json!({"metadata": {"name": "default"}}), "x7k2p");
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
        admit(&mut off, &account, "aaaaa");
        assert!(off["spec"].get("volumes").is_none(), "the account turns automounting off");
        assert_eq!(off["spec"]["imagePullSecrets"], json!([{"name": "registry"}]));
        assert_eq!(off["spec"]["serviceAccount"], "builder");
        let mut on = pod(
            json!({"automountServiceAccountToken": true, "imagePullSecrets": [{"name": "mine"}], "containers": [{"name": "c"}]}),
        );
        admit(&mut on, &account, "bbbbb");
        assert_eq!(on["spec"]["volumes"][0]["name"], "kube-api-access-bbbbb", "the pod's own setting wins");
        assert_eq!(on["spec"]["imagePullSecrets"], json!([{"name": "mine"}]));
        let own = json!({"name": "own", "mountPath": TOKEN_MOUNT_PATH});
        let mut mounted = pod(json!({"containers": [{"name": "c", "volumeMounts": [own]}]}));
        admit(&mut mounted, &json!({}), "ccccc");
        assert!(mounted["spec"].get("volumes").is_none(), "a container mounting the path itself keeps its own");
        let mut mirror = json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"containers": [{"name": "c"}]}});
        admit(&mut mirror, &json!({}), "ddddd");
        assert!(mirror["spec"].get("serviceAccountName").is_none());
    }
}
