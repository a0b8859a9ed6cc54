//! LoadBalancer Services: an address in `status.loadBalancer.ingress`, written through the status
//! subresource under a field manager of its own, and (with `--run-pods`) a listener on that
//! address for each TCP port that forwards connections to a ready pod's process.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::{net::TcpListener, sync::watch};

use crate::simulation::*;

/// The field manager of the load balancer's status writes.
const LB_MANAGER: &str = "bosun-service-load-balancer";

/// One listening port of a load balancer; it stops listening when dropped.
pub(in crate::simulation) struct Listener {
    address: SocketAddr,
    /// The pod port connections go to (`None` while no pod is ready).
    target: watch::Sender<Option<u16>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Listener {
    /// Listens on `address`, forwarding each connection to `127.0.0.1:<target>`; a connection
    /// that arrives while no pod is ready, or whose pod does not answer, is closed.
    fn bind(address: SocketAddr, target: Option<u16>) -> std::io::Result<Listener> {
        // Bound synchronously so a failure is known now (and the address usable at once).
        let socket = std::net::TcpListener::bind(address)?;
        socket.set_nonblocking(true)?;
        let listener = TcpListener::from_std(socket)?;
        let (sender, receiver) = watch::channel(target);
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let Some(port) = *receiver.borrow() else { continue };
                tokio::spawn(async move {
                    match tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await {
                        Ok(mut pod) => {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut pod).await;
                        }
                        Err(error) => tracing::debug!(%address, port, %error, "load balancer: the pod does not answer"),
                    }
                });
            }
        });
        Ok(Listener { address, target: sender, task })
    }
}

impl Simulation {
    /// Gives a served LoadBalancer Service its address and listeners; takes them back from one
    /// that is gone or no longer served.
    pub(in crate::simulation) async fn load_balancer(&mut self, cluster: &Cluster, namespace: &str, name: &str) {
        let key: PodKey = (namespace.to_string(), name.to_string());
        let service = cluster.store.get(SERVICES, namespace, name).map(|s| s.value.clone());
        let Some(service) = service.filter(load_balancers::served) else {
            self.listeners.remove(&key);
            if let Some(ip) = self.load_balancers.remove(&key)
                && let Some(current) = cluster.store.get(SERVICES, namespace, name)
                && load_balancers::held(&current.value) == Some(ip)
            {
                // No longer ours (its type or class changed): clear the address we gave.
                self.write_load_balancer(cluster, &current.value, load_balancers::status(None)).await;
            }
            return;
        };
        let taken: BTreeSet<Ipv4Addr> =
            self.load_balancers.iter().filter(|(other, _)| **other != key).map(|(_, ip)| *ip).collect();
        let held = self.load_balancers.get(&key).copied().or_else(|| load_balancers::held(&service));
        let Some(ip) = load_balancers::allocate(held, &taken) else {
            tracing::warn!(service = %object::describe(&service), "no loopback address is left for a LoadBalancer Service");
            return;
        };
        self.load_balancers.insert(key.clone(), ip);
        if load_balancers::held(&service) != Some(ip) {
            self.write_load_balancer(cluster, &service, load_balancers::status(Some(ip))).await;
        }
        if self.settings.runtime.is_some() {
            self.listen(cluster, &key, &service, ip);
        }
    }

    /// Keeps one listener per TCP port of the Service on its address, each pointing at a ready
    /// pod's port.
    fn listen(&mut self, cluster: &Cluster, key: &PodKey, service: &Value, ip: Ipv4Addr) {
        let pods = match self.services.get(&key.0).and_then(|s| s.get(&key.1)) {
            Some(selector) => {
                cluster.store.list(PODS, Some(&key.0), None, None, |p| selector.matches(object::labels(&p.value))).items
            }
            None => Vec::new(),
        };
        let pods: Vec<&Value> = pods.iter().map(|p| &p.value).collect();
        let forwards = load_balancers::forwards(service, &pods);
        let listeners = self.listeners.entry(key.clone()).or_default();
        // Ports the Service no longer has, or on another address, stop listening.
        listeners.retain(|l| l.address.ip() == ip && forwards.iter().any(|(port, _)| *port == l.address.port()));
        for (port, target) in forwards {
            let address = SocketAddr::from((ip, port));
            match listeners.iter().find(|l| l.address == address) {
                Some(listener) => {
                    listener.target.send_replace(target);
                }
                None => match Listener::bind(address, target) {
                    Ok(listener) => listeners.push(listener),
                    Err(error) => {
                        tracing::warn!(service = %object::describe(service), %address, %error, "load balancer cannot listen")
                    }
                },
            }
        }
    }

    async fn write_load_balancer(&self, cluster: &Cluster, service: &Value, load_balancer: Value) {
        let Some(scope) = scope(cluster, SERVICES, object::namespace(service)) else { return };
        let mut body = scope.view(service.clone());
        if !body.get("status").is_some_and(Value::is_object) {
            body["status"] = json!({});
        }
        body["status"]["loadBalancer"] = load_balancer;
        let options = WriteOptions { field_manager: Some(LB_MANAGER.into()), ..WriteOptions::default() };
        report(cluster.update(&scope, object::name(service), Endpoint::Status, body, &options).await, "Service status");
    }
}
