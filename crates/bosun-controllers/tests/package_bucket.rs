//! The `Package` controller with a bucket source on a real S3-compatible server (moto's, from
//! PyPI, run on loopback), behind a counting proxy: objects added, changed and removed are
//! rolled out; only changed objects are downloaded; S3 errors are conditions.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{Method, StatusCode, Uri},
    response::{IntoResponse, Response},
};
use bosun_test_tools::moto::{ACCESS_KEY, Moto, SECRET_KEY, Store};
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{Api, api::PostParams};
use serde_json::json;
use tokio::time::Instant;

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

/// Forwards to moto and records the object downloads (GETs of a key, not listings).
#[derive(Clone)]
struct Proxy {
    target: String,
    downloads: Arc<Mutex<Vec<String>>>,
    http: reqwest::Client,
}

async fn forward(State(proxy): State<Proxy>, method: Method, uri: Uri, body: Bytes) -> Response {
    let path_and_query = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let is_listing = uri.query().is_some_and(|q| q.contains("list-type"));
    if method == Method::GET && !is_listing {
        proxy.downloads.lock().expect("lock").push(uri.path().to_string());
    }
    let url = format!("{}{path_and_query}", proxy.target);
    let response = match proxy.http.request(method, url).body(body).send().await {
        Ok(response) => response,
        Err(error) => return (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
    };
    let status = response.status();
    (status, response.bytes().await.unwrap_or_default()).into_response()
}

impl Proxy {
    async fn start(moto: &Moto) -> (Proxy, String) {
        let proxy = Proxy { target: moto.base.clone(), downloads: Arc::default(), http: reqwest::Client::new() };
        let router = Router::new().fallback(forward).with_state(proxy.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, router).await });
        (proxy, base)
    }

    fn take(&self) -> Vec<String> {
        let mut downloads = std::mem::take(&mut *self.downloads.lock().expect("lock"));
        downloads.sort();
        downloads
    }
}

fn revision(package: &bosun_api::package::PackageResource) -> String {
    package.status.as_ref().and_then(|s| s.last_applied_revision.clone()).unwrap_or_default()
}

#[tokio::test]
async fn bucket_objects_are_rolled_out_and_only_changed_ones_downloaded() {
    let h = start().await;
    let moto = Moto::start();
    let store = Store::create(&moto, "fleet").await;
    store.put("apps/web/a.yaml", &configmap("a", "1")).await;
    store.put("apps/web/b.yaml", &configmap("b", "1")).await;
    store.put("other/x.yaml", &configmap("x", "1")).await;
    let (proxy, endpoint) = Proxy::start(&moto).await;

    let secrets: Api<Secret> = Api::default_namespaced(h.server.client());
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "bucket-keys"},
        "data": {"accesskey": ByteString(ACCESS_KEY.into()), "secretkey": ByteString(SECRET_KEY.into())},
    }))
    .expect("secret");
    secrets.create(&PostParams::default(), &secret).await.expect("secret");
    let spec = json!({
        "source": {"bucket": {"endpoint": endpoint, "bucket": "fleet", "prefix": "apps/web/", "secretRef": {"name": "bucket-keys"}}},
        "render": {"files": {}},
        "interval": "1s",
    });
    create(&h, "web", spec).await;
    let first = wait_ready(&h, "web", |status, _, _| status == "True").await;
    assert!(revision(&first).starts_with("sha256:"), "{}", revision(&first));
    assert_eq!(value(&h, "a").await.as_deref(), Some("1"));
    assert_eq!(value(&h, "b").await.as_deref(), Some("1"));
    assert_eq!(value(&h, "x").await, None, "outside the prefix");
    assert_eq!(proxy.take(), ["/fleet/apps/web/a.yaml", "/fleet/apps/web/b.yaml"]);

    // Resyncs list the bucket and download nothing.
    let seen = reconciles(&h);
    let deadline = Instant::now() + BOUND;
    while reconciles(&h) < seen + 2 {
        assert!(Instant::now() < deadline, "no resync");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(proxy.take().is_empty(), "an unchanged bucket downloaded objects");

    // Changed, added, removed: only b and c are downloaded; a is pruned.
    store.put("apps/web/b.yaml", &configmap("b", "2")).await;
    store.put("apps/web/c.yaml", &configmap("c", "1")).await;
    store.delete("apps/web/a.yaml").await;
    let deadline = Instant::now() + BOUND;
    while value(&h, "c").await.is_none() || value(&h, "a").await.is_some() {
        assert!(Instant::now() < deadline, "the bucket's changes were not rolled out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(value(&h, "b").await.as_deref(), Some("2"));
    let second = wait_ready(&h, "web", |status, _, _| status == "True").await;
    assert_ne!(revision(&second), revision(&first));
    assert_eq!(proxy.take(), ["/fleet/apps/web/b.yaml", "/fleet/apps/web/c.yaml"]);

    // A bucket that is not there: the S3 error code, as a condition.
    let spec = json!({"source": {"bucket": {"endpoint": endpoint, "bucket": "absent"}}, "render": {"files": {}}});
    create(&h, "absent", spec).await;
    let failed = wait_ready(&h, "absent", |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&failed).expect("condition");
    assert_eq!(reason, "ArtifactFailed", "{message}");
    assert!(message.contains("NoSuchBucket") && message.contains("/absent"), "{message}");
}
