//! Nodes: each simulated node kept Ready, its Lease renewed.

use crate::simulation::*;

impl Simulation {
    pub(in crate::simulation) fn managed(&self, node: &str) -> bool {
        nodes::simulated_index(node).is_some_and(|index| index < self.settings.nodes)
    }

    pub(in crate::simulation) async fn node(&mut self, cluster: &Cluster, name: &str) -> Option<Duration> {
        if !self.managed(name) {
            return None;
        }
        let stored = cluster.store.get(NODES, "", name)?;
        let node = &stored.value;
        let scope = scope(cluster, NODES, "")?;
        let ready = !nodes::asked_not_ready(node);
        let cidr = self.addresses.pod_cidr(name);
        let mut node = node.clone();
        if let Some(spec) = nodes::spec(&node, &cidr, ready) {
            let mut body = scope.view(node.clone());
            body["spec"] = spec;
            node = report(cluster.update(&scope, name, Endpoint::Main, body, &options()).await, "Node spec")?.object;
        }
        let node = &node;
        let ip = self.addresses.node_ip(name);
        let status = nodes::status(node, ip, &crate::simulation::nodes::default_capacity(), false, &stamp::now());
        write_status(cluster, NODES, node, status).await;
        if cluster.store.get(LEASES, nodes::LEASE_NAMESPACE, name).is_none()
            && let Some(scope) = scope_of(cluster, LEASES, nodes::LEASE_NAMESPACE)
        {
            report(cluster.create(&scope, nodes::lease(node, &nodes::now_micro()), &options()).await, "Lease");
        }
        None
    }

    pub(in crate::simulation) async fn renew_leases(&mut self, cluster: &Cluster) {
        let Some(scope) = scope_of(cluster, LEASES, nodes::LEASE_NAMESPACE) else { return };
        let now = nodes::now_micro();
        for index in 0..self.settings.nodes {
            let name = format!("{}{index}", nodes::NODE_PREFIX);
            let Some(node) = cluster.store.get(NODES, "", &name) else { continue };
            if nodes::asked_not_ready(&node.value) {
                continue;
            }
            match cluster.store.get(LEASES, nodes::LEASE_NAMESPACE, &name) {
                Some(lease) => {
                    let mut body = scope.view(lease.value.clone());
                    body["spec"]["renewTime"] = json!(now);
                    report(cluster.update(&scope, &name, Endpoint::Main, body, &options()).await, "Lease renewal");
                }
                None => {
                    report(cluster.create(&scope, nodes::lease(&node.value, &now), &options()).await, "Lease");
                }
            }
        }
    }
}
