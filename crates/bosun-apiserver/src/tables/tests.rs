use serde_json::json;

use super::*;
use crate::registry::Catalog;

fn now() -> Timestamp {
    "2025-01-01T12:00:00Z".parse().expect("time")
}

fn row(group: &str, plural: &str, object: Value) -> (Vec<String>, Vec<Value>) {
    let catalog = Catalog::new([]);
    let info = catalog.lookup(group, "v1", plural).expect("served");
    let names = columns(info, &info.versions[0]).iter().map(|c| c["name"].as_str().unwrap_or("").to_string()).collect();
    (names, RowCells::new(info, &info.versions[0]).of(&object, now()))
}

#[test]
fn built_in_kinds_have_upstreams_columns_and_cells() {
    let created = "2025-01-01T11:55:00Z";
    let deployment = json!({"metadata": {"name": "web", "creationTimestamp": created},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "app", "image": "nginx"}, {"name": "proxy", "image": "envoy"}]}}},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
    let (names, cells) = row("apps", "deployments", deployment);
    assert_eq!(names, ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]);
    assert_eq!(
        cells,
        [
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("5m"),
            json!("app,proxy"),
            json!("nginx,envoy"),
            json!("app=web")
        ]
    );

    let service = json!({"metadata": {"name": "s", "creationTimestamp": created},
        "spec": {"type": "NodePort", "clusterIP": "10.0.0.1", "ports": [{"port": 80, "nodePort": 30080}, {"port": 53, "protocol": "UDP"}], "selector": {"b": "2", "a": "1"}}});
    let (names, cells) = row("", "services", service);
    assert_eq!(names, ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]);
    assert_eq!(
        cells,
        [
            json!("s"),
            json!("NodePort"),
            json!("10.0.0.1"),
            json!("<none>"),
            json!("80:30080/TCP,53/UDP"),
            json!("5m"),
            json!("a=1,b=2")
        ]
    );

    let pod = json!({"metadata": {"name": "p", "creationTimestamp": created},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": 1}, {"ready": false, "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
    let (names, cells) = row("", "pods", pod);
    assert_eq!(&names[..5], ["Name", "Ready", "Status", "Restarts", "Age"]);
    assert_eq!(&cells[..5], [json!("p"), json!("1/2"), json!("CrashLoopBackOff"), json!("3"), json!("5m")]);

    let (names, cells) = row("", "configmaps", json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}));
    assert_eq!(
        (names, cells),
        (vec!["Name".to_string(), "Data".into(), "Age".into()], vec![json!("c"), json!(2), json!("<unknown>")])
    );
    let (names, _) = row("", "namespaces", json!({"metadata": {"name": "n"}, "status": {"phase": "Active"}}));
    assert_eq!(names, ["Name", "Status", "Age"]);
    let (names, _) = row("", "limitranges", json!({"metadata": {"name": "l"}}));
    assert_eq!(names, ["Name", "Age"], "kinds without a printer here show name and age");

    let endpoints = json!({"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]}]});
    let (names, cells) = row("", "endpoints", endpoints);
    assert_eq!(names, ["Name", "Endpoints", "Age"]);
    assert_eq!(cells[1], "10.0.0.1:80,10.0.0.1:443,10.0.0.2:80 + 1 more...");
    let node = json!({"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": ""}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.33.0"},
                   "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}]}});
    let (names, cells) = row("", "nodes", node);
    assert_eq!(names, ["Name", "Status", "Roles", "Age", "Version", "Internal-IP"]);
    assert_eq!(
        &cells[..],
        [
            json!("n"),
            json!("Ready,SchedulingDisabled"),
            json!("control-plane"),
            json!("<unknown>"),
            json!("v1.33.0"),
            json!("172.18.0.2")
        ]
    );
}

/// A CRD's version as the registry serves it, from its definition.
fn custom_version(definition: Value) -> VersionInfo {
    VersionInfo {
        name: "v1".into(),
        status: false,
        schema: None,
        deprecation_warning: None,
        selectable_fields: vec![],
        normalizer: None,
        definition: Some(std::sync::Arc::new(definition)),
    }
}

fn custom_info() -> ResourceInfo {
    let catalog = Catalog::new([]);
    let mut info = (**catalog.lookup("apps", "v1", "deployments").expect("any")).clone();
    info.custom = true;
    info
}

#[test]
fn custom_resources_use_their_printer_columns_typed_as_upstream() {
    let definition = json!({"name": "v1", "additionalPrinterColumns": [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1},
        {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
        {"name": "Started", "type": "date", "jsonPath": ".status.started"},
        {"name": "Missing", "type": "string", "jsonPath": ".status.nothing"},
    ]});
    let version = custom_version(definition);
    let info = custom_info();
    let names: Vec<Value> = columns(&info, &version).iter().map(|c| c["name"].clone()).collect();
    assert_eq!(
        names,
        [json!("Name"), json!("Replicas"), json!("Phase"), json!("Ready"), json!("Started"), json!("Missing")]
    );
    assert_eq!(columns(&info, &version)[2]["priority"], 1);
    let object = json!({"metadata": {"name": "x"}, "spec": {"replicas": 2.0}, "status": {"phase": "Up", "ready": true, "started": "2025-01-01T10:00:00Z"}});
    assert_eq!(
        RowCells::new(&info, &version).of(&object, now()),
        [json!("x"), json!(2), json!("Up"), json!(true), json!("120m"), Value::Null]
    );
    let bare = VersionInfo { definition: None, ..version };
    assert_eq!(columns(&info, &bare).len(), 2, "Name and the default Age");
}

#[test]
fn printer_column_paths_give_the_first_value_they_find() {
    let object = json!({"metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "web"}},
        "spec": {"replicas": 3, "list": [{"type": "a"}, {"type": "b"}]}});
    let cases = [
        (".spec.replicas", json!("3")),
        (".spec.list[1].type", json!("b")),
        (".spec.list[-1].type", json!("b")),
        (".spec.list[*].type", json!("a")),
        (".metadata.labels['app.kubernetes.io/name']", json!("web")),
        (r".metadata.labels.app\.kubernetes\.io/name", json!("web")),
        (r#".spec.list[?(@.type=="b")].type"#, json!("b")),
        (".spec.list[?(@.type=='a')]", json!(r#"{"type":"a"}"#)),
        (r#".spec.list[?(@.type!="a")].type"#, json!("b")),
        (r#".spec.list[?(@.type=="c")].type"#, Value::Null),
        (".spec.list[?(@.type==1)]", Value::Null),
        (".spec.missing", Value::Null),
        (".spec.list[5]", Value::Null),
        // Not a path upstream reads (its validation refuses it): an empty cell.
        ("{.spec.replicas}", Value::Null),
    ];
    let info = custom_info();
    for (path, expected) in cases {
        let version =
            custom_version(json!({"additionalPrinterColumns": [{"name": "C", "type": "string", "jsonPath": path}]}));
        assert_eq!(RowCells::new(&info, &version).of(&object, now()), [json!("x"), expected], "{path}");
    }
}

#[test]
fn durations_read_like_upstreams() {
    let cases = [
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (120, "2m"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60 * 5, "3h5m"),
        (10 * 3600, "10h"),
        (50 * 3600, "2d2h"),
        (10 * 86400, "10d"),
        (800 * 86400, "2y70d"),
    ];
    for (seconds, expected) in cases {
        let then = now() - jiff::SignedDuration::from_secs(seconds);
        assert_eq!(human_duration(now(), then), expected, "{seconds}s");
    }
    assert_eq!(human_duration(now(), now() + jiff::SignedDuration::from_secs(5)), "<invalid>");
}

#[test]
fn events_print_like_upstream_in_both_apis() {
    let core = json!({"metadata": {"name": "web.1"}, "type": "Warning", "reason": "BackOff",
        "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
        "message": " Back-off restarting \n", "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2025-01-01T11:00:00Z", "lastTimestamp": "2025-01-01T11:58:00Z", "count": 7});
    let (names, cells) = row("", "events", core);
    assert_eq!(
        names,
        ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"]
    );
    assert_eq!(
        cells,
        [
            json!("2m"),
            json!("Warning"),
            json!("BackOff"),
            json!("pod/web-0"),
            json!("spec.containers{app}"),
            json!("kubelet, node-1"),
            json!("Back-off restarting"),
            json!("60m"),
            json!(7),
            json!("web.1")
        ]
    );
    let recorded = json!({"metadata": {"name": "cm.2"}, "type": "Normal", "reason": "Reconciled",
        "regarding": {"kind": "ConfigMap", "name": "settings"}, "note": "up to date",
        "reportingController": "bosun", "reportingInstance": "bosun-0",
        "eventTime": "2025-01-01T11:50:00.000000Z",
        "series": {"count": 3, "lastObservedTime": "2025-01-01T11:59:30.000000Z"}});
    let (_, cells) = row("events.k8s.io", "events", recorded);
    assert_eq!(
        cells,
        [
            json!("30s"),
            json!("Normal"),
            json!("Reconciled"),
            json!("configmap/settings"),
            json!(""),
            json!("bosun, bosun-0"),
            json!("up to date"),
            json!("10m"),
            json!(3),
            json!("cm.2")
        ]
    );
}
