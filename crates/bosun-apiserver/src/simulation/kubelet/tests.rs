use super::*;

const START: Duration = Duration::from_secs(2);

fn pod(spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "web", "image": "nginx:1.27"}]);
    }
    json!({"metadata": {"name": "web-1", "namespace": "default", "uid": "u1"}, "spec": spec,
           "status": {"phase": "Pending", "qosClass": "BestEffort",
                      "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2025-01-01T00:00:00Z"}]}})
}

fn moment(pod_age: Duration, container_age: Duration) -> Moment {
    let ages = HashMap::from([(String::new(), pod_age), ("web".to_string(), container_age)]);
    Moment {
        now: "2025-01-01T00:00:10Z".into(),
        start: START,
        run: Duration::from_secs(3),
        ages,
        host_ip: "172.18.0.2".into(),
        pod_ip: "10.244.0.5".into(),
        job_pod: false,
        local: HashMap::new(),
    }
}

/// Takes a step and stores its status in the pod.
fn advance(pod: &mut Value, stage: &Stage, moment: &Moment) -> Step {
    let step = step(pod, stage, moment);
    if let Some(status) = &step.status {
        pod["status"] = status.clone();
    }
    step
}

fn condition<'a>(pod: &'a Value, kind: &str) -> &'a Value {
    pod["status"]["conditions"].as_array().and_then(|l| l.iter().find(|c| c["type"] == kind)).expect(kind)
}

fn web(pod: &Value) -> &Value {
    &pod["status"]["containerStatuses"][0]
}

#[test]
fn a_pod_is_created_then_runs_and_is_ready() {
    let mut pod = pod(json!({}));
    let first = advance(&mut pod, &Stage::default(), &moment(Duration::ZERO, Duration::ZERO));
    assert_eq!(first.wake, Some(START));
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(pod["status"]["podIP"], "10.244.0.5");
    assert_eq!(pod["status"]["hostIPs"], json!([{"ip": "172.18.0.2"}]));
    assert_eq!(web(&pod)["state"]["waiting"]["reason"], "ContainerCreating");
    assert_eq!(web(&pod)["image"], "docker.io/library/nginx:1.27");
    assert_eq!(condition(&pod, "Ready")["reason"], "ContainersNotReady");
    assert_eq!(condition(&pod, "Ready")["message"], "containers with unready status: [web]");
    assert_eq!(condition(&pod, "PodScheduled")["lastTransitionTime"], "2025-01-01T00:00:00Z");

    let early = advance(&mut pod, &Stage::default(), &moment(Duration::from_secs(1), Duration::from_secs(1)));
    assert_eq!((early.status.is_some(), early.wake), (false, Some(Duration::from_secs(1))), "not yet");

    let started = advance(&mut pod, &Stage::default(), &moment(START, START));
    let reasons: Vec<&str> = started.notes.iter().map(|n| n.reason).collect();
    assert_eq!(reasons, ["Pulled", "Created", "Started"]);
    assert_eq!(started.notes[1].message, "Created container: web");
    assert_eq!(started.notes[0].field_path.as_deref(), Some("spec.containers{web}"));
    assert_eq!(pod["status"]["phase"], "Running");
    assert_eq!((web(&pod)["ready"].clone(), web(&pod)["started"].clone()), (json!(true), json!(true)));
    assert!(web(&pod)["containerID"].as_str().is_some_and(|id| id.starts_with("containerd://")));
    assert!(web(&pod)["imageID"].as_str().is_some_and(|id| id.starts_with("docker.io/library/nginx@sha256:")));
    for kind in ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"] {
        assert_eq!(condition(&pod, kind)["status"], "True", "{kind}");
    }
    assert_eq!(started.wake, None, "a running, ready container needs nothing more");
    let again = step(&pod, &Stage::default(), &moment(Duration::from_secs(60), Duration::from_secs(60)));
    assert_eq!(again, Step::default(), "nothing changes once running");
}

#[test]
fn a_jobs_pod_completes_and_a_failing_one_keeps_its_exit_code() {
    for (stage, code, phase, reason) in [
        (Stage::default(), 0, "Succeeded", "Completed"),
        (Stage::parse("fail exit-code=3 after=1s").expect("stage"), 3, "Failed", "Error"),
    ] {
        let mut pod = pod(json!({"restartPolicy": "Never"}));
        let job = |pod_age, age| Moment { job_pod: true, ..moment(pod_age, age) };
        advance(&mut pod, &stage, &job(Duration::ZERO, Duration::ZERO));
        let running = advance(&mut pod, &stage, &job(START, START));
        assert_eq!(pod["status"]["phase"], "Running");
        assert!(running.wake.is_some());
        advance(&mut pod, &stage, &job(START * 3, Duration::from_secs(4)));
        assert_eq!(pod["status"]["phase"], phase);
        assert_eq!(web(&pod)["state"]["terminated"]["exitCode"], code);
        assert_eq!(web(&pod)["state"]["terminated"]["reason"], reason);
        assert_eq!(condition(&pod, "Ready")["reason"], "PodCompleted");
        assert_eq!(condition(&pod, "PodReadyToStartContainers")["status"], "False");
        assert_eq!(step(&pod, &stage, &job(START * 9, START * 9)), Step::default(), "a finished pod stays");
    }
}

