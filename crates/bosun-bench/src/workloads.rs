//! Workload simulation: what it costs the server (create throughput with simulation off and
//! on, the on-server busy with a fleet of running pods) and how fast a fleet comes up (N
//! Deployments × R replicas, each with a Service, until every Deployment is available and every
//! Service's Endpoints list its R ready pods).

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use bosun_apiserver::{ApiServer, RunningServer};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Endpoints, Service},
};
use kube::{
    Api, ResourceExt,
    api::PostParams,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::json;

use crate::{apiserver::create_throughput, median};

/// Arguments of the workload simulation benchmark.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Deployments in the fleet.
    #[arg(long, default_value_t = 1000)]
    deployments: usize,
    /// Replicas of each.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Simulated nodes.
    #[arg(long, default_value_t = 10)]
    nodes: usize,
    /// ConfigMaps created in each throughput run.
    #[arg(long, default_value_t = 4000)]
    creates: usize,
    /// Concurrent clients creating.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Alternating rounds of simulation off and on (medians compared).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

async fn server(simulate: bool, nodes: usize) -> RunningServer {
    let builder = ApiServer::in_memory().nodes(nodes);
    let builder = if simulate { builder.simulate_workloads(Duration::from_millis(500)) } else { builder };
    builder.start().await.expect("server")
}

fn deployment(name: &str, replicas: usize) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}
    }))
    .expect("deployment")
}

fn service(name: &str) -> Service {
    serde_json::from_value(
        json!({"metadata": {"name": name}, "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}),
    )
    .expect("service")
}

/// Creates the fleet; returns (seconds to create, seconds until all available with endpoints).
async fn fleet(server: &RunningServer, deployments: usize, replicas: usize, clients: usize) -> (f64, f64) {
    let client = server.client();
    let deployments_api: Api<Deployment> = Api::default_namespaced(client.clone());
    let endpoints_api: Api<Endpoints> = Api::default_namespaced(client.clone());
    let wanted = i32::try_from(replicas).expect("replicas");
    let available = watcher(deployments_api.clone(), watcher::Config::default()).applied_objects().boxed();
    let endpoints = watcher(endpoints_api, watcher::Config::default()).applied_objects().boxed();
    let started = Instant::now();
    let probe: Api<Endpoints> = Api::default_namespaced(client.clone());
    let pods_probe: Api<k8s_openapi::api::core::v1::Pod> = Api::default_namespaced(client.clone());
    let waiting = tokio::spawn(async move {
        let mut done_deployments = HashSet::new();
        let mut done_endpoints = HashSet::new();
        let mut events = futures::stream::select(
            available.map_ok(|d: Deployment| {
                (true, d.name_any(), d.status.and_then(|s| s.available_replicas) == Some(wanted))
            }),
            endpoints.map_ok(move |e: Endpoints| {
                let ready: usize = e.subsets.iter().flatten().map(|s| s.addresses.as_ref().map_or(0, Vec::len)).sum();
                (false, e.name_any(), ready == replicas)
            }),
        );
        let mut report = tokio::time::interval(Duration::from_secs(10));
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                _ = report.tick() => {
                    eprintln!("… {} Deployments available, {} Endpoints complete", done_deployments.len(), done_endpoints.len());
                    if done_deployments.len() == deployments {
                        let all = probe.list(&Default::default()).await.expect("list");
                        let ready = |e: &Endpoints| e.subsets.iter().flatten().map(|s| s.addresses.as_ref().map_or(0, Vec::len)).sum::<usize>();
                        if let Some(stuck) = all.items.iter().find(|e| e.name_any() != "kubernetes" && ready(e) != replicas) {
                            eprintln!("stuck: {}", serde_json::to_string(stuck).expect("json"));
                            let pods = pods_probe.list(&kube::api::ListParams::default().labels(&format!("app={}", stuck.name_any()))).await.expect("pods");
                            for pod in pods.items { eprintln!("pod {} {:?} ip {:?}", pod.name_any(), pod.status.as_ref().and_then(|s| s.conditions.clone()).map(|c| c.iter().map(|c| format!("{}={}", c.type_, c.status)).collect::<Vec<_>>()), pod.status.as_ref().and_then(|s| s.pod_ip.clone())); }
                        }
                    }
                    continue;
                }
            };
            let (is_deployment, name, done) = match event {
                Some(Ok(event)) => event,
                Some(Err(error)) => {
                    eprintln!("watch: {error} (the watcher resumes)");
                    continue;
                }
                None => return,
            };
            let set = if is_deployment { &mut done_deployments } else { &mut done_endpoints };
            if done {
                set.insert(name);
            } else {
                set.remove(&name);
            }
            if done_deployments.len() == deployments && done_endpoints.len() == deployments {
                return;
            }
        }
    });
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let client = kube::Client::try_from(server.config()).expect("client");
            tokio::spawn(async move {
                let deployments_api: Api<Deployment> = Api::default_namespaced(client.clone());
                let services_api: Api<Service> = Api::default_namespaced(client);
                for i in (c..deployments).step_by(clients) {
                    let name = format!("app-{i}");
                    services_api.create(&PostParams::default(), &service(&name)).await.expect("service");
                    deployments_api
                        .create(&PostParams::default(), &deployment(&name, replicas))
                        .await
                        .expect("deployment");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    let created = started.elapsed().as_secs_f64();
    tokio::time::timeout(Duration::from_secs(1800), waiting).await.expect("fleet available in 30 min").expect("waiter");
    (created, started.elapsed().as_secs_f64())
}

/// Runs the benchmark and prints its table.
pub async fn run(args: Args) {
    let (mut off, mut on, mut busy) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..args.rounds {
        let plain = server(false, args.nodes).await;
        off.push(create_throughput(&plain, args.creates, args.clients, &format!("off{round}")).await);
        plain.shutdown().await;
        let simulated = server(true, args.nodes).await;
        on.push(create_throughput(&simulated, args.creates, args.clients, &format!("on{round}")).await);
        simulated.shutdown().await;
    }
    let simulated = server(true, args.nodes).await;
    let (created, ready) = fleet(&simulated, args.deployments, args.replicas, args.clients).await;
    let pods = simulated.client();
    let pod_count = Api::<k8s_openapi::api::core::v1::Pod>::default_namespaced(pods)
        .list(&kube::api::ListParams::default())
        .await
        .expect("pods")
        .items
        .len();
    for round in 0..args.rounds {
        busy.push(create_throughput(&simulated, args.creates, args.clients, &format!("busy{round}")).await);
    }
    simulated.shutdown().await;
    let (off, on, busy) = (median(&mut off), median(&mut on), median(&mut busy));
    println!("| measurement | value |");
    println!("|---|---|");
    println!(
        "| ConfigMap creates/s, simulation off ({} clients, median of {}) | {off:.0} |",
        args.clients, args.rounds
    );
    println!(
        "| ConfigMap creates/s, simulation on, {} idle nodes | {on:.0} ({:+.1}%) |",
        args.nodes,
        (on / off - 1.0) * 100.0
    );
    println!(
        "| ConfigMap creates/s, simulation on, {pod_count} running pods on {} nodes | {busy:.0} ({:+.1}%) |",
        args.nodes,
        (busy / off - 1.0) * 100.0
    );
    println!(
        "| {} Deployments × {} replicas + a Service each: created in | {created:.1} s |",
        args.deployments, args.replicas
    );
    println!("| … all available, Endpoints listing every ready pod (500 ms start delay) | {ready:.1} s |");
}
