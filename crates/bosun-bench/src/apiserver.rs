//! The embedded API server: create throughput with concurrent kube-rs clients (in memory and
//! durable on SQLite) beside raw SQLite inserts of the same payloads, what RBAC costs a create,
//! list latency, and watch fan-out.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bosun_apiserver::{ApiServer, AuthorizationMode, RunningServer};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{
    core::v1::ConfigMap,
    rbac::v1::{ClusterRoleBinding, RoleBinding},
};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams},
};
use rusqlite::params;
use serde_json::json;

use crate::median;

/// Arguments of the API server benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Objects created in the throughput runs.
    #[arg(long, default_value_t = 4000)]
    creates: usize,
    /// Concurrent kube-rs clients creating.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Objects in the listed namespace.
    #[arg(long, default_value_t = 10_000)]
    list_objects: usize,
    /// Lists timed.
    #[arg(long, default_value_t = 20)]
    lists: usize,
    /// Concurrent watchers.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// Changes each watcher must receive.
    #[arg(long, default_value_t = 1000)]
    events: usize,
    /// Unrelated ClusterRoleBindings RBAC looks through on every request (a real cluster's
    /// control plane has dozens).
    #[arg(long, default_value_t = 60)]
    bindings: usize,
    /// Alternating rounds of RBAC off and on (the medians are compared).
    #[arg(long, default_value_t = 3)]
    rbac_rounds: usize,
}

fn configmap(name: &str) -> ConfigMap {
    let data: serde_json::Map<String, serde_json::Value> = (0..10)
        .map(|i| (format!("key-{i}"), json!(format!("value {i} of {name}, padded to a typical size"))))
        .collect();
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": "bench"}}, "data": data}))
        .expect("configmap")
}

fn clients(config: &kube::Config, count: usize) -> Vec<Api<ConfigMap>> {
    (0..count).map(|_| Api::default_namespaced(kube::Client::try_from(config.clone()).expect("client"))).collect()
}

/// Creates `total` ConfigMaps from `count` clients at once; returns creates per second.
pub async fn create_throughput(server: &RunningServer, total: usize, count: usize, prefix: &str) -> f64 {
    create_throughput_as(&server.config(), total, count, prefix).await
}

