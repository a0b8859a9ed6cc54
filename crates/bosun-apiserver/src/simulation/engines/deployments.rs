//! ReplicaSets and Deployments: pods per ReplicaSet; one ReplicaSet per template, rolled out as upstream's deployment controller does, with revisions and scaling Events.

use crate::simulation::*;

impl Simulation {
    pub(in crate::simulation) async fn replica_set(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        let stored = cluster.store.get(REPLICA_SETS, namespace, name)?;
        let set = &stored.value;
        if object::deletion_timestamp(set).is_some() {
            return None;
        }
        let owned = self.owned(cluster, object::uid(set), PODS);
        let pods: Vec<&Value> = owned.iter().map(|p| &p.value).collect();
        let plan = controllers::replica_set_plan(set, &pods);
        let template = set.pointer("/spec/template").cloned().unwrap_or_default();
        for _ in 0..plan.create {
            let pod = controllers::pod_from_template(
                set,
                "ReplicaSet",
                "apps/v1",
                &template,
                PodName::Generate(format!("{name}-")),
            );
            self.create_pod(cluster, pod).await;
        }
        for victim in &plan.delete {
            self.delete(cluster, PODS, namespace, victim, None).await;
        }
        // Finished pods are replaced; upstream's pod GC removes them later, here at once.
        for pod in pods.iter().filter(|p| controllers::finished(p)) {
            self.delete(cluster, PODS, namespace, object::name(pod), None).await;
        }
        write_status(cluster, REPLICA_SETS, set, controllers::replica_set_status(set, &pods)).await;
        None
    }

