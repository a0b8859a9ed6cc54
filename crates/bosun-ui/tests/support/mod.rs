//! The dashboard's browser tests' world: the embedded API server with simulated workloads,
//! bosun's CRDs and the real Package and Canary controllers; the dashboard served in the test;
//! and Debian's Chromium driven through chromedriver (WebDriver).
// Each test file uses a part of it.
#![allow(dead_code)]

use std::{
    future::Future,
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use bosun_apiserver::{ApiServer, RunningServer};
use bosun_ui::{Authentication, Transport, Ui, UiSettings};
use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use thirtyfour::{ChromiumLikeCapabilities, DesiredCapabilities, WebDriver};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long anything may take before a test gives up.
pub const BOUND: Duration = Duration::from_secs(90);

/// Waits until `check` gives `Some`, within [`BOUND`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {BOUND:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The cluster: the embedded API server with the controllers running in the test.
pub struct Cluster {
    pub server: RunningServer,
    stop: CancellationToken,
    _cache: tempfile::TempDir,
}

impl Cluster {
    /// A server whose simulated containers start `delay` after they are scheduled, with
    /// `users` (name, groups), bosun's CRDs and the Package and Canary controllers.
    pub async fn start(delay: Duration, users: &[(&str, &[&str])]) -> Cluster {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let mut server = ApiServer::in_memory().simulate_workloads(delay);
        for (name, groups) in users {
            server = server.user(name, groups);
        }
        let server = server.start().await.expect("the API server starts");
        bosun_controllers::install::install_crds(&server.client(), "test").await.expect("bosun's CRDs");
        let cache = tempfile::tempdir().expect("cache");
        let stop = CancellationToken::new();
        // The tests' packages are directories of the test's own (a tenant's local source is
        // refused unless allowed).
        let tenancy = bosun_controllers::Tenancy { local_roots: vec![std::env::temp_dir()], ..Default::default() };
        let settings = bosun_controllers::package::Settings {
            stopping: stop.clone(),
            tenancy,
            ..bosun_controllers::package::Settings::new(server.config(), cache.path().to_path_buf())
        };
        let packages = bosun_controllers::package::controller(server.client(), settings);
        let stopped = stop.clone();
        tokio::spawn(packages.run(async move { stopped.cancelled().await }));
        let canaries = bosun_controllers::canary::controller::controller(server.client(), Default::default());
        let stopped = stop.clone();
        tokio::spawn(canaries.run(async move { stopped.cancelled().await }));
        Cluster { server, stop, _cache: cache }
    }

    /// The dashboard as the administrator's kubeconfig (`bosun ui`).
    pub async fn dashboard(&self) -> Dashboard {
        let authentication =
            Authentication::Kubeconfig { client: self.server.client(), user: "kubernetes-admin".into() };
        Dashboard::start(authentication).await
    }

    /// The dashboard with sign-in (`bosun controller --ui-addr`): the server's configuration
    /// without its credentials.
    pub async fn dashboard_with_sign_in(&self) -> Dashboard {
        let mut config = self.server.config();
        config.auth_info = Default::default();
        Dashboard::start(Authentication::Token(Box::new(config))).await
    }

    fn api(&self, kind: &str) -> Api<DynamicObject> {
        let resource = kube::api::ApiResource {
            group: "bosun.dev".into(),
            version: "v1alpha1".into(),
            api_version: "bosun.dev/v1alpha1".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()).replace("canarys", "canaries"),
        };
        Api::namespaced_with(self.server.client(), "default", &resource)
    }

    /// Creates a bosun resource in `default`.
    pub async fn create(&self, kind: &str, name: &str, spec: Value) {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "bosun.dev/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec,
        }))
        .expect("object");
        self.api(kind)
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("create {kind} {name}: {e}"));
    }

    /// A bosun resource of `default`, as JSON.
    pub async fn get(&self, kind: &str, name: &str) -> Value {
        serde_json::to_value(self.api(kind).get(name).await.expect("get")).expect("json")
    }

    /// Merge-patches a bosun resource of `default`.
    pub async fn patch(&self, kind: &str, name: &str, patch: Value) {
        self.api(kind).patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    }

    /// Creates the Package `name` of one ConfigMap (`settings`), reconciled hourly; its
    /// directory lives as long as the value returned.
    pub async fn settings_package(&self, name: &str) -> tempfile::TempDir {
        let config = package_dir(&[("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n")]);
        self.create("Package", name, json!({"source": {"dir": config.path().display().to_string()}, "interval": "1h"}))
            .await;
        config
    }

    /// Lets `user` get Packages and nothing else (a ClusterRole and its binding).
    pub async fn may_only_get_packages(&self, user: &str) {
        let role: k8s_openapi::api::rbac::v1::ClusterRole = serde_json::from_value(json!({
            "metadata": {"name": "package-getter"},
            "rules": [{"apiGroups": ["bosun.dev"], "resources": ["packages"], "verbs": ["get"]}],
        }))
        .expect("role");
        let binding: k8s_openapi::api::rbac::v1::ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": format!("{user}-gets-packages")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "package-getter"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }))
        .expect("binding");
        Api::all(self.server.client()).create(&PostParams::default(), &role).await.expect("role");
        Api::all(self.server.client()).create(&PostParams::default(), &binding).await.expect("binding");
    }

    /// Waits until the Ready condition of `name` has `status`; returns the object.
    pub async fn ready_is(&self, kind: &str, name: &str, status: &str) -> Value {
        eventually(&format!("{kind} {name} Ready={status}"), || async {
            let object = self.get(kind, name).await;
            let conditions =
                object.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
            conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == status).then_some(object)
        })
        .await
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The dashboard served in the test on a free loopback port.
pub struct Dashboard {
    pub url: String,
    stop: CancellationToken,
}

