//! A proxy in front of the embedded API server that injects the faults a real network and a
//! loaded control plane produce: answers such as `429` with `Retry-After`, `409` or `500`;
//! connections lost after the request reached the server but before its answer came back;
//! and watch streams cut in the middle. Answers stream through (watches work), and the proxy
//! counts the writes it forwarded and the faults it injected per path.
//!
//! Written on hyper rather than axum because a lost connection needs the connection itself
//! to close without an answer, which an axum handler cannot do.
// Each test file uses a part of it.
#![allow(dead_code)]

use std::{
    collections::BTreeMap,
    convert::Infallible,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use futures::{StreamExt, stream};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::{Frame, Incoming},
    header,
    service::service_fn,
};
use hyper_util::rt::TokioIo;

/// What the proxy does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this status (a Kubernetes `Status` body, `Retry-After: 1`) without
    /// forwarding.
    Answer(StatusCode),
    /// Forward the request, then close the connection without passing the answer on: the
    /// server did the work, the client never hears of it.
    LoseAnswer,
}

/// A request as the fault plan sees it.
#[derive(Debug)]
pub struct Seen<'a> {
    pub method: &'a Method,
    pub path: &'a str,
    /// Whether it is a write (`POST`, `PUT`, `PATCH`, `DELETE`) that is not a dry run.
    pub write: bool,
    /// Whether it is a watch.
    pub watch: bool,
    /// How many requests with this method and path, writes if it is one, else not, came
    /// before it (faulted or forwarded).
    pub attempt: usize,
}

type Plan = dyn Fn(&Seen) -> Option<Fault> + Send + Sync;

/// Counts per `METHOD path`.
pub type Counts = BTreeMap<String, usize>;

#[derive(Clone)]
pub struct FaultProxy {
    /// The proxy's URL, for a kubeconfig.
    pub url: String,
    target: String,
    http: reqwest::Client,
    plan: Arc<Plan>,
    /// How long a watch stream runs before the proxy cuts it, if it does.
    cut_watches_after: Option<Duration>,
    seen: Arc<Mutex<Counts>>,
    forwarded_writes: Arc<Mutex<Counts>>,
    faulted: Arc<Mutex<Counts>>,
    cut_watches: Arc<Mutex<usize>>,
}

