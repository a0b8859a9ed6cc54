//! `bosun apiserver` killed with SIGKILL in the middle of a write storm, again and again: after
//! every restart each acknowledged write is there (creates, updates and deletes), versions
//! never go backwards, and a watch resuming from a version stored before the kill sees every
//! acknowledged change after it or is told 410 Gone — never a silent gap. (Today the server
//! keeps its watch history in memory, so after a restart such a watch is always told 410 and
//! the client relists, as it would after etcd compacted the history.)
//!
//! `BOSUN_KILL_CYCLES=50 cargo test -p bosun-cli --test durability` runs longer than CI's 8.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams},
};
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
    time::Instant,
};

const WRITERS: usize = 8;
const NAMES_PER_WRITER: usize = 6;

/// What the clients know of an object: absent, or present with a value at a version; or, when
/// a write was in flight at the kill, either of two states.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    Absent,
    Present {
        value: u64,
        version: u64,
    },
    /// The write's answer never came: the state before it, or the one it asked for (a
    /// present state's version is then unknown: `u64::MAX`).
    Either(Box<Known>, Box<Known>),
}

fn cycles() -> usize {
    std::env::var("BOSUN_KILL_CYCLES").ok().and_then(|n| n.parse().ok()).unwrap_or(8)
}

async fn start(data_dir: &Path) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["apiserver", "--port", "0", "--data-dir"])
        .arg(data_dir)
        .arg("--kubeconfig")
        .arg(data_dir.join("kubeconfig"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("bosun starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server reports its address")
        .expect("read")
        .expect("a line");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

async fn api(data_dir: &Path) -> Api<ConfigMap> {
    let kubeconfig = kube::config::Kubeconfig::read_from(data_dir.join("kubeconfig")).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
    config.read_timeout = Some(Duration::from_secs(10));
    Api::default_namespaced(kube::Client::try_from(config).expect("client"))
}

fn version(object: &ConfigMap) -> u64 {
    object.resource_version().expect("rv").parse().expect("numeric")
}

fn value(object: &ConfigMap) -> u64 {
    object.data.as_ref().and_then(|d| d.get("v")).and_then(|v| v.parse().ok()).expect("value")
}

/// One writer's storm on its own names until the server dies: create, update or delete at
/// random, each acknowledged result recorded; the first failed write is recorded as uncertain
/// and ends the writer.
async fn storm(
    api: Api<ConfigMap>,
    writer: usize,
    known: Arc<Mutex<BTreeMap<String, Known>>>,
    acked: Arc<Mutex<Vec<u64>>>,
) {
    let mut counter = 0u64;
    loop {
        counter += 1;
        let name = format!("w{writer}-{}", rand::random_range(0..NAMES_PER_WRITER));
        let before = known.lock().expect("lock").get(&name).cloned().unwrap_or(Known::Absent);
        let value = writer as u64 * 1_000_000 + counter;
        let (attempt, result) = match before {
            Known::Absent => {
                let object =
                    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"v": value.to_string()}}))
                        .expect("configmap");
                (
                    Known::Present { value, version: u64::MAX },
                    api.create(&PostParams::default(), &object).await.map(Some),
                )
            }
            Known::Present { .. } if rand::random_bool(0.3) => {
                (Known::Absent, api.delete(&name, &DeleteParams::default()).await.map(|deleted| deleted.left()))
            }
            _ => {
                let patch = json!({"data": {"v": value.to_string()}});
                (
                    Known::Present { value, version: u64::MAX },
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(Some),
                )
            }
        };
        let mut known = known.lock().expect("lock");
        match result {
            Ok(Some(object)) => {
                acked.lock().expect("lock").push(version(&object));
                let now = match attempt {
                    Known::Absent => Known::Absent,
                    _ => Known::Present { value: self::value(&object), version: version(&object) },
                };
                known.insert(name, now);
            }
            Ok(None) => {
                known.insert(name, Known::Absent);
            }
            Err(_) => {
                let before = known.get(&name).cloned().unwrap_or(Known::Absent);
                known.insert(name, Known::Either(Box::new(before), Box::new(attempt)));
                return;
            }
        }
    }
}

/// Whether `found` (the object after the restart) is what the clients know, or may be.
fn matches(known: &Known, found: Option<&ConfigMap>) -> bool {
    match (known, found) {
        (Known::Absent, None) => true,
        (Known::Present { value: v, version: rv }, Some(object)) => {
            value(object) == *v && (*rv == u64::MAX || version(object) == *rv)
        }
        (Known::Either(a, b), found) => matches(a, found) || matches(b, found),
        _ => false,
    }
}

