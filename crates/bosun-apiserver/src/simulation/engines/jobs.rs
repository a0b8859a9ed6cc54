//! Jobs and CronJobs: pods until completions or the backoff limit; Jobs made at each scheduled time.

use crate::simulation::*;

impl Simulation {
    pub(in crate::simulation) async fn job(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        let stored = cluster.store.get(JOBS, namespace, name)?;
        let job = &stored.value;
        if object::deletion_timestamp(job).is_some() {
            return None;
        }
        let previous = job.get("status");
        let finished_at = previous.and_then(|s| s.get("conditions")).and_then(Value::as_array).and_then(|list| {
            list.iter()
                .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
                .and_then(|c| c["lastTransitionTime"].as_str())
        });
        if let Some(at) = finished_at {
            let ttl = job.pointer("/spec/ttlSecondsAfterFinished").and_then(Value::as_u64)?;
            let age = timestamp_age(at).unwrap_or_default();
            let ttl = Duration::from_secs(ttl);
            if age >= ttl {
                self.delete(cluster, JOBS, namespace, name, Some("Background")).await;
                return None;
            }
            return Some(ttl - age);
        }
        if job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let owned = self.owned(cluster, object::uid(job), PODS);
        let pods: Vec<&Value> = owned.iter().map(|p| &p.value).collect();
        let counts = JobCounts::of(&pods);
        let now_text = stamp::now();
        let start = previous.and_then(|s| s.get("startTime")).cloned().unwrap_or_else(|| json!(now_text));
        let mut status = json!({"startTime": start, "active": counts.active, "ready": counts.ready,
                                "succeeded": counts.succeeded, "failed": counts.failed, "terminating": 0,
                                "uncountedTerminatedPods": {}});
        let mut wake = None;
        match controllers::job_step(job, counts) {
            JobStep::Run(count) => {
                // Back-off after failures: the workload delay, doubling, at most eight times it.
                let key: PodKey = (namespace.to_string(), name.to_string());
                let now = Instant::now();
                let entry = self.failures.entry(key).or_insert((0, now));
                if entry.0 != counts.failed {
                    *entry = (counts.failed, now);
                }
                let doublings = u32::try_from((counts.failed - 1).clamp(0, 3)).unwrap_or(0);
                let back_off =
                    if counts.failed > 0 { self.settings.delay * 2u32.pow(doublings) } else { Duration::ZERO };
                let waited = now.saturating_duration_since(entry.1);
                if count > 0 && waited < back_off {
                    wake = Some(back_off - waited);
                } else {
                    let template = &job["spec"]["template"];
                    for _ in 0..count {
                        let pod = controllers::pod_from_template(
                            job,
                            "Job",
                            "batch/v1",
                            template,
                            PodName::Generate(format!("{name}-")),
                        );
                        self.create_pod(cluster, pod).await;
                    }
                }
            }
            JobStep::Complete => {
                let previous = previous.cloned();
                let message = "Reached expected number of succeeded pods";
                status["completionTime"] =
                    previous.as_ref().and_then(|s| s.get("completionTime")).cloned().unwrap_or_else(|| json!(now_text));
                status["conditions"] = json!([
                    controllers::condition(
                        "SuccessCriteriaMet",
                        "True",
                        "CompletionsReached",
                        message,
                        &now_text,
                        previous.as_ref()
                    ),
                    controllers::condition(
                        "Complete",
                        "True",
                        "CompletionsReached",
                        message,
                        &now_text,
                        previous.as_ref()
                    ),
                ]);
                self.record(cluster, job, None, "Completed", "Job completed", false, "job-controller").await;
                wake = job.pointer("/spec/ttlSecondsAfterFinished").map(|_| Duration::ZERO);
            }
            JobStep::Fail(reason, message) => {
                for pod in pods.iter().filter(|p| controllers::active(p)) {
                    self.delete(cluster, PODS, namespace, object::name(pod), None).await;
                }
                let previous = previous.cloned();
                status["active"] = json!(0);
                status["ready"] = json!(0);
                status["conditions"] = json!([
                    controllers::condition("FailureTarget", "True", reason, &message, &now_text, previous.as_ref()),
                    controllers::condition("Failed", "True", reason, &message, &now_text, previous.as_ref()),
                ]);
                self.record(cluster, job, None, reason, &message, true, "job-controller").await;
                wake = job.pointer("/spec/ttlSecondsAfterFinished").map(|_| Duration::ZERO);
            }
        }
        write_status(cluster, JOBS, job, status).await;
        wake
    }