impl FaultProxy {
    /// Starts a proxy to `target` (an `http://` URL) that asks `plan` about every request and,
    /// with `cut_watches_after`, cuts every watch stream after that long.
    pub async fn start(
        target: &str,
        cut_watches_after: Option<Duration>,
        plan: impl Fn(&Seen) -> Option<Fault> + Send + Sync + 'static,
    ) -> FaultProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let proxy = FaultProxy {
            url: format!("http://{}", listener.local_addr().expect("address")),
            target: target.trim_end_matches('/').to_string(),
            http: reqwest::Client::new(),
            plan: Arc::new(plan),
            cut_watches_after,
            seen: Arc::default(),
            forwarded_writes: Arc::default(),
            faulted: Arc::default(),
            cut_watches: Arc::default(),
        };
        let serving = proxy.clone();
        tokio::spawn(async move {
            while let Ok((connection, _)) = listener.accept().await {
                let proxy = serving.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| proxy.clone().handle(request));
                    // An error here is a lost answer (by design) or a client going away.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(connection), service)
                        .await;
                });
            }
        });
        proxy
    }

    /// A proxy for a controller's storm: the first three writes to a path ending in
    /// `status` answered `409 Conflict`; for every path `child` picks, the first write `429`
    /// and the second made by the server with its answer lost; every watch cut after 500 ms.
    pub async fn controller_storm(
        target: &str,
        status: &'static str,
        child: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> FaultProxy {
        FaultProxy::start(target, Some(Duration::from_millis(500)), move |seen| {
            if !seen.write {
                return None;
            }
            if seen.path.ends_with(status) && seen.attempt < 3 {
                return Some(Fault::Answer(StatusCode::CONFLICT));
            }
            match (child(seen.path), seen.attempt) {
                (true, 0) => Some(Fault::Answer(StatusCode::TOO_MANY_REQUESTS)),
                (true, 1) => Some(Fault::LoseAnswer),
                _ => None,
            }
        })
        .await
    }

    /// Writes `dir/kubeconfig` (no credentials: the embedded server's default) pointing at
    /// the proxy, creating `dir`, and returns its path.
    pub fn write_kubeconfig(&self, dir: &Path) -> std::path::PathBuf {
        std::fs::create_dir_all(dir).expect("kubeconfig directory");
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{}\"}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u, namespace: default}}\ncurrent-context: x\n",
            self.url
        );
        std::fs::write(&path, text).expect("kubeconfig");
        path
    }

    /// Writes forwarded to the server (`METHOD path`), answered or not.
    pub fn forwarded_writes(&self) -> Counts {
        self.forwarded_writes.lock().expect("lock").clone()
    }

    /// Requests that met a fault (`METHOD path`).
    pub fn faulted(&self) -> Counts {
        self.faulted.lock().expect("lock").clone()
    }

    /// How many watch streams the proxy has cut.
    pub fn cut_watches(&self) -> usize {
        *self.cut_watches.lock().expect("lock")
    }

    async fn handle(
        self,
        request: Request<Incoming>,
    ) -> Result<Response<BoxBody<Bytes, std::io::Error>>, std::io::Error> {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let query = request.uri().query().unwrap_or_default().to_string();
        let key = format!("{method} {path}");
        let write =
            matches!(method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE) && !query.contains("dryRun");
        let attempt = {
            let mut seen = self.seen.lock().expect("lock");
            // Writes and the rest (reads, dry runs) of a path are counted apart.
            let count = seen.entry(format!("{key} {write}")).or_default();
            *count += 1;
            *count - 1
        };
        let watch = query.split('&').any(|pair| pair == "watch=true" || pair == "watch=1");
        let fault = (self.plan)(&Seen { method: &method, path: &path, write, watch, attempt });
        if let Some(Fault::Answer(status)) = fault {
            *self.faulted.lock().expect("lock").entry(key).or_default() += 1;
            let body = format!(
                r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"injected {code}","reason":"Injected","code":{code}}}"#,
                code = status.as_u16()
            );
            let answer = Response::builder()
                .status(status)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::RETRY_AFTER, "1")
                .body(Full::new(Bytes::from(body)).map_err(|never: Infallible| match never {}).boxed())
                .expect("answer");
            return Ok(answer);
        }
        if write {
            *self.forwarded_writes.lock().expect("lock").entry(key.clone()).or_default() += 1;
        }
        let (parts, body) = request.into_parts();
        let body = body.collect().await.map_err(std::io::Error::other)?.to_bytes();
        let url = format!("{}{}", self.target, parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
        let mut forward = self.http.request(method, url).body(body);
        for (name, value) in &parts.headers {
            if name != header::HOST {
                forward = forward.header(name, value);
            }
        }
        let answer = forward.send().await.map_err(std::io::Error::other)?;
        if fault == Some(Fault::LoseAnswer) {
            *self.faulted.lock().expect("lock").entry(key).or_default() += 1;
            return Err(std::io::Error::other("answer lost on purpose"));
        }
        let mut response = Response::builder().status(answer.status());
        for (name, value) in answer.headers() {
            response = response.header(name, value);
        }
        let cut = self
            .cut_watches_after
            .filter(|_| watch)
            .map(|after| (tokio::time::Instant::now() + after, self.cut_watches.clone()));
        let chunks = stream::unfold((answer, cut), |(mut answer, cut)| async move {
            let next = match &cut {
                Some((deadline, _)) => match tokio::time::timeout_at(*deadline, answer.chunk()).await {
                    Ok(next) => next,
                    Err(_) => {
                        if let Some((_, count)) = &cut {
                            *count.lock().expect("lock") += 1;
                        }
                        return Some((Err(std::io::Error::other("watch cut on purpose")), (answer, None)));
                    }
                },
                None => answer.chunk().await,
            };
            match next {
                Ok(Some(bytes)) => Some((Ok(Frame::data(bytes)), (answer, cut))),
                Ok(None) => None,
                Err(error) => Some((Err(std::io::Error::other(error)), (answer, cut))),
            }
        });
        // After a cut (an error), the stream must end: hyper closes the connection on the error.
        let chunks = chunks.scan(false, |ended, item| {
            let next = (!*ended).then(|| {
                *ended = item.is_err();
                item
            });
            std::future::ready(next)
        });
        Ok(response.body(BoxBody::new(StreamBody::new(chunks))).expect("response"))
    }
}