#[tokio::test]
async fn acknowledged_writes_survive_sigkill_during_a_write_storm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let known: Arc<Mutex<BTreeMap<String, Known>>> = Arc::default();
    let mut highest_acked = 0u64;
    let mut checked = 0usize;
    let (mut writes, mut resumed, mut told_gone) = (0usize, 0usize, 0usize);
    for cycle in 0..cycles() {
        let mut server = start(dir.path()).await;
        let api = api(dir.path()).await;

        // After a restart: every acknowledged state is there.
        let listed = api.list(&ListParams::default()).await.expect("list after restart");
        let found: BTreeMap<String, ConfigMap> =
            listed.items.into_iter().filter(|c| c.name_any().starts_with('w')).map(|c| (c.name_any(), c)).collect();
        {
            let mut known = known.lock().expect("lock");
            for (name, state) in known.iter_mut() {
                let object = found.get(name);
                assert!(matches(state, object), "cycle {cycle}: {name}: acknowledged {state:?}, found {object:?}");
                checked += 1;
                // What the server has now is what the next cycle builds on.
                *state = match object {
                    Some(object) => Known::Present { value: value(object), version: version(object) },
                    None => Known::Absent,
                };
            }
            let unknown: Vec<&String> = found.keys().filter(|name| !known.contains_key(*name)).collect();
            assert!(unknown.is_empty(), "cycle {cycle}: objects nobody wrote: {unknown:?}");
        }

        // A storm, a resume point inside it, and a kill at a random moment.
        let acked: Arc<Mutex<Vec<u64>>> = Arc::default();
        let writers: Vec<_> =
            (0..WRITERS).map(|writer| tokio::spawn(storm(api.clone(), writer, known.clone(), acked.clone()))).collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        while acked.lock().expect("lock").len() < 20 {
            assert!(Instant::now() < deadline, "cycle {cycle}: the storm does not get going");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let resume_from = *acked.lock().expect("lock").iter().max().expect("acked");
        tokio::time::sleep(Duration::from_millis(rand::random_range(50..400))).await;
        server.start_kill().expect("SIGKILL");
        server.wait().await.expect("killed");
        for writer in writers {
            writer.await.expect("writer");
        }
        let acked = std::mem::take(&mut *acked.lock().expect("lock"));
        writes += acked.len();
        let cycle_highest = acked.iter().copied().max().unwrap_or(0);
        assert!(
            cycle_highest > highest_acked,
            "cycle {cycle}: versions went backwards: {cycle_highest} after {highest_acked}"
        );
        highest_acked = cycle_highest;

        // Restarted: a watch from the stored version sees every acknowledged write after it, or
        // is told the version is too old.
        let mut server = start(dir.path()).await;
        let api = self::api(dir.path()).await;
        let wanted: BTreeSet<u64> = acked.iter().copied().filter(|v| *v > resume_from).collect();
        let mut seen = BTreeSet::new();
        let mut gone = false;
        let params = WatchParams::default().timeout(20);
        let mut events = api.watch(&params, &resume_from.to_string()).await.expect("watch").boxed();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !wanted.is_subset(&seen) && Instant::now() < deadline {
            match tokio::time::timeout(Duration::from_secs(5), events.try_next()).await {
                Ok(Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)))) => {
                    seen.insert(version(&o));
                }
                Ok(Ok(Some(WatchEvent::Error(status)))) if status.code == 410 => {
                    gone = true;
                    break;
                }
                Ok(Ok(Some(_))) => {}
                other => panic!("cycle {cycle}: the watch from {resume_from} ended: {other:?}"),
            }
        }
        if gone {
            told_gone += 1;
        } else {
            resumed += 1;
        }
        assert!(
            gone || wanted.is_subset(&seen),
            "cycle {cycle}: the watch from {resume_from} missed {:?}",
            wanted.difference(&seen).collect::<Vec<_>>()
        );
        // New writes get larger versions than any acknowledged before the kill.
        let probe = serde_json::from_value(json!({"metadata": {"name": format!("probe-{cycle}")}})).expect("configmap");
        let probe = api.create(&PostParams::default(), &probe).await.expect("probe");
        assert!(version(&probe) > highest_acked, "cycle {cycle}: {} after {highest_acked}", version(&probe));
        server.start_kill().expect("stop");
        server.wait().await.expect("stopped");
    }
    eprintln!(
        "{} kill-restart cycles: {writes} acknowledged writes, {checked} object states checked after restarts, \
         watches resumed without a gap {resumed} times, told 410 {told_gone} times",
        cycles()
    );
}