/// [`create_throughput`] with clients configured by `config` (another user).
async fn create_throughput_as(config: &kube::Config, total: usize, count: usize, prefix: &str) -> f64 {
    let apis = clients(config, count.max(1));
    let clients_count = apis.len();
    let started = Instant::now();
    let tasks: Vec<_> = apis
        .into_iter()
        .enumerate()
        .map(|(c, api)| {
            let prefix = prefix.to_string();
            // Client c creates objects c, c + clients, …: exactly `total` in all, even when
            // there are fewer objects than clients.
            tokio::spawn(async move {
                for i in (c..total).step_by(clients_count) {
                    api.create(&PostParams::default(), &configmap(&format!("{prefix}-{i}"))).await.expect("create");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// Inserts the payloads into SQLite with the server's schema and settings, one transaction per
/// object (each insert acknowledged on its own, as a create is); returns inserts per second.
fn raw_sqlite_inserts(payloads: &[(String, String)]) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut connection = rusqlite::Connection::open(dir.path().join("raw.db")).expect("open");
    connection
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             CREATE TABLE objects (resource TEXT NOT NULL, key TEXT NOT NULL, revision INTEGER NOT NULL,
                                   json TEXT NOT NULL, PRIMARY KEY (resource, key)) WITHOUT ROWID;
             CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
             INSERT INTO meta VALUES ('revision', 0);",
        )
        .expect("schema");
    let started = Instant::now();
    for (revision, (key, json)) in payloads.iter().enumerate() {
        let transaction = connection.transaction().expect("begin");
        transaction
            .execute(
                "INSERT INTO objects (resource, key, revision, json) VALUES ('configmaps', ?1, ?2, ?3)",
                params![key, revision as i64, json],
            )
            .expect("insert");
        transaction
            .execute("UPDATE meta SET value = ?1 WHERE name = 'revision'", params![revision as i64])
            .expect("meta");
        transaction.commit().expect("commit");
    }
    payloads.len() as f64 / started.elapsed().as_secs_f64()
}

/// Whether a ConfigMap is one the benchmark made.
fn is_bench(configmap: &ConfigMap) -> bool {
    configmap.metadata.labels.as_ref().and_then(|l| l.get("app")).is_some_and(|app| app == "bench")
}

async fn stored_payloads(server: &RunningServer) -> Vec<(String, String)> {
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut list = api.list(&ListParams::default()).await.expect("list");
    list.items.retain(is_bench);
    list.items
        .iter()
        .map(|cm| {
            let name = cm.metadata.name.clone().unwrap_or_default();
            (format!("default/{name}"), serde_json::to_string(cm).expect("json"))
        })
        .collect()
}

/// Create throughput with RBAC off (`AlwaysAllow`) and on (a user allowed by a RoleBinding,
/// among `bindings` unrelated ClusterRoleBindings), alternating `rounds` times on fresh servers;
/// returns the medians (off, on).
async fn rbac_cost(total: usize, count: usize, bindings: usize, rounds: usize) -> (f64, f64) {
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let open = ApiServer::in_memory().authorization(AuthorizationMode::AlwaysAllow).start().await.expect("server");
        off.push(create_throughput(&open, total, count, &format!("off-{round}")).await);
        open.shutdown().await;

        let guarded = ApiServer::in_memory().user("bench", &["bench-writers"]).start().await.expect("server");
        let admin = guarded.client();
        let cluster_bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
        for i in 0..bindings {
            let binding = json!({
                "metadata": {"name": format!("unrelated-{i}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "User", "name": format!("someone-{i}")}, {"kind": "Group", "name": format!("team-{i}")}],
            });
            let binding: ClusterRoleBinding = serde_json::from_value(binding).expect("binding");
            cluster_bindings.create(&PostParams::default(), &binding).await.expect("binding");
        }
        let writers = json!({
            "metadata": {"name": "bench-writers"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "Group", "name": "bench-writers"}],
        });
        let writers: RoleBinding = serde_json::from_value(writers).expect("binding");
        Api::<RoleBinding>::default_namespaced(admin).create(&PostParams::default(), &writers).await.expect("binding");
        let token = guarded.user_token("bench").expect("token").to_string();
        on.push(create_throughput_as(&guarded.config_with_token(&token), total, count, &format!("on-{round}")).await);
        guarded.shutdown().await;
    }
    (median(&mut off), median(&mut on))
}

/// (median, slowest) in ms of each way of listing, timed in the same rounds.
struct ListTimes {
    /// `kube::Api::list`: the server's answer decoded into typed ConfigMaps.
    typed: (f64, f64),
    /// The same list's text only: the server and the transport, no decoding.
    text: (f64, f64),
    /// That text decoded into `ObjectList<ConfigMap>` by serde_json alone, as kube-rs does:
    /// the floor of the typed list on the client side.
    decode: (f64, f64),
    /// As the `Table` `kubectl get` asks for (its text only).
    table: (f64, f64),
}

/// Times full lists of a namespace holding `objects` ConfigMaps: decoded by kube-rs, as text
/// only, that text decoded alone, and as the `Table` `kubectl get` asks for.
async fn list_latency(objects: usize, lists: usize, clients_count: usize) -> ListTimes {
    let server = ApiServer::in_memory().start().await.expect("server");
    create_throughput(&server, objects, clients_count, "list").await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let (mut typed, mut texts, mut decodes, mut tables) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let request = |accept: &str| {
        http::Request::get("/api/v1/namespaces/default/configmaps")
            .header(http::header::ACCEPT, accept)
            .body(Vec::new())
            .expect("request")
    };
    for _ in 0..lists {
        let started = Instant::now();
        let list = api.list(&ListParams::default()).await.expect("list");
        typed.push(started.elapsed().as_secs_f64() * 1000.0);
        // The namespace also holds its kube-root-ca.crt, as on a real cluster.
        assert_eq!(list.items.iter().filter(|cm| is_bench(cm)).count(), objects);
        drop(list);

        let started = Instant::now();
        let text = server.client().request_text(request("application/json")).await.expect("list as text");
        texts.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        let decoded: kube::core::ObjectList<ConfigMap> = serde_json::from_str(&text).expect("decode the list");
        decodes.push(started.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(decoded.items.iter().filter(|cm| is_bench(cm)).count(), objects);
        drop((decoded, text));

        let started = Instant::now();
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        let table = server.client().request_text(request(accept)).await.expect("list as a Table");
        tables.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(table.starts_with(r#"{"kind":"Table""#), "a Table: {}", &table[..table.len().min(200)]);
    }
    let median_and_slowest = |samples: &mut Vec<f64>| {
        let slowest = samples.iter().copied().fold(0.0, f64::max);
        (median(samples), slowest)
    };
    ListTimes {
        typed: median_and_slowest(&mut typed),
        text: median_and_slowest(&mut texts),
        decode: median_and_slowest(&mut decodes),
        table: median_and_slowest(&mut tables),
    }
}

/// `watchers` watches each receive `events` changes of one object; returns (total seconds,
/// deliveries per second, p50 and p99 latency from write acknowledged to receipt in ms).
async fn watch_fan_out(watchers: usize, events: usize) -> (f64, f64, f64, f64) {
    let server = ApiServer::in_memory().start().await.expect("server");
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let created = api.create(&PostParams::default(), &configmap("hot")).await.expect("create");
    let start_rv = created.metadata.resource_version.clone().expect("rv");
    let acknowledged: Arc<std::sync::Mutex<Vec<Option<Instant>>>> =
        Arc::new(std::sync::Mutex::new(vec![None; events + 1]));
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let api: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(server.config()).expect("client"));
        let stream = api.watch(&WatchParams::default().timeout(290), &start_rv).await.expect("watch").boxed();
        let acknowledged = acknowledged.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(events);
            let mut stream = stream;
            while latencies.len() < events {
                match stream.try_next().await.expect("watch event") {
                    Some(WatchEvent::Modified(cm)) => {
                        let received = Instant::now();
                        let index: usize =
                            cm.data.as_ref().and_then(|d| d.get("seq")).and_then(|s| s.parse().ok()).unwrap_or(0);
                        let sent = acknowledged.lock().expect("lock")[index];
                        latencies.push(sent.map(|s| received.saturating_duration_since(s)).unwrap_or(Duration::ZERO));
                    }
                    Some(_) => {}
                    None => panic!("watch ended early"),
                }
            }
            latencies
        }));
    }
    let started = Instant::now();
    for seq in 1..=events {
        acknowledged.lock().expect("lock")[seq] = Some(Instant::now());
        api.patch("hot", &PatchParams::default(), &Patch::Merge(json!({"data": {"seq": seq.to_string()}})))
            .await
            .expect("patch");
    }
    let mut latencies: Vec<f64> = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("watcher").iter().map(|d| d.as_secs_f64() * 1000.0));
    }
    let total = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    let p99 = latencies[(latencies.len() * 99 / 100).min(latencies.len() - 1)];
    ((total), (watchers * events) as f64 / total, median(&mut latencies), p99)
}