    pub(in crate::simulation) async fn deployment(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        let stored = cluster.store.get(DEPLOYMENTS, namespace, name)?;
        let deployment = &stored.value;
        if object::deletion_timestamp(deployment).is_some() {
            return None;
        }
        let desired = controllers::replicas(deployment);
        let hash = template_hash(&deployment["spec"]["template"]);
        let mut sets: Vec<Value> =
            self.owned(cluster, object::uid(deployment), REPLICA_SETS).iter().map(|s| s.value.clone()).collect();
        let revision = |s: &Value| {
            s.pointer("/metadata/annotations")
                .and_then(|a| a.get(REVISION))
                .and_then(Value::as_str)
                .and_then(|r| r.parse::<i64>().ok())
                .unwrap_or(0)
        };
        sets.sort_by_key(revision);
        let is_new = |s: &Value| {
            object::labels(s).and_then(|l| l.get("pod-template-hash")).and_then(Value::as_str) == Some(hash.as_str())
        };
        let scope = scope(cluster, REPLICA_SETS, namespace)?;
        let paused = deployment.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
        let recreate = deployment.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate");
        let (surge, unavailable) = controllers::surge_and_unavailable(deployment);
        let old: Vec<Set> = sets.iter().filter(|s| !is_new(s)).map(Set::of).collect();
        let new = match sets.iter().find(|s| is_new(s)) {
            Some(new) => new.clone(),
            None if paused => return None,
            None => {
                let next = sets.iter().map(revision).max().unwrap_or(0) + 1;
                let start = Set { name: String::new(), replicas: 0, available: 0 };
                let replicas = if recreate {
                    0
                } else if old.is_empty() {
                    desired
                } else {
                    controllers::rolling_update(desired, surge, unavailable, &start, &old).0
                };
                let created = self.new_replica_set(cluster, &scope, deployment, &hash, next, replicas).await?;
                sets.push(created.clone());
                created
            }
        };
        // A template that went back to an older ReplicaSet's (`kubectl rollout undo`) makes that
        // set the newest revision again, its old number kept in the history, as upstream does.
        let newest = sets.iter().map(revision).max().unwrap_or(0);
        let reused = revision(&new) < newest;
        // The Deployment's annotations reach its new ReplicaSet (and so its pods' stage), as
        // upstream copies them on every sync.
        let annotation =
            |o: &Value| o.pointer("/metadata/annotations").and_then(|a| a.get(stages::ANNOTATION)).cloned();
        let new = if annotation(deployment) == annotation(&new) && !reused {
            new
        } else {
            let mut body = scope.view(new.clone());
            if reused {
                let history = controllers::revision_history(&new, revision(&new));
                body["metadata"]["annotations"][REVISION] = json!((newest + 1).to_string());
                body["metadata"]["annotations"][REVISION_HISTORY] = json!(history);
            }
            match annotation(deployment) {
                Some(text) => body["metadata"]["annotations"][stages::ANNOTATION] = text,
                None => {
                    if let Some(map) = body.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
                        map.remove(stages::ANNOTATION);
                    }
                }
            }
            let written = report(
                cluster.update(&scope, object::name(&new), Endpoint::Main, body, &options()).await,
                "ReplicaSet annotations",
            );
            written.map_or(new, |w| w.object)
        };
        if let Some(slot) = sets.iter_mut().find(|s| object::name(s) == object::name(&new)) {
            *slot = new.clone();
        }
        if !paused {
            let (new_size, old_sizes) = if recreate {
                let old_pods: usize = old
                    .iter()
                    .map(|s| {
                        sets.iter()
                            .find(|x| object::name(x) == s.name)
                            .map_or(0, |x| self.owned(cluster, object::uid(x), PODS).len())
                    })
                    .sum();
                let (new_size, old_sizes) = controllers::recreate(desired, &old, old_pods);
                (new_size.unwrap_or(controllers::replicas(&new)), old_sizes)
            } else {
                controllers::rolling_update(desired, surge, unavailable, &Set::of(&new), &old)
            };
            let mut resized: Vec<(String, i64)> = old_sizes.into_iter().map(|s| (s.name, s.replicas)).collect();
            resized.push((object::name(&new).to_string(), new_size));
            for (set_name, size) in resized {
                if let Some(set) = sets.iter().find(|s| object::name(s) == set_name)
                    && controllers::replicas(set) != size
                {
                    let before = controllers::replicas(set);
                    let mut body = scope.view(set.clone());
                    body["spec"]["replicas"] = json!(size);
                    let scaled = report(
                        cluster.update(&scope, &set_name, Endpoint::Main, body, &options()).await,
                        "ReplicaSet scale",
                    );
                    if scaled.is_some() {
                        let direction = if size > before { "up" } else { "down" };
                        let message = format!("Scaled {direction} replica set {set_name} from {before} to {size}");
                        self.record(
                            cluster,
                            deployment,
                            None,
                            "ScalingReplicaSet",
                            &message,
                            false,
                            "deployment-controller",
                        )
                        .await;
                    }
                }
            }
            // Old ReplicaSets beyond the history limit go, oldest first.
            let limit = deployment.pointer("/spec/revisionHistoryLimit").and_then(Value::as_i64).unwrap_or(10);
            let idle: Vec<&Value> = sets
                .iter()
                .filter(|s| !is_new(s) && controllers::replicas(s) == 0 && controllers::Set::of(s).available == 0)
                .collect();
            let excess = idle.len().saturating_sub(usize::try_from(limit.max(0)).unwrap_or(0));
            for set in idle.into_iter().take(excess) {
                self.delete(cluster, REPLICA_SETS, namespace, object::name(set), Some("Background")).await;
            }
        }
        // Progress: any change of the counts; failure injection shortens the deadline.
        let key: PodKey = (namespace.to_string(), name.to_string());
        let refs: Vec<&Value> = sets.iter().collect();
        let counts =
            json!([object::generation(deployment), refs.iter().map(|s| s.get("status").cloned()).collect::<Vec<_>>()]);
        let now = Instant::now();
        let since = match self.progress.get(&key) {
            Some((seen, at)) if *seen == counts => *at,
            _ => {
                self.progress.insert(key.clone(), (counts, now));
                now
            }
        };
        let mut deadline = Duration::from_secs(
            deployment.pointer("/spec/progressDeadlineSeconds").and_then(Value::as_u64).unwrap_or(600),
        );
        // What its pods are made to do: the template's annotation, the Deployment's, the rules.
        let mut template_pod =
            json!({"metadata": deployment["spec"]["template"].get("metadata").cloned().unwrap_or_else(|| json!({}))});
        template_pod["metadata"]["namespace"] = json!(namespace);
        let stage = stages::stage_of(&template_pod, Some(deployment), &self.settings.rules).unwrap_or_default();
        if failing(&stage) {
            let start = stage.start.unwrap_or(self.settings.delay);
            deadline = deadline.min(start + start.max(Duration::from_secs(1)));
        }
        // The Deployment carries its newest revision (what `kubectl rollout undo` patches and
        // `rollout history` reads).
        let marked = self.mark_revision(cluster, deployment, revision(&new)).await;
        let deployment = marked.as_ref().unwrap_or(deployment);
        let exceeded = now.saturating_duration_since(since) >= deadline;
        let view = controllers::DeploymentView { deployment, new: &new, all: &refs, deadline_exceeded: exceeded };
        let status = controllers::deployment_status(&view, &stamp::now());
        let complete = status["conditions"][1]["reason"] == "NewReplicaSetAvailable";
        write_status(cluster, DEPLOYMENTS, deployment, status).await;
        (!complete && !exceeded && !paused).then(|| deadline.saturating_sub(now.saturating_duration_since(since)))
    }

    /// Sets the Deployment's `deployment.kubernetes.io/revision` to `revision`; the Deployment
    /// as written, or `None` when it already had it (or the write failed).
    pub(in crate::simulation) async fn mark_revision(
        &self,
        cluster: &Cluster,
        deployment: &Value,
        revision: i64,
    ) -> Option<Value> {
        let text = revision.to_string();
        let current = deployment.pointer("/metadata/annotations").and_then(|a| a.get(REVISION));
        if revision == 0 || current.and_then(Value::as_str) == Some(text.as_str()) {
            return None;
        }
        let scope = scope(cluster, DEPLOYMENTS, object::namespace(deployment))?;
        let mut body = scope.view(deployment.clone());
        body["metadata"]["annotations"][REVISION] = json!(text);
        // Through /status, as upstream's controller writes it: the generation stays.
        let written = report(
            cluster.update(&scope, object::name(deployment), Endpoint::Status, body, &options()).await,
            "Deployment revision",
        )?;
        Some(written.object)
    }

    pub(in crate::simulation) async fn new_replica_set(
        &self,
        cluster: &Cluster,
        scope: &Scope,
        deployment: &Value,
        hash: &str,
        revision: i64,
        replicas: i64,
    ) -> Option<Value> {
        let mut template = deployment["spec"]["template"].clone();
        template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
        let mut selector = deployment["spec"]["selector"].clone();
        selector["matchLabels"]["pod-template-hash"] = json!(hash);
        let mut annotations = deployment.pointer("/metadata/annotations").cloned().unwrap_or_else(|| json!({}));
        if let Some(map) = annotations.as_object_mut() {
            map.remove("kubectl.kubernetes.io/last-applied-configuration");
            map.insert(REVISION.into(), json!(revision.to_string()));
            map.insert(
                "deployment.kubernetes.io/desired-replicas".into(),
                json!(controllers::replicas(deployment).to_string()),
            );
        }
        let body = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": format!("{}-{hash}", object::name(deployment)),
                "namespace": object::namespace(deployment),
                "labels": template["metadata"]["labels"].clone(),
                "annotations": annotations,
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": object::name(deployment),
                                     "uid": object::uid(deployment), "controller": true, "blockOwnerDeletion": true}],
            },
            "spec": {"replicas": replicas, "selector": selector, "template": template,
                     "minReadySeconds": deployment.pointer("/spec/minReadySeconds").cloned().unwrap_or(json!(0))},
        });
        let written = report(cluster.create(scope, body, &options()).await, "ReplicaSet")?;
        let message = format!("Scaled up replica set {} from 0 to {replicas}", object::name(&written.object));
        self.record(cluster, deployment, None, "ScalingReplicaSet", &message, false, "deployment-controller").await;
        Some(written.object)
    }
}
