//! StatefulSets: ordinal pods in order, with their PersistentVolumeClaims.

use crate::simulation::*;

impl Simulation {
    pub(in crate::simulation) async fn stateful_set(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        let stored = cluster.store.get(STATEFUL_SETS, namespace, name)?;
        let set = &stored.value;
        if object::deletion_timestamp(set).is_some() {
            return None;
        }
        let revision = format!("{name}-{}", template_hash(&set["spec"]["template"]));
        let owned = self.owned(cluster, object::uid(set), PODS);
        let pods: Vec<&Value> = owned.iter().map(|p| &p.value).collect();
        let (create, delete) = controllers::stateful_set_plan(set, &pods, &revision);
        for ordinal in create {
            let pod_name = format!("{name}-{ordinal}");
            let mut pod = controllers::pod_from_template(
                set,
                "StatefulSet",
                "apps/v1",
                &set["spec"]["template"],
                PodName::Exact(pod_name.clone()),
            );
            pod["metadata"]["labels"]["controller-revision-hash"] = json!(revision);
            pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = json!(pod_name);
            pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] = json!(ordinal.to_string());
            pod["spec"]["hostname"] = json!(pod_name);
            if let Some(service) = set.pointer("/spec/serviceName").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                pod["spec"]["subdomain"] = json!(service);
            }
            for template in set.pointer("/spec/volumeClaimTemplates").and_then(Value::as_array).into_iter().flatten() {
                let claim_name = format!("{}-{pod_name}", object::name(template));
                self.ensure_claim(cluster, set, template, &claim_name).await;
                let volumes = pod["spec"]["volumes"].as_array().cloned().unwrap_or_default();
                let mut volumes: Vec<Value> =
                    volumes.into_iter().filter(|v| v["name"] != object::name(template)).collect();
                volumes
                    .push(json!({"name": object::name(template), "persistentVolumeClaim": {"claimName": claim_name}}));
                pod["spec"]["volumes"] = json!(volumes);
            }
            self.create_pod(cluster, pod).await;
        }
        for victim in delete {
            self.delete(cluster, PODS, namespace, &victim, None).await;
        }
        write_status(cluster, STATEFUL_SETS, set, controllers::stateful_set_status(set, &pods, &revision)).await;
        None
    }

    pub(in crate::simulation) async fn ensure_claim(
        &self,
        cluster: &Cluster,
        set: &Value,
        template: &Value,
        claim_name: &str,
    ) {
        let namespace = object::namespace(set);
        if cluster.store.get(CLAIMS, namespace, claim_name).is_some() {
            return;
        }
        let Some(scope) = scope(cluster, CLAIMS, namespace) else { return };
        let labels = set.pointer("/spec/selector/matchLabels").cloned().unwrap_or_else(|| json!({}));
        let claim = json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim_name, "namespace": namespace, "labels": labels},
            "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
        });
        report(cluster.create(&scope, claim, &options()).await, "PersistentVolumeClaim");
    }

    /// Claims are bound at once, as a dynamic provisioner would bind them.
    pub(in crate::simulation) async fn claim(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        let stored = cluster.store.get(CLAIMS, namespace, name)?;
        let claim = &stored.value;
        if claim.pointer("/status/phase").and_then(Value::as_str) == Some("Bound")
            || object::deletion_timestamp(claim).is_some()
        {
            return None;
        }
        let status = json!({
            "phase": "Bound",
            "accessModes": claim.pointer("/spec/accessModes").cloned().unwrap_or_else(|| json!(["ReadWriteOnce"])),
            "capacity": claim.pointer("/spec/resources/requests").cloned().unwrap_or_else(|| json!({})),
        });
        write_status(cluster, CLAIMS, claim, status).await;
        None
    }
}