impl Dashboard {
    async fn start(authentication: Authentication) -> Dashboard {
        let settings = UiSettings {
            address: "127.0.0.1:0".parse().expect("address"),
            authentication,
            transport: Transport::Plain,
        };
        let ui = Ui::bind(settings).await.expect("the dashboard listens");
        let url = ui.url().trim_end_matches('/').to_string();
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(ui.run(async move { stopped.cancelled().await }));
        Dashboard { url, stop }
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A package directory of manifests (written to a fresh temporary directory).
pub fn package_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("package dir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

/// A Deployment of one simulated replica.
pub fn deployment(name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - {{name: app, image: example/{name}:1}}\n"
    )
}

/// A chromedriver and the headless Chromium it drives, stopped when dropped.
pub struct Browser {
    pub driver: WebDriver,
    chromedriver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium with a fresh profile, and
    /// flags that keep it off the network (this machine has none: without them Chromium
    /// stalls on refused connections).
    pub async fn start() -> Browser {
        let chromium = bosun_test_tools::require("chromium");
        let chromedriver = bosun_test_tools::require("chromedriver");
        let port = bosun_test_tools::git_server::unused_port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let address = format!("127.0.0.1:{port}");
        eventually("chromedriver listening", || async { TcpStream::connect(&address).ok().map(drop) }).await;
        let profile = tempfile::tempdir().expect("profile");
        let mut capabilities = DesiredCapabilities::chrome();
        capabilities.set_binary(&chromium.display().to_string()).expect("binary");
        for arg in [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,1000",
            &format!("--user-data-dir={}", profile.path().display()),
        ] {
            capabilities.add_arg(arg).expect("argument");
        }
        let driver = WebDriver::new(format!("http://{address}"), capabilities).await.expect("a Chromium session");
        Browser { driver, chromedriver: child, _profile: profile }
    }

    /// Runs `script` in the page and returns its value.
    pub async fn eval(&self, script: &str) -> Value {
        self.driver.execute(script, Vec::new()).await.unwrap_or_else(|e| panic!("{script}: {e}")).json().clone()
    }

    /// The text of the first element matching `selector` (empty when there is none).
    pub async fn text(&self, selector: &str) -> String {
        let script = format!(
            "const e = document.querySelector({}); return e ? e.innerText.replace(/\\s+/g, ' ').trim() : '';",
            json!(selector)
        );
        self.eval(&script).await.as_str().unwrap_or_default().to_string()
    }

    /// An attribute of the first element matching `selector`.
    pub async fn attribute(&self, selector: &str, name: &str) -> Option<String> {
        let script = format!(
            "const e = document.querySelector({}); return e ? e.getAttribute({}) : null;",
            json!(selector),
            json!(name)
        );
        self.eval(&script).await.as_str().map(str::to_string)
    }

    /// Clicks the button (or link) whose text is `text`.
    pub async fn click(&self, text: &str) {
        let script = format!(
            "const e = [...document.querySelectorAll('button, a')].find(e => e.textContent.trim() === {}); if (!e) return false; e.click(); return true;",
            json!(text)
        );
        assert_eq!(
            self.eval(&script).await,
            json!(true),
            "no button {text:?} on {}",
            self.driver.current_url().await.expect("url")
        );
    }

    /// Goes to `url` and waits until the page has loaded.
    pub async fn open(&self, url: &str) {
        self.driver.goto(url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    }

    /// Waits until the page's heading has `wanted` (a new page loaded after a click); on
    /// failure says which page the browser shows instead.
    pub async fn wait_for_heading(&self, wanted: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let heading = self.text("h1").await;
            if heading.contains(wanted) {
                return heading;
            }
            if Instant::now() >= deadline {
                let url = self.driver.current_url().await.map(|u| u.to_string()).unwrap_or_default();
                panic!("a page headed {wanted:?}: not within {BOUND:?}; the browser shows {url} headed {heading:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The system's colour scheme as the page sees it (`prefers-color-scheme`).
    pub async fn prefer(&self, scheme: &str) {
        let features = json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]});
        self.driver.cdp().send_raw("Emulation.setEmulatedMedia", features).await.expect("emulate the colour scheme");
    }

    /// With `BOSUN_UI_SCREENSHOTS=DIR` (relative to the repository), saves the page as
    /// `DIR/NAME-light.png` and `DIR/NAME-dark.png`; without it, nothing (tests do not rewrite
    /// tracked files).
    pub async fn screenshots(&self, name: &str) {
        let Some(dir) = std::env::var_os("BOSUN_UI_SCREENSHOTS") else { return };
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let dir: PathBuf = root.join(dir);
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        for scheme in ["light", "dark"] {
            self.prefer(scheme).await;
            let png = self.driver.screenshot_as_png().await.expect("screenshot");
            std::fs::write(dir.join(format!("{name}-{scheme}.png")), png).expect("write screenshot");
        }
        self.prefer("light").await;
    }
}

impl Browser {
    /// Ends the session (Chromium quits), then chromedriver.
    pub async fn close(self) {
        let _ = self.driver.clone().quit().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // After a failed test the session may still run: the Chromium chromedriver started
        // goes first (by its parent's id), then chromedriver.
        let _ = Command::new("pkill").args(["-P", &self.chromedriver.id().to_string()]).status();
        let _ = self.chromedriver.kill();
        let _ = self.chromedriver.wait();
    }
}
