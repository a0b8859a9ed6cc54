//! `bosun_kit`'s free-style engine against the embedded API server: children registered as
//! JSON are applied, the ones no longer registered are pruned, a child labelled for another
//! owner is left alone.

use std::time::Duration;

use bosun_apiserver::ApiServer;
use bosun_kit::{Controller, Failure, Reconciler, Run};
use k8s_openapi::{
    api::core::v1::ConfigMap, apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, CustomResource, CustomResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Shelf", namespaced)]
struct ShelfSpec {
    books: u32,
}

/// One ConfigMap per book.
struct Librarian;

impl Reconciler for Librarian {
    type Resource = Shelf;

    async fn reconcile(&self, run: &mut Run<Shelf>) -> Result<(), Failure> {
        for book in 0..run.object().spec.books {
            let name = format!("{}-book-{book}", run.name());
            run.children.add_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}))?;
        }
        run.apply_children().await
    }
}

async fn books(api: &Api<ConfigMap>) -> Vec<String> {
    let listed = api.list(&ListParams::default().labels("app.kubernetes.io/managed-by=librarian")).await.expect("list");
    let mut names: Vec<String> = listed.items.into_iter().filter_map(|cm| cm.metadata.name).collect();
    names.sort();
    names
}

#[tokio::test]
async fn free_style_children_are_applied_and_pruned() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.create(&PostParams::default(), &Shelf::crd()).await.expect("CRD");
    let controller = Controller::new("librarian", Librarian, server.client()).owns::<ConfigMap>();
    let metrics = controller.metrics();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(controller.run(async move {
        let _ = stopped.await;
    }));
    let shelves: Api<Shelf> = Api::default_namespaced(server.client());
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    shelves.create(&PostParams::default(), &Shelf::new("s", ShelfSpec { books: 3 })).await.expect("shelf");
    let wait_for = |expected: Vec<&'static str>| {
        let configmaps = configmaps.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let names = books(&configmaps).await;
                if names == expected {
                    return;
                }
                assert!(tokio::time::Instant::now() < deadline, "expected {expected:?}, have {names:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    wait_for(vec!["s-book-0", "s-book-1", "s-book-2"]).await;
    assert!(metrics.is_ready(), "ready once the shelves were listed");

    // A ConfigMap that says the same manager but another owner is not this shelf's to prune.
    let mut stranger = ConfigMap::default();
    stranger.metadata.name = Some("stranger".into());
    stranger.metadata.labels = Some(
        [
            ("app.kubernetes.io/managed-by".to_string(), "librarian".to_string()),
            ("kit.bosun.dev/owner".to_string(), "someone-else".to_string()),
        ]
        .into(),
    );
    configmaps.create(&PostParams::default(), &stranger).await.expect("stranger");

    shelves
        .patch("s", &PatchParams::default(), &Patch::Merge(json!({"spec": {"books": 1}})))
        .await
        .expect("fewer books");
    wait_for(vec!["s-book-0", "stranger"]).await;
    let _ = stop.send(());
    task.await.expect("joined").expect("the controller ran");
}

/// A shutdown asked for before the controller has listed its objects ends it at once:
/// kube-runtime alone would hold it for a listing its shutdown stopped, forever (a `bosun
/// controller` stopped as it started would never exit).
#[tokio::test]
async fn a_shutdown_before_the_first_listing_ends_the_controller() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.create(&PostParams::default(), &Shelf::crd()).await.expect("CRD");
    let shelves: Api<Shelf> = Api::default_namespaced(server.client());
    shelves.create(&PostParams::default(), &Shelf::new("s", ShelfSpec { books: 1 })).await.expect("shelf");
    let controller = Controller::new("librarian", Librarian, server.client()).owns::<ConfigMap>();
    let stopped = tokio::time::timeout(Duration::from_secs(60), controller.run(std::future::ready(()))).await;
    stopped.expect("the controller stops").expect("the controller ran");
}
