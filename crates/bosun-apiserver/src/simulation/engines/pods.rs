//! Pods: scheduled to a node, then moved through their lifecycle by the kubelet (or run for real with `--run-pods`).

use crate::{lifecycle::author::Author, simulation::*};

impl Simulation {
    pub(in crate::simulation) async fn pod(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        let stored = cluster.store.get(PODS, namespace, name)?;
        let pod = &stored.value;
        if object::deletion_timestamp(pod).is_some() {
            return None;
        }
        let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default().to_string();
        if node.is_empty() {
            self.schedule(cluster, pod).await;
            return None;
        }
        if !self.managed(&node) {
            return None;
        }
        self.kubelet(cluster, pod, &node).await
    }

    pub(in crate::simulation) fn candidates<'a>(
        &self,
        nodes: &'a [Arc<crate::store::StoredObject>],
        with_pods: bool,
    ) -> Vec<scheduler::Candidate<'a>> {
        let mut by_node: HashMap<&str, scheduler::Candidate<'a>> = nodes
            .iter()
            .map(|n| {
                let candidate = scheduler::Candidate {
                    node: &n.value,
                    used: scheduler::Resources::new(),
                    scored: scheduler::Resources::new(),
                    ports: Vec::new(),
                    pods: Vec::new(),
                };
                (object::name(&n.value), candidate)
            })
            .collect();
        for placement in self.placed.values() {
            if let Some(candidate) = by_node.get_mut(placement.node.as_str()) {
                for (resource, amount) in &placement.requests {
                    *candidate.used.entry(resource.clone()).or_default() += amount;
                }
                for (resource, amount) in &placement.scored {
                    *candidate.scored.entry(resource.clone()).or_default() += amount;
                }
                candidate.ports.extend(placement.ports.iter().cloned());
                if with_pods {
                    candidate.pods.push(placement.summary.clone());
                }
            }
        }
        let mut out: Vec<scheduler::Candidate> = by_node.into_values().collect();
        out.sort_by(|a, b| object::name(a.node).cmp(object::name(b.node)));
        out
    }

    pub(in crate::simulation) async fn schedule(&mut self, cluster: &Cluster, pod: &Value) {
        let key: PodKey = (object::namespace(pod).to_string(), object::name(pod).to_string());
        let nodes = cluster.store.all(NODES);
        let affinity = pod.pointer("/spec/affinity/podAffinity").is_some()
            || pod.pointer("/spec/affinity/podAntiAffinity").is_some()
            || self.placed.values().any(|p| !p.summary.anti_affinity.is_empty());
        let candidates = self.candidates(&nodes, affinity);
        let decision = scheduler::schedule(pod, &candidates);
        let Some(scope) = scope(cluster, PODS, &key.0) else { return };
        let now = stamp::now();
        match decision {
            scheduler::Decision::Bind(node) => {
                let mut body = scope.view(pod.clone());
                body["spec"]["nodeName"] = json!(node);
                let Some(bound) =
                    report(cluster.update(&scope, &key.1, Endpoint::Main, body, &options()).await, "binding")
                else {
                    return;
                };
                self.unscheduled.remove(&key);
                // Counted at once: the pods scheduled next in this round see it (the event of the
                // binding is noted only after the round).
                self.placed.insert(key.clone(), Placement::of(pod, &node));
                let mut status = bound.object.get("status").cloned().unwrap_or_else(|| json!({}));
                status["phase"] = json!("Pending");
                status["conditions"] = json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}]);
                write_status(cluster, PODS, &bound.object, status).await;
                let message = format!("Successfully assigned {}/{} to {node}", key.0, key.1);
                self.record(cluster, &bound.object, None, "Scheduled", &message, false, "default-scheduler").await;
            }
            scheduler::Decision::Unschedulable(message) => {
                self.unscheduled.insert(key.clone());
                let previous = pod
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|l| l.iter().find(|c| c["type"] == "PodScheduled"));
                if previous.is_some_and(|c| c["status"] == "False" && c["message"] == message.as_str()) {
                    return;
                }
                let condition = json!({"type": "PodScheduled", "status": "False", "lastProbeTime": null, "lastTransitionTime": now,
                                       "reason": "Unschedulable", "message": message});
                let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
                status["phase"] = json!("Pending");
                status["conditions"] = json!([condition]);
                write_status(cluster, PODS, pod, status).await;
                self.record(cluster, pod, None, "FailedScheduling", &message, true, "default-scheduler").await;
            }
        }
    }

    /// The stage of a pod: its annotation, its controller's, the rules, the default.
    pub(in crate::simulation) fn stage(&self, cluster: &Cluster, pod: &Value) -> Stage {
        let controller = controllers::controller_of(pod).and_then(|owner| {
            let resource = match owner["kind"].as_str()? {
                "ReplicaSet" => REPLICA_SETS,
                "StatefulSet" => STATEFUL_SETS,
                "DaemonSet" => DAEMON_SETS,
                "Job" => JOBS,
                _ => return None,
            };
            cluster.store.get(resource, object::namespace(pod), owner["name"].as_str()?)
        });
        match stages::stage_of(pod, controller.as_ref().map(|c| &c.value), &self.settings.rules) {
            Ok(stage) => stage,
            Err(error) => {
                tracing::warn!(pod = %object::describe(pod), %error, "ignoring a stage that cannot be read");
                Stage::default()
            }
        }
    }

    pub(in crate::simulation) async fn kubelet(
        &mut self,
        cluster: &Cluster,
        pod: &Value,
        node: &str,
    ) -> Option<Duration> {
        let key: PodKey = (object::namespace(pod).to_string(), object::name(pod).to_string());
        let stage = self.stage(cluster, pod);
        let pod_ip = match pod.pointer("/status/podIP").and_then(Value::as_str) {
            Some(ip) if !ip.is_empty() => ip.to_string(),
            _ if pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true) => {
                self.addresses.node_ip(node).to_string()
            }
            _ => match self.addresses.take(node) {
                Some(ip) => ip.to_string(),
                None => {
                    // As a kubelet whose CNI has no address left: the sandbox is not made.
                    let message =
                        format!("Failed to create pod sandbox: no IP addresses available in range set for node {node}");
                    self.record(cluster, pod, None, "FailedCreatePodSandBox", &message, true, "kubelet").await;
                    return Some(Duration::from_secs(10));
                }
            },
        };
        let now = Instant::now();
        let ages = self.clocks.entry(key.clone()).or_default().ages(pod, now);
        let job_pod = controllers::controller_of(pod).is_some_and(|o| o["kind"] == "Job");
        let (local, refused) = match self.settings.runtime.clone() {
            Some(runtime) => self.local_processes(cluster, &runtime, pod).await,
            None => (HashMap::new(), None),
        };
        // A pod whose author may not run commands here says so in a condition, which the
        // kubelet's steps keep as they keep other components' conditions.
        let stored = pod;
        let marked = refused.as_deref().and_then(|why| process::policy::with_refusal(pod, why, &stamp::now()));
        let pod = marked.as_ref().unwrap_or(pod);
        let moment = kubelet::Moment {
            now: stamp::now(),
            start: stage.start.unwrap_or(self.settings.delay),
            run: self.settings.delay,
            ages,
            host_ip: self.addresses.node_ip(node).to_string(),
            pod_ip,
            job_pod,
            local,
        };
        let step = kubelet::step(pod, &stage, &moment);
        let status = step.status.or_else(|| marked.as_ref().and_then(|marked| marked.get("status").cloned()));
        if let Some(status) = status {
            let mut written = pod.clone();
            written["status"] = status.clone();
            self.clocks.entry(key.clone()).or_default().ages(&written, now);
            if let Some(runtime) = &self.settings.runtime {
                start_processes(cluster, runtime, &written);
            }
            write_status(cluster, PODS, stored, status).await;
        }
        for note in step.notes {
            self.record(cluster, pod, note.field_path.as_deref(), note.reason, &note.message, note.warning, "kubelet")
                .await;
        }
        step.wake
    }

    /// The containers of a pod that run as local processes, with their current instances
    /// started (after a server restart the status may say running before any process does)
    /// and their exits, and why none run if its author may not run commands here. The first
    /// time, how each container runs is decided and containers that cannot run locally are
    /// said to be simulated in an Event (a pod that is refused, in one Warning `NotRun`).
    pub(in crate::simulation) async fn local_processes(
        &self,
        cluster: &Cluster,
        runtime: &Arc<runtime::Runtime>,
        pod: &Value,
    ) -> (HashMap<String, kubelet::Local>, Option<String>) {
        let key: PodKey = (object::namespace(pod).to_string(), object::name(pod).to_string());
        let grace = pod.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_u64).unwrap_or(30);
        let mut missing_volumes = Vec::new();
        let (decided, new) = runtime.plans(object::uid(pod), &key, Duration::from_secs(grace), || {
            let refused = runtime.policy().pod_may_run(&key.0, Author::of_object(pod).as_ref()).err();
            let sources = StoreSources { cluster, namespace: &key.0 };
            let (volumes, missing) = match refused {
                Some(_) => Default::default(),
                None => runtime.write_volumes(object::uid(pod), process::volumes::contents(pod, &sources)),
            };
            let plans = container_specs(pod)
                .map(|(spec, _)| {
                    let plan = match &refused {
                        Some(why) => process::Plan::Simulated(why.clone()),
                        None => plan_container(runtime, pod, &with_volumes(spec, &volumes), &sources),
                    };
                    (spec["name"].as_str().unwrap_or_default().to_string(), plan)
                })
                .collect();
            missing_volumes = missing;
            runtime::Decided { plans, refused, volumes }
        });
        let runtime::Decided { plans, refused, .. } = decided;
        for why in missing_volumes {
            self.record(cluster, pod, None, "VolumeNotAvailable", &why, true, "kubelet").await;
        }
        if new && let Some(why) = &refused {
            self.record(cluster, pod, None, "NotRun", why, true, "kubelet").await;
        } else if new {
            for (spec, field_path) in container_specs(pod) {
                if let Some(process::Plan::Simulated(why)) = spec["name"].as_str().and_then(|name| plans.get(name)) {
                    self.record(cluster, pod, Some(&field_path), "Simulated", why, false, "kubelet").await;
                }
            }
        }
        start_processes(cluster, runtime, pod);
        let uid = object::uid(pod);
        let local = plans
            .into_iter()
            .filter_map(|(name, plan)| {
                let process::Plan::Local { program, .. } = plan else { return None };
                let restarts = container_status(pod, &name).and_then(|s| s["restartCount"].as_i64()).unwrap_or(0);
                let current = runtime.instance(uid, &name, false).filter(|instance| instance.restart == restarts);
                let exit = current.as_ref().and_then(|instance| instance.exit_code());
                let ready = current.and_then(|instance| instance.ready());
                Some((name, kubelet::Local { program: program.display().to_string(), exit, ready }))
            })
            .collect();
        (local, refused)
    }
}
