//! DaemonSets: one pod on each node that admits it.

use crate::simulation::*;

impl Simulation {
    pub(in crate::simulation) async fn daemon_set(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        let stored = cluster.store.get(DAEMON_SETS, namespace, name)?;
        let set = &stored.value;
        if object::deletion_timestamp(set).is_some() {
            return None;
        }
        let revision = template_hash(&set["spec"]["template"]);
        let owned = self.owned(cluster, object::uid(set), PODS);
        let pods: Vec<&Value> = owned.iter().map(|p| &p.value).collect();
        let nodes = cluster.store.all(NODES);
        let mut template = set["spec"]["template"].clone();
        let mut tolerations =
            template.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
        for (key, effect) in [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ] {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
        template["spec"]["tolerations"] = json!(tolerations);
        let target = |pod: &Value| -> String {
            pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0")
                .and_then(Value::as_str)
                .or_else(|| pod.pointer("/spec/nodeName").and_then(Value::as_str))
                .unwrap_or_default()
                .to_string()
        };
        let mut wanted = Vec::new();
        for node in &nodes {
            let node_name = object::name(&node.value).to_string();
            let mut probe = controllers::pod_from_template(
                set,
                "DaemonSet",
                "apps/v1",
                &template,
                PodName::Generate(String::new()),
            );
            probe["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]
            });
            let candidate = scheduler::Candidate {
                node: &node.value,
                used: scheduler::Resources::new(),
                scored: scheduler::Resources::new(),
                ports: Vec::new(),
                pods: Vec::new(),
            };
            let requests = scheduler::pod_requests(&probe);
            if scheduler::filter(&probe, &requests, &candidate, std::slice::from_ref(&candidate)).is_none() {
                probe["metadata"]["generateName"] = json!(format!("{name}-"));
                probe["metadata"]["labels"]["controller-revision-hash"] = json!(revision);
                probe["metadata"]["labels"]["pod-template-generation"] = json!(object::generation(set).to_string());
                wanted.push((node_name, probe));
            }
        }
        let active: Vec<&&Value> = pods.iter().filter(|p| controllers::active(p)).collect();
        for (node_name, pod) in &wanted {
            if !active.iter().any(|p| target(p) == *node_name) {
                self.create_pod(cluster, pod.clone()).await;
            }
        }
        for pod in &pods {
            let misplaced = controllers::active(pod) && !wanted.iter().any(|(n, _)| *n == target(pod));
            if misplaced || controllers::finished(pod) {
                self.delete(cluster, PODS, namespace, object::name(pod), None).await;
            }
        }
        // Rolling update: one out-of-date pod at a time, once the others are ready.
        let all_ready = active.iter().all(|p| controllers::ready(p));
        if all_ready && let Some(stale) = active.iter().find(|p| controllers::revision_of(p) != revision) {
            self.delete(cluster, PODS, namespace, object::name(stale), None).await;
        }
        write_status(cluster, DAEMON_SETS, set, controllers::daemon_set_status(set, &pods, wanted.len(), &revision))
            .await;
        None
    }
}
