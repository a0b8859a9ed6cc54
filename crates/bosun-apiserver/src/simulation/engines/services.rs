//! Services: Endpoints and EndpointSlices following the selected pods' readiness, and the
//! addresses of LoadBalancer Services ([`super::load_balancers`]).

use crate::simulation::*;

impl Simulation {
    pub(in crate::simulation) async fn service(
        &mut self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> Option<Duration> {
        self.load_balancer(cluster, namespace, name).await;
        let service = cluster.store.get(SERVICES, namespace, name);
        let selector = self.services.get(namespace).and_then(|s| s.get(name));
        let (Some(service), Some(selector)) = (service, selector) else {
            let managed = cluster.store.get(ENDPOINTS, namespace, name).is_some_and(|e| {
                object::labels(&e.value).and_then(|l| l.get("endpoints.kubernetes.io/managed-by")).is_some()
            });
            if managed {
                self.delete(cluster, ENDPOINTS, namespace, name, None).await;
            }
            return None;
        };
        let service = &service.value;
        let pods =
            cluster.store.list(PODS, Some(namespace), None, None, |p| selector.matches(object::labels(&p.value))).items;
        let pods: Vec<&Value> = pods.iter().map(|p| &p.value).collect();
        let wanted = endpoints::endpoints(service, &pods);
        let scope_e = scope(cluster, ENDPOINTS, namespace)?;
        match cluster.store.get(ENDPOINTS, namespace, name) {
            None => {
                report(cluster.create(&scope_e, wanted, &options()).await, "Endpoints");
            }
            Some(current)
                if current.value.get("subsets") != wanted.get("subsets")
                    || object::labels(&current.value) != object::labels(&wanted) =>
            {
                let mut body = scope_e.view(current.value.clone());
                body["metadata"]["labels"] = wanted["metadata"]["labels"].clone();
                match wanted.get("subsets") {
                    Some(subsets) => body["subsets"] = subsets.clone(),
                    None => {
                        body.as_object_mut().map(|b| b.remove("subsets"));
                    }
                }
                report(cluster.update(&scope_e, name, Endpoint::Main, body, &options()).await, "Endpoints");
            }
            Some(_) => {}
        }
        let zones: HashMap<String, String> = cluster
            .store
            .all(NODES)
            .iter()
            .filter_map(|n| {
                let zone = object::labels(&n.value)?.get("topology.kubernetes.io/zone")?.as_str()?.to_string();
                Some((object::name(&n.value).to_string(), zone))
            })
            .collect();
        let slice = endpoints::endpoint_slice(service, &pods, |node| zones.get(node).cloned());
        let scope_s = scope(cluster, SLICES, namespace)?;
        let existing = cluster
            .store
            .list(SLICES, Some(namespace), None, None, |s| {
                object::labels(&s.value).and_then(|l| l.get(endpoints::SERVICE_NAME_LABEL)).and_then(Value::as_str)
                    == Some(name)
                    && controllers::controller_of(&s.value).is_some_and(|o| o["uid"] == object::uid(service))
            })
            .items;
        match existing.first() {
            None => {
                report(cluster.create(&scope_s, slice, &options()).await, "EndpointSlice");
            }
            Some(current)
                if current.value.get("endpoints") != slice.get("endpoints")
                    || current.value.get("ports") != slice.get("ports") =>
            {
                let mut body = scope_s.view(current.value.clone());
                body["endpoints"] = slice["endpoints"].clone();
                body["ports"] = slice["ports"].clone();
                report(
                    cluster.update(&scope_s, object::name(&current.value), Endpoint::Main, body, &options()).await,
                    "EndpointSlice",
                );
            }
            Some(_) => {}
        }
        None
    }
}
