//! LoadBalancer Services under `--simulate-workloads`: a loopback address of their own in
//! `status.loadBalancer.ingress` (as k3s's service load balancer gives one), seen by kubectl and
//! kube-rs, released when the Service goes; with `--run-pods`, the address's ports reach the
//! pod's process.

mod common;

use std::{net::Ipv4Addr, time::Duration};

use bosun_apiserver::{ApiServer, RunningServer};
use common::{Kubectl, shared_dir};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

const BOUND: Duration = Duration::from_secs(60);

async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future).await.unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

async fn simulating(run_pods: bool) -> RunningServer {
    let server = ApiServer::in_memory().simulate_workloads(Duration::from_millis(100));
    server.run_pods(run_pods).start().await.expect("server")
}

async fn create_service(api: &Api<Service>, name: &str, spec: serde_json::Value) {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec});
    api.create(&PostParams::default(), &serde_json::from_value(service).expect("service")).await.expect("create");
}

/// The ingress addresses of a Service's status.
async fn ingress(api: &Api<Service>, name: &str) -> Vec<serde_json::Value> {
    let service = api.get(name).await.expect("get service");
    let status = serde_json::to_value(service.status).expect("status");
    status.pointer("/loadBalancer/ingress").and_then(|i| i.as_array()).cloned().unwrap_or_default()
}

/// Waits until a Service's ingress satisfies `condition`; returns it.
async fn ingress_where(
    api: &Api<Service>,
    name: &str,
    condition: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    within(&format!("service {name}'s ingress"), async {
        loop {
            let ingress = ingress(api, name).await;
            if condition(&ingress) {
                return ingress;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

fn address(ingress: &[serde_json::Value]) -> Ipv4Addr {
    ingress[0]["ip"].as_str().expect("ip").parse().expect("an IPv4 address")
}

#[tokio::test]
async fn load_balancer_services_get_loopback_addresses_of_their_own_until_they_go() {
    let server = simulating(false).await;
    let services: Api<Service> = Api::default_namespaced(server.client());
    let lb = |port: i64| json!({"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": port}]});
    // Created first, so by the time the later ones have addresses the controller has seen it.
    let mut foreign = lb(80);
    foreign["loadBalancerClass"] = json!("example.com/cloud-lb");
    create_service(&services, "foreign", foreign).await;
    create_service(&services, "plain", json!({"selector": {"app": "web"}, "ports": [{"port": 80}]})).await;
    create_service(&services, "first", lb(80)).await;
    create_service(&services, "second", lb(8080)).await;

    // kubectl waits for the address as a health check would.
    let kubectl = Kubectl::new(&server);
    let wait = ["wait", "service/first", "--for=jsonpath={.status.loadBalancer.ingress}", "--timeout=60s"];
    kubectl.ok(&wait).await;
    let first = ingress_where(&services, "first", |i| !i.is_empty()).await;
    let second = ingress_where(&services, "second", |i| !i.is_empty()).await;
    assert_eq!(first, vec![json!({"ip": address(&first).to_string(), "ipMode": "VIP"})]);
    let (a, b) = (address(&first), address(&second));
    assert_ne!(a, b, "each Service has an address of its own");
    for ip in [a, b] {
        assert!(ip.is_loopback() && ip != Ipv4Addr::LOCALHOST, "{ip}");
    }
    assert_eq!(ingress(&services, "foreign").await, Vec::<serde_json::Value>::new(), "another class's to serve");
    assert_eq!(ingress(&services, "plain").await, Vec::<serde_json::Value>::new());
    let written = services.get("first").await.expect("get").metadata.managed_fields.unwrap_or_default();
    assert!(
        written.iter().any(|m| m.manager.as_deref() == Some("bosun-service-load-balancer")
            && m.subresource.as_deref() == Some("status")),
        "written through the status subresource by a manager of its own: {written:?}"
    );

    // Deleting a Service releases its address: the next Service gets it.
    services.delete("first", &DeleteParams::default()).await.expect("delete");
    create_service(&services, "third", lb(80)).await;
    let third = ingress_where(&services, "third", |i| !i.is_empty()).await;
    assert_eq!(address(&third), a, "the lowest free address, released by first");

    // A Service that stops being a LoadBalancer loses its address.
    let patch = json!({"spec": {"type": "ClusterIP", "ports": [{"port": 8080}]}});
    services.patch("second", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    ingress_where(&services, "second", <[serde_json::Value]>::is_empty).await;
}

#[tokio::test]
async fn addresses_are_kept_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start = || ApiServer::data_dir(dir.path().join("data")).simulate_workloads(Duration::from_millis(100)).start();
    let lb = json!({"type": "LoadBalancer", "ports": [{"port": 80}]});
    let server = start().await.expect("server");
    let services: Api<Service> = Api::default_namespaced(server.client());
    let mut before = Vec::new();
    for name in ["a", "b"] {
        create_service(&services, name, lb.clone()).await;
        before.push(address(&ingress_where(&services, name, |i| !i.is_empty()).await));
    }
    server.shutdown().await;

    let server = start().await.expect("server again");
    let services: Api<Service> = Api::default_namespaced(server.client());
    create_service(&services, "c", lb).await;
    let c = address(&ingress_where(&services, "c", |i| !i.is_empty()).await);
    assert!(!before.contains(&c), "{c} is a new address, not one of {before:?}");
    for (name, ip) in ["a", "b"].into_iter().zip(&before) {
        assert_eq!(address(&ingress(&services, name).await), *ip, "{name} keeps its address");
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

/// GET `path` from `ip:port` over HTTP/1.0; returns the whole answer.
async fn http_get(ip: Ipv4Addr, port: u16, path: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect((ip, port)).await?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes()).await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

#[tokio::test]
async fn with_run_pods_the_load_balancer_port_reaches_the_pods_process() {
    let server = simulating(true).await;
    let site = shared_dir();
    std::fs::write(site.path().join("hello.txt"), "hello through the load balancer\n").expect("write");
    let (pod_port, service_port) = (free_port(), free_port());
    let command = json!(["python3", "-m", "http.server", pod_port.to_string(), "--bind", "127.0.0.1"]);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
                     "spec": {"terminationGracePeriodSeconds": 5, "containers": [{
                         "name": "main", "image": "python:3", "command": command, "workingDir": site.path(),
                         "ports": [{"name": "http", "containerPort": pod_port}]}]}});
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    pods.create(&PostParams::default(), &serde_json::from_value(pod).expect("pod")).await.expect("create pod");
    let services: Api<Service> = Api::default_namespaced(server.client());
    let spec = json!({"type": "LoadBalancer", "selector": {"app": "web"},
                      "ports": [{"port": service_port, "targetPort": "http"}]});
    create_service(&services, "web", spec).await;
    let ip = address(&ingress_where(&services, "web", |i| !i.is_empty()).await);

    // The pod becomes ready and its server listens in its own time: ask until it answers.
    let answer = within("an answer through the load balancer", async {
        loop {
            if let Ok(answer) = http_get(ip, service_port, "/hello.txt").await
                && answer.starts_with("HTTP/1.0 200")
            {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(answer.ends_with("hello through the load balancer\n"), "{answer}");

    // Without the Service, nothing listens on its address.
    services.delete("web", &DeleteParams::default()).await.expect("delete");
    within("the load balancer stops listening", async {
        while tokio::net::TcpStream::connect((ip, service_port)).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}
