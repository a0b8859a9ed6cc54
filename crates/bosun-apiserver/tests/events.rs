//! Events in both APIs, one store as upstream: kube-rs's `Recorder` (events.k8s.io/v1, a create
//! and then merge patches for a series) shows in `kubectl get events` and `kubectl describe`, and
//! core/v1 Events as older clients write them show through events.k8s.io/v1.

mod common;

use common::Kubectl;

use k8s_openapi::api::{
    core::v1::{ConfigMap, Event as CoreEvent},
    events::v1::Event,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{ListParams, PostParams},
    runtime::events::{Event as Publish, EventType, Recorder, Reporter},
};
use serde_json::json;

#[tokio::test]
async fn the_kube_rs_recorder_publishes_and_counts_a_series() {
    let server = common::server().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let subject: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "settings"}})).expect("configmap");
    let subject = configmaps.create(&PostParams::default(), &subject).await.expect("create");
    let reporter = Reporter { controller: "bosun-test".into(), instance: Some("test-0".into()) };
    let recorder = Recorder::new(server.client(), reporter);
    let event = Publish {
        type_: EventType::Normal,
        reason: "Reconciled".into(),
        note: Some("settings are up to date".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    let reference = subject.object_ref(&());
    recorder.publish(&event, &reference).await.expect("first publish creates");
    recorder.publish(&event, &reference).await.expect("second publish patches the series");

    let events: Api<Event> = Api::default_namespaced(server.client());
    let published = events.list(&ListParams::default()).await.expect("list").items;
    assert_eq!(published.len(), 1, "one event with a series, not two events");
    let published = &published[0];
    assert_eq!(published.reason.as_deref(), Some("Reconciled"));
    assert_eq!(published.reporting_controller.as_deref(), Some("bosun-test"));
    assert_eq!(published.regarding.as_ref().and_then(|r| r.name.as_deref()), Some("settings"));
    assert_eq!(published.series.as_ref().map(|s| s.count), Some(2));

    // The same event through the core API, kubectl get and kubectl describe.
    let core: Api<CoreEvent> = Api::default_namespaced(server.client());
    let listed = core.list(&ListParams::default().fields("involvedObject.name=settings")).await.expect("core list");
    assert_eq!(listed.items.len(), 1);
    let same = &listed.items[0];
    assert_eq!(same.name_any(), published.name_any());
    assert_eq!(same.message.as_deref(), Some("settings are up to date"));
    assert_eq!(same.reporting_component.as_deref(), Some("bosun-test"));
    assert_eq!(same.metadata.resource_version, published.metadata.resource_version);
    let kubectl = Kubectl::new(&server);
    let table = kubectl.ok(&["get", "events"]).await;
    assert!(table.contains("Reconciled") && table.contains("configmap/settings"), "{table}");
    let described = kubectl.ok(&["describe", "configmap", "settings"]).await;
    assert!(described.contains("Reconciled") && described.contains("settings are up to date"), "{described}");
}

#[tokio::test]
async fn core_events_are_accepted_and_listed() {
    let server = common::server().await;
    let core: Api<CoreEvent> = Api::default_namespaced(server.client());
    let event: CoreEvent = serde_json::from_value(json!({
        "metadata": {"generateName": "settings."},
        "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "settings"},
        "reason": "Changed",
        "message": "settings changed",
        "type": "Normal",
        "source": {"component": "bosun-test"},
        "count": 1,
    }))
    .expect("event");
    let created = core.create(&PostParams::default(), &event).await.expect("create");
    assert!(created.name_any().starts_with("settings."));
    let listed = core.list(&ListParams::default().fields("involvedObject.name=settings")).await.expect("list");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].message.as_deref(), Some("settings changed"));

    // The same event through events.k8s.io/v1, converted; deleting it there deletes it.
    let events: Api<Event> = Api::default_namespaced(server.client());
    let converted = events.get(&created.name_any()).await.expect("seen through events.k8s.io");
    assert_eq!(converted.note.as_deref(), Some("settings changed"));
    assert_eq!(converted.regarding.as_ref().and_then(|r| r.name.as_deref()), Some("settings"));
    assert_eq!(converted.deprecated_source.as_ref().and_then(|s| s.component.as_deref()), Some("bosun-test"));
    assert_eq!(converted.deprecated_count, Some(1));
    events.delete(&created.name_any(), &Default::default()).await.expect("delete");
    assert!(core.get_opt(&created.name_any()).await.expect("get").is_none());
}