#[test]
fn a_failing_container_that_restarts_crash_loops_with_a_growing_back_off() {
    let mut pod = pod(json!({"restartPolicy": "Always"}));
    let stage = Stage::parse("fail").expect("stage");
    advance(&mut pod, &stage, &moment(Duration::ZERO, Duration::ZERO));
    let crashed = advance(&mut pod, &stage, &moment(START, START));
    assert_eq!(pod["status"]["phase"], "Running");
    assert_eq!(web(&pod)["restartCount"], 1, "the first restart is immediate");
    assert_eq!(web(&pod)["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(
        web(&pod)["state"]["waiting"]["message"],
        "back-off 10s restarting failed container=web pod=web-1_default(u1)"
    );
    assert_eq!(web(&pod)["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(crashed.wake, Some(Duration::from_secs(10)));
    assert!(crashed.notes.iter().any(|n| n.reason == "BackOff" && n.warning));

    let waiting = advance(&mut pod, &stage, &moment(START * 3, Duration::from_secs(4)));
    assert_eq!(waiting.wake, Some(Duration::from_secs(6)), "still backing off");
    advance(&mut pod, &stage, &moment(START * 9, Duration::from_secs(10)));
    assert_eq!(web(&pod)["restartCount"], 2);
    assert_eq!(web(&pod)["state"]["waiting"]["message"].as_str().map(|m| m.starts_with("back-off 20s")), Some(true));
    assert_eq!(condition(&pod, "Ready")["status"], "False");
}

#[test]
fn a_crash_loop_runs_ready_for_a_while_between_crashes() {
    let mut pod = pod(json!({}));
    let stage = Stage::parse("crash-loop after=5s").expect("stage");
    advance(&mut pod, &stage, &moment(Duration::ZERO, Duration::ZERO));
    let running = advance(&mut pod, &stage, &moment(START, START));
    assert_eq!(web(&pod)["ready"], true);
    assert_eq!(running.wake, Some(Duration::from_secs(5)));
    advance(&mut pod, &stage, &moment(START * 4, Duration::from_secs(5)));
    assert_eq!(web(&pod)["restartCount"], 1);
    assert!(web(&pod)["state"]["running"].is_object(), "restarted at once, running again");
}

#[test]
fn containers_that_never_get_ready_keep_the_pod_unready() {
    let mut pod = pod(json!({}));
    let stage = Stage::parse("not-ready").expect("stage");
    advance(&mut pod, &stage, &moment(Duration::ZERO, Duration::ZERO));
    let step = advance(&mut pod, &stage, &moment(START, START));
    assert_eq!((pod["status"]["phase"].clone(), web(&pod)["ready"].clone()), (json!("Running"), json!(false)));
    assert_eq!(condition(&pod, "ContainersReady")["reason"], "ContainersNotReady");
    assert_eq!(step.wake, None);
}

#[test]
fn readiness_probes_delay_readiness_and_gates_hold_it() {
    let mut pod =
        pod(json!({"containers": [{"name": "web", "image": "nginx", "readinessProbe": {"initialDelaySeconds": 5}}],
                             "readinessGates": [{"conditionType": "example.com/lb"}]}));
    advance(&mut pod, &Stage::default(), &moment(Duration::ZERO, Duration::ZERO));
    let started = advance(&mut pod, &Stage::default(), &moment(START, START));
    assert_eq!((web(&pod)["ready"].clone(), started.wake), (json!(false), Some(Duration::from_secs(5))));
    advance(&mut pod, &Stage::default(), &moment(START * 4, Duration::from_secs(5)));
    assert_eq!(web(&pod)["ready"], true);
    assert_eq!(condition(&pod, "ContainersReady")["status"], "True");
    assert_eq!(condition(&pod, "Ready")["reason"], "ReadinessGatesNotReady");
    assert_eq!(
        condition(&pod, "Ready")["message"],
        "corresponding condition of pod readiness gate \"example.com/lb\" does not exist."
    );
    let mut conditions = pod["status"]["conditions"].as_array().cloned().expect("conditions");
    conditions.push(json!({"type": "example.com/lb", "status": "True"}));
    pod["status"]["conditions"] = json!(conditions);
    advance(&mut pod, &Stage::default(), &moment(START * 5, Duration::from_secs(8)));
    assert_eq!(condition(&pod, "Ready")["status"], "True");
    assert_eq!(condition(&pod, "example.com/lb")["status"], "True", "conditions of others stay");
}

#[test]
fn an_image_that_cannot_be_pulled_backs_off_and_the_pod_stays_pending() {
    let mut pod = pod(json!({}));
    let stage = Stage::parse("image-pull-error").expect("stage");
    advance(&mut pod, &stage, &moment(Duration::ZERO, Duration::ZERO));
    let failed = advance(&mut pod, &stage, &moment(START, START));
    assert_eq!(web(&pod)["state"]["waiting"]["reason"], "ErrImagePull");
    assert_eq!(failed.notes.iter().filter(|n| n.reason == "Failed").count(), 2);
    advance(&mut pod, &stage, &moment(START * 7, Duration::from_secs(10)));
    assert_eq!(web(&pod)["state"]["waiting"]["reason"], "ImagePullBackOff");
    assert_eq!(pod["status"]["phase"], "Pending");
}

#[test]
fn init_containers_complete_before_containers_start() {
    let mut pod = pod(json!({"initContainers": [{"name": "setup", "image": "busybox"},
                                                {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}]}));
    advance(&mut pod, &Stage::default(), &moment(Duration::ZERO, Duration::ZERO));
    assert_eq!(condition(&pod, "Initialized")["reason"], "ContainersNotInitialized");
    assert_eq!(web(&pod)["state"]["waiting"]["reason"], "PodInitializing");
    advance(&mut pod, &Stage::default(), &moment(START, START));
    let inits = &pod["status"]["initContainerStatuses"];
    assert_eq!(inits[0]["state"]["terminated"]["reason"], "Completed");
    assert!(inits[1]["state"]["running"].is_object(), "a sidecar keeps running");
    assert_eq!(condition(&pod, "Initialized")["status"], "True");
    assert_eq!(pod["status"]["phase"], "Running");
}

#[test]
fn images_are_reported_fully_qualified() {
    let cases = [
        ("nginx", "docker.io/library/nginx:latest"),
        ("nginx:1.27", "docker.io/library/nginx:1.27"),
        ("bitnami/redis:7", "docker.io/bitnami/redis:7"),
        ("ghcr.io/org/app", "ghcr.io/org/app:latest"),
        ("localhost:5000/app:v1", "localhost:5000/app:v1"),
        ("registry.k8s.io/pause@sha256:abc", "registry.k8s.io/pause@sha256:abc"),
    ];
    for (image, expected) in cases {
        assert_eq!(qualified_image(image), expected, "{image}");
    }
}

fn local(exit: Option<i32>) -> HashMap<String, Local> {
    HashMap::from([("web".to_string(), Local { program: "/bin/sh".into(), exit, ready: None })])
}

/// A pod whose container runs as a local process, started.
fn started_local(policy: &str) -> Value {
    let mut pod = pod(json!({"restartPolicy": policy}));
    advance(&mut pod, &Stage::default(), &Moment { local: local(None), ..moment(Duration::ZERO, Duration::ZERO) });
    let started = advance(&mut pod, &Stage::default(), &Moment { local: local(None), ..moment(START, START) });
    assert_eq!(started.wake, None, "a local process is watched, not timed");
    let pulled = &started.notes[0];
    assert_eq!(pulled.reason, "Pulled");
    assert!(pulled.message.contains("not used: --run-pods runs \"/bin/sh\""), "{}", pulled.message);
    assert_eq!(web(&pod)["state"]["running"]["startedAt"], "2025-01-01T00:00:10Z");
    pod
}

#[test]
fn local_processes_drive_the_status_by_restart_policy() {
    let long = Duration::from_secs(3600);
    // (restart policy, exit code) → (phase, state of the container, restart count)
    let cases = [
        ("Never", 3, "Failed", "terminated", 0),
        ("Never", 0, "Succeeded", "terminated", 0),
        ("OnFailure", 0, "Succeeded", "terminated", 0),
        ("OnFailure", 2, "Running", "running", 1),
        ("Always", 0, "Running", "running", 1),
        ("Always", 1, "Running", "running", 1),
    ];
    for (policy, code, phase, state, restarts) in cases {
        let mut pod = started_local(policy);
        let still = advance(&mut pod, &Stage::default(), &Moment { local: local(None), ..moment(long, long) });
        assert_eq!(still.status, None, "{policy}: running processes never exit by the clock");
        advance(&mut pod, &Stage::default(), &Moment { local: local(Some(code)), ..moment(long, long) });
        let what = format!("{policy} exit {code}");
        assert_eq!(pod["status"]["phase"], phase, "{what}");
        assert!(web(&pod)["state"].get(state).is_some(), "{what}: {}", web(&pod));
        assert_eq!(web(&pod)["restartCount"], restarts, "{what}");
        let terminated =
            if restarts == 0 { &web(&pod)["state"]["terminated"] } else { &web(&pod)["lastState"]["terminated"] };
        assert_eq!(terminated["exitCode"], code, "{what}");
        assert_eq!(terminated["reason"], if code == 0 { "Completed" } else { "Error" }, "{what}");
    }
}

#[test]
fn a_local_process_that_keeps_failing_backs_off() {
    let mut pod = started_local("Always");
    let at = Duration::from_secs(5);
    advance(&mut pod, &Stage::default(), &Moment { local: local(Some(1)), ..moment(at, at) });
    assert_eq!(web(&pod)["restartCount"], 1);
    // The restarted instance is running: the previous exit does not count again.
    let running = advance(&mut pod, &Stage::default(), &Moment { local: local(None), ..moment(at, Duration::ZERO) });
    assert_eq!(running.status, None);
    let crashed = advance(&mut pod, &Stage::default(), &Moment { local: local(Some(1)), ..moment(at, at) });
    assert_eq!(web(&pod)["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(crashed.wake, Some(Duration::from_secs(10)));
    let restarted =
        advance(&mut pod, &Stage::default(), &Moment { local: local(Some(1)), ..moment(at, Duration::from_secs(10)) });
    assert!(restarted.status.is_some());
    assert_eq!((web(&pod)["restartCount"].clone(), web(&pod)["state"].get("running").is_some()), (json!(2), true));
}

fn init_status(pod: &Value) -> &Value {
    &pod["status"]["initContainerStatuses"][0]
}

#[test]
fn a_local_init_container_holds_the_containers_back_until_it_completes() {
    let setup = |exit: Option<i32>| {
        HashMap::from([("setup".to_string(), Local { program: "/bin/sh".into(), exit, ready: None })])
    };
    // (restart policy, the init container's exit) → (phase, init state, web state)
    let cases = [
        ("Always", 0, "Running", "terminated", "running"),
        ("Never", 2, "Failed", "terminated", "waiting"),
        ("OnFailure", 2, "Pending", "running", "waiting"),
    ];
    for (policy, code, phase, init_state, web_state) in cases {
        let mut pod = pod(json!({"restartPolicy": policy, "initContainers": [{"name": "setup", "image": "busybox"}]}));
        advance(&mut pod, &Stage::default(), &Moment { local: setup(None), ..moment(Duration::ZERO, Duration::ZERO) });
        advance(&mut pod, &Stage::default(), &Moment { local: setup(None), ..moment(START, START) });
        assert!(init_status(&pod)["state"].get("running").is_some(), "{policy}: {}", init_status(&pod));
        assert_eq!(web(&pod)["state"]["waiting"]["reason"], "PodInitializing", "{policy}");
        assert_eq!(pod["status"]["phase"], "Pending", "{policy}");
        assert_eq!(condition(&pod, "Initialized")["status"], "False", "{policy}");
        advance(&mut pod, &Stage::default(), &Moment { local: setup(Some(code)), ..moment(START, START) });
        let what = format!("{policy}, init exits {code}");
        assert_eq!(pod["status"]["phase"], phase, "{what}");
        assert!(init_status(&pod)["state"].get(init_state).is_some(), "{what}: {}", init_status(&pod));
        assert!(web(&pod)["state"].get(web_state).is_some(), "{what}: {}", web(&pod));
    }
}

#[test]
fn a_local_process_with_probes_is_ready_when_they_say_so() {
    let probed = |ready: Option<bool>| {
        HashMap::from([("web".to_string(), Local { program: "/bin/sh".into(), exit: None, ready })])
    };
    let mut pod = pod(json!({"restartPolicy": "Always"}));
    pod["spec"]["containers"][0]["startupProbe"] = json!({"tcpSocket": {"port": 1235}});
    advance(&mut pod, &Stage::default(), &Moment { local: probed(None), ..moment(Duration::ZERO, Duration::ZERO) });
    let started = advance(&mut pod, &Stage::default(), &Moment { local: probed(None), ..moment(START, START) });
    assert!(web(&pod)["state"].get("running").is_some());
    assert_eq!(web(&pod)["ready"], false, "not ready before its probes pass");
    assert_eq!(started.wake, None, "its probes wake the simulation, not the clock");
    let long = Duration::from_secs(3600);
    // (what the probes say) → ready
    for (said, ready) in [(None, false), (Some(false), false), (Some(true), true), (Some(false), false)] {
        advance(&mut pod, &Stage::default(), &Moment { local: probed(said), ..moment(long, long) });
        assert_eq!(web(&pod)["ready"], ready, "{said:?}");
    }
}
