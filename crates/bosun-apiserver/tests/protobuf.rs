//! kubectl's generator commands POST built-in objects as protobuf: each must create exactly the
//! object the same command prints with `--dry-run=client -o json`.

mod common;

use common::{Kubectl, texts};
use serde_json::{Value, json};

/// Whether `sent` is part of `stored`: every field the client sent is there with the same
/// value (the server adds identity, versions, timestamps, ownership, status and upstream's
/// defaults). Go's `null`s, which JSON encodes for zero times,
/// and empty structs mean "absent".
fn part_of(sent: &Value, stored: &Value) -> bool {
    let absent = |value: &Value| value.is_null() || value.as_object().is_some_and(|m| m.is_empty());
    match (sent, stored) {
        (Value::Null, _) => true,
        (Value::Object(sent), Value::Object(stored)) => sent.iter().all(|(key, value)| match stored.get(key) {
            Some(stored) => part_of(value, stored),
            None => absent(value),
        }),
        (Value::Array(sent), Value::Array(stored)) => {
            sent.len() == stored.len() && sent.iter().zip(stored).all(|(a, b)| part_of(a, b))
        }
        (sent, stored) => sent == stored,
    }
}

/// How kubectl 1.32 sends a command's object.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sent {
    Protobuf,
    Json,
}

async fn creates_what_it_prints(kubectl: &Kubectl, command: &[&str], resource: &str, name: &str, sent: Sent) {
    // Flags go before a `--` that starts the container's command.
    let with_flags = |flags: &[&'static str]| {
        let split = command.iter().position(|a| *a == "--").unwrap_or(command.len());
        [&command[..split], flags, &command[split..]].concat()
    };
    let dry_run = with_flags(&["--dry-run=client", "-o", "json"]);
    let printed: Value = serde_json::from_str(&kubectl.ok(&dry_run).await).expect("dry run prints JSON");
    let verbose = with_flags(&["-v=8"]);
    let created = kubectl.run(&verbose).await;
    let (stdout, stderr) = texts(&created);
    assert!(created.status.success(), "{command:?}: {stderr}");
    let content_type = match sent {
        Sent::Protobuf => "Content-Type: application/vnd.kubernetes.protobuf",
        Sent::Json => "Content-Type: application/json",
    };
    let request = stderr.split("\"Request\" verb=\"POST\"").nth(1).unwrap_or_default();
    let request_headers = request.split("\"Response\"").next().unwrap_or_default();
    assert!(request_headers.contains(content_type), "{command:?} should send {sent:?}: {stderr}");
    let kind = printed["kind"].as_str().expect("kind").to_ascii_lowercase();
    let group = printed["apiVersion"].as_str().and_then(|v| v.rsplit_once('/')).map(|(g, _)| g);
    let shown = match group {
        Some(group) => format!("{kind}.{group}/{name} created"),
        None => format!("{kind}/{name} created"),
    };
    assert_eq!(stdout.trim(), shown, "{command:?}");
    let stored: Value =
        serde_json::from_str(&kubectl.ok(&["get", resource, name, "-o", "json"]).await).expect("get prints JSON");
    // A create never takes `status` from the client.
    let mut sent = printed;
    sent.as_object_mut().map(|o| o.remove("status"));
    assert!(part_of(&sent, &stored), "{command:?}: printed {sent:#}\nstored {stored:#}");
}

#[tokio::test]
async fn generator_commands_create_what_they_print() {
    let server = common::server().await;
    let kubectl = Kubectl::new(&server);
    use Sent::{Json, Protobuf};
    let cases: [(&[&str], &str, &str, Sent); 12] = [
        (&["create", "namespace", "team-a"], "namespace", "team-a", Protobuf),
        (
            &["create", "configmap", "settings", "--from-literal=greeting=hello", "--from-literal=empty="],
            "cm",
            "settings",
            Protobuf,
        ),
        (
            &["create", "secret", "generic", "token", "--from-literal=key=s3cr3t", "--type=Opaque"],
            "secret",
            "token",
            Protobuf,
        ),
        (
            &["create", "deployment", "web", "--image=nginx:1.27", "--replicas=0", "--port=8080"],
            "deploy",
            "web",
            Protobuf,
        ),
        (&["create", "job", "once", "--image=busybox", "--", "echo", "hi"], "job", "once", Protobuf),
        (&["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"], "cronjob", "nightly", Protobuf),
        (&["create", "serviceaccount", "robot"], "sa", "robot", Protobuf),
        (&["create", "service", "clusterip", "web", "--tcp=80:8080"], "svc", "web", Protobuf),
        (&["create", "role", "reader", "--verb=get,list", "--resource=configmaps"], "role", "reader", Protobuf),
        (
            &["create", "rolebinding", "read", "--role=reader", "--serviceaccount=default:robot"],
            "rolebinding",
            "read",
            Protobuf,
        ),
        (
            &["run", "shell", "--image=busybox", "--labels=app=shell", "--env=MODE=test", "--", "sleep", "3600"],
            "pod",
            "shell",
            // `run` goes through the dynamic client.
            Json,
        ),
        (&["create", "priorityclass", "high", "--value=1000", "--description=important"], "pc", "high", Protobuf),
    ];
    for (command, resource, name, sent) in cases {
        creates_what_it_prints(&kubectl, command, resource, name, sent).await;
    }
}

#[tokio::test]
async fn custom_resources_refuse_protobuf_and_bad_bodies_are_400() {
    let server = common::server().await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "names": {"plural": "gadgets", "kind": "Gadget"}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let created = common::request(
        &server,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some("application/json"),
        crd.to_string(),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    let answer = common::request(&server, "POST", gadgets, Some("application/vnd.kubernetes.protobuf"), "k8s\0").await;
    assert_eq!(answer.status, 415, "{}", answer.body);
    assert_eq!(
        answer.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );
    let answer = common::request(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/vnd.kubernetes.protobuf"),
        "{}",
    )
    .await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(answer.json()["message"].as_str().is_some_and(|m| m.contains("does not appear to be a protobuf message")));
    let answer =
        common::request(&server, "POST", "/api/v1/namespaces/default/configmaps", Some("text/csv"), "a,b").await;
    assert_eq!(answer.status, 415);
    assert_eq!(
        answer.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}