    pub(in crate::simulation) async fn cron_job(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        let stored = cluster.store.get(CRON_JOBS, namespace, name)?;
        let cron_job = &stored.value;
        if object::deletion_timestamp(cron_job).is_some() {
            return None;
        }
        let schedule_text = cron_job.pointer("/spec/schedule").and_then(Value::as_str).unwrap_or_default();
        let schedule = match cron::Schedule::parse(schedule_text) {
            Ok(schedule) => schedule,
            Err(error) => {
                self.record(
                    cluster,
                    cron_job,
                    None,
                    "UnparseableSchedule",
                    &error.to_string(),
                    true,
                    "cronjob-controller",
                )
                .await;
                return None;
            }
        };
        let zone = cron_job
            .pointer("/spec/timeZone")
            .and_then(Value::as_str)
            .and_then(|name| jiff::tz::TimeZone::get(name).ok())
            .unwrap_or(jiff::tz::TimeZone::UTC);
        let owned = self.owned(cluster, object::uid(cron_job), JOBS);
        let finished = |job: &Value| {
            job.pointer("/status/conditions").and_then(Value::as_array).and_then(|list| {
                list.iter()
                    .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
                    .map(|c| c["type"] == "Complete")
            })
        };
        let mut active: Vec<Value> = owned.iter().map(|j| j.value.clone()).filter(|j| finished(j).is_none()).collect();
        let now = jiff::Timestamp::now();
        let base = cron_job
            .pointer("/status/lastScheduleTime")
            .or_else(|| cron_job.pointer("/metadata/creationTimestamp"))
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .unwrap_or(now);
        // The latest missed start time, as upstream's `mostRecentScheduleTime`.
        let mut due = None;
        let mut at = base;
        while let Some(next) = schedule.next_after(at, &zone) {
            if next > now {
                break;
            }
            due = Some(next);
            at = next;
        }
        let suspended = cron_job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let deadline = cron_job.pointer("/spec/startingDeadlineSeconds").and_then(Value::as_i64);
        let mut last_schedule = cron_job.pointer("/status/lastScheduleTime").cloned();
        if let Some(due) = due.filter(|_| !suspended)
            && deadline.is_none_or(|seconds| now.duration_since(due).as_secs() <= seconds)
        {
            let policy = cron_job.pointer("/spec/concurrencyPolicy").and_then(Value::as_str).unwrap_or("Allow");
            let forbidden = policy == "Forbid" && !active.is_empty();
            if !forbidden {
                if policy == "Replace" {
                    for job in active.drain(..) {
                        self.delete(cluster, JOBS, namespace, object::name(&job), Some("Background")).await;
                    }
                }
                let job_name = format!("{name}-{}", due.as_second() / 60);
                let template = cron_job.pointer("/spec/jobTemplate").cloned().unwrap_or_else(|| json!({}));
                let mut metadata = template.get("metadata").cloned().unwrap_or_else(|| json!({}));
                metadata["name"] = json!(job_name);
                metadata["namespace"] = json!(namespace);
                metadata["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] =
                    json!(due.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
                metadata["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "CronJob", "name": name,
                    "uid": object::uid(cron_job), "controller": true, "blockOwnerDeletion": true}]);
                let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
                                 "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))});
                if cluster.store.get(JOBS, namespace, &job_name).is_none()
                    && let Some(scope) = scope(cluster, JOBS, namespace)
                    && let Some(written) = report(cluster.create(&scope, job, &options()).await, "Job")
                {
                    let message = format!("Created job {job_name}");
                    self.record(cluster, cron_job, None, "SuccessfulCreate", &message, false, "cronjob-controller")
                        .await;
                    active.push(written.object);
                }
            }
            last_schedule = Some(json!(due.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()));
        }
        // History limits: the oldest finished Jobs beyond them go.
        for (successful, limit) in [(true, "successfulJobsHistoryLimit"), (false, "failedJobsHistoryLimit")] {
            let keep = cron_job.pointer(&format!("/spec/{limit}")).and_then(Value::as_u64).unwrap_or(if successful {
                3
            } else {
                1
            });
            let mut done: Vec<&Value> =
                owned.iter().map(|j| &j.value).filter(|j| finished(j) == Some(successful)).collect();
            done.sort_by_key(|j| {
                j.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or_default().to_string()
            });
            let excess = done.len().saturating_sub(usize::try_from(keep).unwrap_or(usize::MAX));
            for job in done.into_iter().take(excess) {
                self.delete(cluster, JOBS, namespace, object::name(job), Some("Background")).await;
            }
        }
        let last_successful = owned
            .iter()
            .filter(|j| finished(&j.value) == Some(true))
            .filter_map(|j| j.value.pointer("/status/completionTime").and_then(Value::as_str))
            .max()
            .map(|t| json!(t));
        let mut status = json!({});
        let refs: Vec<Value> = active
            .iter()
            .map(|j| {
                json!({"apiVersion": "batch/v1", "kind": "Job", "name": object::name(j), "namespace": namespace,
                            "uid": object::uid(j), "resourceVersion": object::resource_version(j)})
            })
            .collect();
        if !refs.is_empty() {
            status["active"] = json!(refs);
        }
        if let Some(last) = last_schedule {
            status["lastScheduleTime"] = last;
        }
        if let Some(last) = last_successful {
            status["lastSuccessfulTime"] = last;
        }
        write_status(cluster, CRON_JOBS, cron_job, status).await;
        let next = schedule.next_after(now, &zone)?;
        Some(Duration::try_from(next.duration_since(now)).unwrap_or_default() + Duration::from_millis(10))
    }
}
