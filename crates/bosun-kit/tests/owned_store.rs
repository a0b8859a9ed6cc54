//! Children owned with `owns_labelled` are read from the controller's watch: a reconcile woken
//! by a child's change sees the child as changed, without reading it from the server.

use std::time::Duration;

use bosun_apiserver::ApiServer;
use bosun_kit::{Controller, Failure, Reconciler, Run};
use k8s_openapi::{
    api::core::v1::ConfigMap, apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, CustomResource, CustomResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Lamp", namespaced, status = "LampStatus")]
struct LampSpec {
    on: bool,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
struct LampStatus {
    seen: Option<String>,
}

/// Makes one ConfigMap per Lamp, then reports the ConfigMap's `state` as the watch has it.
struct Switch;

impl Reconciler for Switch {
    type Resource = Lamp;

    async fn reconcile(&self, run: &mut Run<Lamp>) -> Result<(), Failure> {
        let name = format!("{}-bulb", run.name());
        let bulb = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"bulb": "yes"}},
                          "data": {"state": "made"}});
        if run.owned_child::<ConfigMap>(&name).is_none() {
            run.children.add_value(bulb)?;
            return run.apply_children().await;
        }
        let seen = run.owned_child::<ConfigMap>(&name).and_then(|c| c.data?.get("state").cloned());
        run.set_status("seen", seen);
        Ok(())
    }
}

async fn seen(lamps: &Api<Lamp>, expected: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let lamp = lamps.get("desk").await.expect("lamp");
        if lamp.status.as_ref().and_then(|s| s.seen.as_deref()) == Some(expected) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "never saw {expected:?}: {:?}", lamp.status);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_reconcile_woken_by_a_child_reads_it_from_the_watch_as_changed() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.create(&PostParams::default(), &Lamp::crd()).await.expect("CRD");
    let controller = Controller::new("switch", Switch, server.client()).owns_labelled::<ConfigMap>("bulb");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(controller.run(async move {
        let _ = stopped.await;
    }));
    let lamps: Api<Lamp> = Api::default_namespaced(server.client());
    lamps.create(&PostParams::default(), &Lamp::new("desk", LampSpec { on: true })).await.expect("lamp");
    seen(&lamps, "made").await;

    // Changed by someone else: the owner is woken and reads the change from its watch.
    let configmaps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let patch = Patch::Merge(json!({"data": {"state": "flipped"}}));
    configmaps.patch("desk-bulb", &PatchParams::default(), &patch).await.expect("flip");
    seen(&lamps, "flipped").await;
    let _ = stop.send(());
    task.await.expect("joined").expect("the controller ran");
}
