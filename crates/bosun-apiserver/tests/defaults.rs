//! Defaulting checked against upstream: each manifest under `tests/upstream/defaults` is created
//! through kube-rs, and the object the server then serves must equal the one a real 1.33 API
//! server stores for it (see the README there for how the expected objects were written), and
//! still equal it after a later write that changes only a label.

mod common;

use std::path::{Path, PathBuf};

use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::GroupVersionKind,
    discovery,
};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstream/defaults")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The served object with what the server generates left out or replaced by the fixtures'
/// placeholders.
fn comparable(mut object: Value) -> Value {
    let meta = object["metadata"].as_object_mut().expect("metadata");
    let uid = meta.remove("uid").and_then(|u| u.as_str().map(str::to_string)).expect("a uid");
    for field in ["resourceVersion", "creationTimestamp", "managedFields"] {
        meta.remove(field);
    }
    // bosun's record of who wrote what pods run (for --run-pods), which upstream has no field for.
    let annotations = meta.get_mut("annotations").and_then(Value::as_object_mut);
    if annotations.is_some_and(|a| a.remove("bosun.dev/author").is_some() && a.is_empty()) {
        meta.remove("annotations");
    }
    let mut text = object.to_string().replace(&uid, "<uid>");
    let volume = regex_free_find(&text, "kube-api-access-", 5);
    if let Some(volume) = volume {
        text = text.replace(&volume, "kube-api-access-<random>");
    }
    let mut object: Value = serde_json::from_str(&text).expect("json");
    if object["kind"] == "Service" {
        object["spec"]["clusterIP"] = Value::from("<allocated>");
        object["spec"]["clusterIPs"] = serde_json::json!(["<allocated>"]);
    }
    object
}

/// `prefix` followed by `length` characters, where it first occurs in `text`.
fn regex_free_find(text: &str, prefix: &str, length: usize) -> Option<String> {
    let start = text.find(prefix)?;
    text.get(start..start + prefix.len() + length).map(str::to_string)
}

#[tokio::test]
async fn stored_objects_equal_what_upstream_stores() {
    let server = common::server().await;
    let client = server.client();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixtures")
        .map(|entry| entry.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml") && !p.to_string_lossy().ends_with(".stored.yaml"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 13, "the corpus: {cases:?}");
    let mut differences = Vec::new();
    for manifest_path in cases {
        let manifest = read(&manifest_path);
        let expected = read(&manifest_path.with_extension("stored.yaml"));
        let (group, version) = match manifest["apiVersion"].as_str().expect("apiVersion").split_once('/') {
            Some((group, version)) => (group.to_string(), version.to_string()),
            None => (String::new(), manifest["apiVersion"].as_str().expect("apiVersion").to_string()),
        };
        let gvk = GroupVersionKind::gvk(&group, &version, manifest["kind"].as_str().expect("kind"));
        let (resource, _) = discovery::pinned_kind(&client, &gvk).await.expect("discovered");
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
        let object: DynamicObject = serde_json::from_value(manifest).expect("object");
        let created = api.create(&PostParams::default(), &object).await.expect("created");
        let name = created.metadata.name.clone().expect("name");
        let served = serde_json::to_value(api.get(&name).await.expect("get")).expect("json");
        let label = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
        let mut touched = serde_json::to_value(api.patch(&name, &PatchParams::default(), &label).await.expect("patch"))
            .expect("json");
        let labels = touched["metadata"]["labels"].as_object_mut().expect("labels");
        labels.remove("touched");
        if labels.is_empty() {
            touched["metadata"].as_object_mut().expect("metadata").remove("labels");
        }
        for (when, served) in [("created", served), ("after a label changed", touched)] {
            let served = comparable(served);
            if served != expected {
                differences.push(format!(
                    "{} ({when}):\nserved   {}\nexpected {}",
                    manifest_path.display(),
                    serde_json::to_string_pretty(&served).expect("json"),
                    serde_json::to_string_pretty(&expected).expect("json")
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}