/// Median time to start an in-memory server and stop it, in ms.
async fn startup() -> f64 {
    let mut samples = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let server = ApiServer::in_memory().start().await.expect("server");
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        server.shutdown().await;
    }
    median(&mut samples)
}

/// Runs every API server benchmark and prints the Markdown table.
pub async fn run(args: Args) {
    eprintln!("startup…");
    let startup_ms = startup().await;
    eprintln!("create throughput, in memory ({} objects, {} clients)…", args.creates, args.clients);
    let memory = ApiServer::in_memory().start().await.expect("server");
    let in_memory = create_throughput(&memory, args.creates, args.clients, "mem").await;
    let payloads = stored_payloads(&memory).await;
    memory.shutdown().await;

    eprintln!("create throughput, durable on SQLite…");
    let dir = tempfile::tempdir().expect("tempdir");
    let durable_server = ApiServer::data_dir(dir.path()).start().await.expect("server");
    let durable = create_throughput(&durable_server, args.creates, args.clients, "disk").await;
    durable_server.shutdown().await;

    eprintln!("raw SQLite inserts of the same {} payloads…", payloads.len());
    let raw = raw_sqlite_inserts(&payloads);

    eprintln!(
        "create throughput, RBAC off and on ({} rounds, {} unrelated bindings)…",
        args.rbac_rounds, args.bindings
    );
    let (rbac_off, rbac_on) = rbac_cost(args.creates, args.clients, args.bindings, args.rbac_rounds).await;

    eprintln!("list latency ({} objects)…", args.list_objects);
    let lists = list_latency(args.list_objects, args.lists, args.clients).await;
    let ((list_median, list_max), (text_median, text_max)) = (lists.typed, lists.text);
    let ((decode_median, decode_max), (table_median, table_max)) = (lists.decode, lists.table);

    eprintln!("watch fan-out ({} watchers × {} events)…", args.watchers, args.events);
    let (fan_seconds, deliveries, p50, p99) = watch_fan_out(args.watchers, args.events).await;

    println!("| measurement | result | bound / comparison | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| start an in-memory server (median of 20) | {startup_ms:.1} ms | aim: well under 1 s | {:.3}× of the aim |",
        startup_ms / 1000.0
    );
    println!(
        "| create, {} kube-rs clients, in memory | {in_memory:.0} objects/s | raw SQLite inserts, one transaction each: {raw:.0}/s | {:.2}× |",
        args.clients,
        in_memory / raw
    );
    println!(
        "| create, {} kube-rs clients, durable (SQLite WAL) | {durable:.0} objects/s | raw SQLite inserts, one transaction each: {raw:.0}/s | {:.2}× |",
        args.clients,
        durable / raw
    );
    println!(
        "| create, {} kube-rs clients, in memory, as a user RBAC allows through a RoleBinding among {} unrelated ClusterRoleBindings (median of {}) | {rbac_on:.0} objects/s | RBAC off (`AlwaysAllow`), same run: {rbac_off:.0}/s (aim: RBAC costs under 10%) | {:.2}× |",
        args.clients,
        args.bindings,
        args.rbac_rounds,
        rbac_on / rbac_off
    );
    println!(
        "| list {} ConfigMaps (kube-rs, full list) | median {list_median:.1} ms, slowest {list_max:.1} ms | aim: under 100 ms | {:.2}× of the aim |",
        args.list_objects,
        list_median / 100.0
    );
    println!(
        "| list {} ConfigMaps, the answer's text only (server and transport) | median {text_median:.1} ms, slowest {text_max:.1} ms | the full list decoded by kube-rs: {list_median:.1} ms | {:.2}× |",
        args.list_objects,
        text_median / list_median
    );
    println!(
        "| decode that text into `ObjectList<ConfigMap>` (serde_json alone, as kube-rs does) | median {decode_median:.1} ms, slowest {decode_max:.1} ms | the full list decoded by kube-rs: {list_median:.1} ms | {:.2}× |",
        decode_median / list_median
    );
    println!(
        "| list {} ConfigMaps as a Table (`kubectl get`'s request, text only) | median {table_median:.1} ms, slowest {table_max:.1} ms | the full list decoded by kube-rs: {list_median:.1} ms | {:.2}× |",
        args.list_objects,
        table_median / list_median
    );
    println!(
        "| watch fan-out: {} watchers × {} changes | {fan_seconds:.2} s, {deliveries:.0} deliveries/s | write-to-receipt latency p50 {p50:.2} ms, p99 {p99:.2} ms | — |",
        args.watchers, args.events
    );
}
