//! The dashboard without JavaScript: plain HTTP requests, as a browser with scripts off (or
//! `curl`) makes them, against the embedded API server with the real controllers. Every page
//! reads, an action is a confirmation form and a POST, and the security headers and checks hold;
//! the live updates are read as the Server-Sent Events they are.

mod support;

use std::{path::Path, time::Duration};

use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use support::{BOUND, Cluster};

/// A client that does not follow redirects (the tests look at them) and runs no script.
fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

/// GETs `url`: the status, the headers and the body.
async fn get(url: &str, authorization: Option<&str>) -> (StatusCode, header::HeaderMap, String) {
    let mut request = client().get(url);
    if let Some(token) = authorization {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.text().await.expect("body"))
}

/// POSTs the form `fields` to `url` from the dashboard's own origin.
async fn post(
    url: &str,
    origin: &str,
    fields: &[(&str, &str)],
    authorization: Option<&str>,
) -> (StatusCode, header::HeaderMap, String) {
    let body = serde_urlencoded::to_string(fields).expect("form");
    let mut request = client()
        .post(url)
        .header(header::ORIGIN, origin)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body);
    if let Some(token) = authorization {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.text().await.expect("body"))
}

/// The CSRF token of the first form of `html`.
fn csrf(html: &str) -> String {
    let marker = r#"name="csrf" value=""#;
    let start = html.find(marker).unwrap_or_else(|| panic!("no CSRF field in {html}")) + marker.len();
    html[start..].split('"').next().expect("value").to_string()
}

#[tokio::test]
async fn every_page_reads_without_javascript_and_an_action_is_a_form_post() {
    let cluster = Cluster::start(Duration::from_millis(100), &[]).await;
    let _config = cluster.settings_package("web").await;
    cluster.ready_is("Package", "web", "True").await;
    let canary = json!({"deployment": {"name": "nginx", "image": "nginx", "version": "1", "replicas": 10, "labels": {"app": "nginx"}}, "steps": [{"setWeight": 30}]});
    cluster.create("Canary", "nginx", canary).await;
    let dashboard = cluster.dashboard().await;
    let url = &dashboard.url;

    let (status, headers, overview) = get(&format!("{url}/"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers[header::CONTENT_TYPE].to_str().expect("type").starts_with("text/html"));
    let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().expect("csp");
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{csp}");
    assert!(
        overview.contains(r#"id="row:packages:default:web""#) && overview.contains(r#"data-state="Ready""#),
        "{overview}"
    );
    assert!(overview.contains(r#"href="/packages/default/web""#), "a deep link to the Package");
    assert!(overview.contains(r#"href="/canaries/default/nginx""#), "a deep link to the Canary");
    // The only scripts are files of the dashboard's own (no inline script to need).
    let scripts = overview.matches("<script").count();
    assert!(scripts >= 1 && scripts == overview.matches("<script src=\"/assets/").count(), "{overview}");

    let (status, _, package) = get(&format!("{url}/packages/default/web"), None).await;
    assert_eq!(status, StatusCode::OK);
    for part in [r#"id="summary""#, r#"id="plan""#, r#"id="tree""#, r#"id="history""#, "ConfigMap/settings", "Suspend…"]
    {
        assert!(package.contains(part), "{part} in {package}");
    }
    let (status, _, canary) = get(&format!("{url}/canaries/default/nginx"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(canary.contains(r#"id="phase""#) && canary.contains("Set weight 30%"), "{canary}");
    let (status, _, yaml) = get(&format!("{url}/yaml/core/v1/ConfigMap/default/settings"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(yaml.contains("kind: ConfigMap"), "{yaml}");
    let (status, _, missing) = get(&format!("{url}/packages/default/nothing"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");

    // Suspend: the confirmation is a page with a form; posting it patches the Package and
    // redirects back to its page.
    let (status, _, confirm) = get(&format!("{url}/packages/default/web/actions/suspend"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(confirm.contains("Suspend Package default/web?"), "{confirm}");
    let token = csrf(&confirm);
    let action = format!("{url}/packages/default/web/actions/suspend");
    let (status, _, _) = post(&action, url, &[("csrf", "forged")], None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a forged CSRF token");
    let (status, _, _) = post(&action, "http://evil.example", &[("csrf", &token)], None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a form from another origin");
    assert_eq!(cluster.get("Package", "web").await["spec"]["suspend"], json!(null), "refused forms change nothing");
    let (status, headers, _) = post(&action, url, &[("csrf", &token)], None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/packages/default/web?done=suspend");
    assert_eq!(cluster.get("Package", "web").await["spec"]["suspend"], json!(true));
    let (_, _, suspended) = get(&format!("{url}/packages/default/web?done=suspend"), None).await;
    assert!(suspended.contains("Suspended.") && suspended.contains("Resume…"), "{suspended}");

    // DNS rebinding: a page reached through a foreign name is refused.
    let response = client().get(format!("{url}/")).header(header::HOST, "evil.example").send().await.expect("GET");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn behind_a_proxy_each_request_is_its_user_s_and_a_refusal_names_the_verb_and_resource() {
    let cluster = Cluster::start(Duration::from_millis(100), &[("viewer", &[])]).await;
    let _config = cluster.settings_package("web").await;
    cluster.may_only_get_packages("viewer").await;
    let dashboard = cluster.dashboard_with_sign_in().await;
    let url = &dashboard.url;

    // No credentials: the sign-in page, never the kubeconfig's identity.
    let (status, headers, _) = get(&format!("{url}/packages/default/web"), None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/login");
    let (status, headers, login) = get(&format!("{url}/login"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(login.contains(r#"id="token""#), "{login}");
    let cookie = headers[header::SET_COOKIE].to_str().expect("cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");

    // The proxy's Authorization header: the viewer reads the Package, and is refused its suspend
    // with the API server's reason.
    let token = cluster.server.user_token("viewer").expect("token").to_string();
    let (status, _, package) = get(&format!("{url}/packages/default/web"), Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{package}");
    assert!(package.contains("viewer"), "the page says who is looking");
    let (_, _, confirm) = get(&format!("{url}/packages/default/web/actions/suspend"), Some(&token)).await;
    let form = csrf(&confirm);
    let action = format!("{url}/packages/default/web/actions/suspend");
    let (status, _, refused) = post(&action, url, &[("csrf", &form)], Some(&token)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(
        refused.contains(
            r#"User &quot;viewer&quot; cannot patch resource &quot;packages&quot; in API group &quot;bosun.dev&quot;"#
        ),
        "{refused}"
    );
    assert_eq!(cluster.get("Package", "web").await["spec"]["suspend"], json!(null), "unchanged");
    // The viewer may not list Canaries: the overview says so instead of showing none.
    let (status, _, overview) = get(&format!("{url}/"), Some(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(overview.contains("forbidden"), "{overview}");
}

#[tokio::test]
async fn a_secret_applied_with_kubectl_shows_no_value_in_its_yaml_not_even_in_the_last_applied_annotation() {
    let cluster = Cluster::start(Duration::from_millis(100), &[]).await;
    let kubeconfig = tempfile::NamedTempFile::new().expect("kubeconfig");
    cluster.server.write_kubeconfig(kubeconfig.path()).expect("write kubeconfig");
    // kubectl's client-side apply keeps the whole manifest, stringData in plain text, in
    // kubectl.kubernetes.io/last-applied-configuration.
    let manifest = "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: default}\n\
                    stringData: {password: hunter2-plain}\ndata: {token: czNjcmV0LWI2NA==}\n";
    // Asynchronously: the API server answers kubectl from this test's runtime.
    let mut kubectl = tokio::process::Command::new(bosun_test_tools::require("kubectl"))
        .args(["apply", "-f", "-"])
        .env("KUBECONFIG", kubeconfig.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl");
    use tokio::io::AsyncWriteExt;
    let mut stdin = kubectl.stdin.take().expect("stdin");
    stdin.write_all(manifest.as_bytes()).await.expect("manifest");
    drop(stdin);
    let output = kubectl.wait_with_output().await.expect("kubectl ran");
    assert!(output.status.success(), "kubectl apply: {}", String::from_utf8_lossy(&output.stderr));
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::default_namespaced(cluster.server.client());
    let applied = secrets.get("db").await.expect("the Secret");
    let annotations = applied.metadata.annotations.unwrap_or_default();
    let last = annotations.get("kubectl.kubernetes.io/last-applied-configuration").expect("kubectl's annotation");
    assert!(last.contains("hunter2-plain"), "the annotation holds the plain text: {last}");

    let dashboard = cluster.dashboard().await;
    let (status, _, page) = get(&format!("{}/yaml/core/v1/Secret/default/db", dashboard.url), None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    for value in ["hunter2-plain", "aHVudGVyMi1wbGFpbg==", "czNjcmV0LWI2NA==", "s3cret-b64"] {
        assert!(!page.contains(value), "{value} shown: {page}");
    }
    assert!(page.contains("last-applied-configuration") && page.contains("password"), "keys stay: {page}");
    assert!(
        page.contains("The Secret&#39;s values are not shown.") || page.contains("The Secret's values are not shown.")
    );
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

const WIDGET_OPERATOR: &str = r#"
apiVersion: bosun.dev/v1alpha1
kind: Operator
metadata: {name: widgets}
spec:
  watch: {apiVersion: example.com/v1, kind: Widget}
"#;

/// One ConfigMap per Widget.
const WIDGET_PROGRAM: &str = r#"
local widget = import 'generic-operator/config';
[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: widget.metadata.name + '-settings'}, data: {}}]
"#;

#[tokio::test]
async fn operator_fleet_and_alert_pages_show_their_objects() {
    use bosun_controllers::operator::{
        Definition,
        controller::{self as operator, Settings},
    };
    let cluster = Cluster::start(Duration::from_millis(100), &[]).await;
    let client = cluster.server.client();
    let crd = bosun_core::yaml::parse_document(WIDGET_CRD, "crd.yaml").expect("crd");
    let crds: kube::Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        kube::Api::all(client.clone());
    crds.create(&Default::default(), &crd).await.expect("the Widget CRD");
    // The operator runs in the test; its resource is what the page reads.
    let dir = support::package_dir(&[("main.jsonnet", WIDGET_PROGRAM), ("operator.yaml", WIDGET_OPERATOR)]);
    let definition = Definition::load(dir.path()).expect("operator.yaml");
    let controller = operator::controller(client.clone(), definition, Settings::default()).await.expect("operator");
    tokio::spawn(controller.run(std::future::pending::<()>()));
    let spec = json!({"source": {"dir": dir.path().display().to_string()},
        "watch": {"apiVersion": "example.com/v1", "kind": "Widget"}});
    cluster.create("Operator", "widgets", spec).await;
    let widgets: kube::Api<kube::api::DynamicObject> = kube::Api::default_namespaced_with(
        client.clone(),
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        ),
    );
    let widget = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "blue"}, "spec": {}}))
    .expect("widget");
    widgets.create(&Default::default(), &widget).await.expect("a Widget");
    // A Fleet of two Packages, its controller running in the test.
    let cache = tempfile::tempdir().expect("cache");
    let fleets = bosun_controllers::fleet::controller::controller(
        client.clone(),
        bosun_controllers::fleet::controller::Settings {
            fetcher: bosun::source::Fetcher::new(cache.path().to_path_buf()),
            namespace: None,
            selector: None,
            metrics: None,
            no_cross_namespace_refs: false,
        },
    );
    tokio::spawn(fleets.run(std::future::pending::<()>()));
    let manifests =
        support::package_dir(&[("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${app}-settings\n")]);
    let fleet = json!({
        "generators": [{"list": {"elements": [{"app": "api"}, {"app": "ui"}]}}],
        "template": {"metadata": {"name": "{{app}}"},
            "spec": {"source": {"dir": manifests.path().display().to_string()}, "substitute": {"app": "{{app}}"}}},
    });
    cluster.create("Fleet", "apps", fleet).await;
    let alert = json!({"provider": {"type": "generic", "address": "http://127.0.0.1:9/hook"},
        "eventSources": [{"kind": "Package", "name": "*"}], "eventSeverity": "error"});
    cluster.create("Alert", "on-call", alert).await;
    let dashboard = cluster.dashboard().await;
    let url = &dashboard.url;

    // The watched object with the child its inventory (in its status) names.
    let page = support::eventually("the Widget's child on the Operator's page", || async {
        let (status, _, page) = get(&format!("{url}/operators/default/widgets"), None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        page.contains("ConfigMap/blue-settings").then_some(page)
    })
    .await;
    assert!(page.contains("<h1>Operator widgets</h1>") && page.contains("Widget/blue"), "{page}");
    assert!(page.contains(r#"href="/yaml/core/v1/ConfigMap/default/blue-settings""#), "a link to the child's YAML");

    let (status, _, alert) = get(&format!("{url}/alerts/default/on-call"), None).await;
    assert_eq!(status, StatusCode::OK, "{alert}");
    assert!(alert.contains("<h1>Alert on-call</h1>") && alert.contains("error"), "{alert}");
    let fleet = support::eventually("the Fleet's summary on its page", || async {
        let (status, _, page) = get(&format!("{url}/fleets/default/apps"), None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        page.contains("2/2 Ready").then_some(page)
    })
    .await;
    assert!(fleet.contains("<h1>Fleet apps</h1>"), "{fleet}");
    // The Packages it generated, each linked to its page, not the status' raw JSON.
    for package in ["api", "ui"] {
        assert!(
            fleet.contains(&format!(r#"<a href="/packages/default/{package}">{package}</a>"#)),
            "{package}: {fleet}"
        );
    }
    assert!(!fleet.contains(r#"{"name":"api""#), "raw JSON of the status: {fleet}");
    assert!(fleet.contains(r#"<a href="/#fleets">Fleets</a>"#), "the Fleets in the navigation: {fleet}");
    let (_, _, overview) = get(&format!("{url}/"), None).await;
    for link in [
        r#"href="/operators/default/widgets""#,
        r#"href="/alerts/default/on-call""#,
        r#"href="/fleets/default/apps""#,
        r#"href="/packages/default/api""#,
    ] {
        assert!(overview.contains(link), "{link} on the overview: {overview}");
    }
}

/// Applies the package in `dir` as `bosun apply DIR` does (no Package resource: its inventory
/// in a ConfigMap), with the `wait` and `prune` its `bosun.yaml` asks for.
async fn apply_with_the_cli(client: &kube::Client, dir: &Path) {
    use bosun::{apply::Options, package::Package, pipeline, report::Silent};
    let package = Package::load(dir).expect("the package");
    let render = pipeline::RenderOptions { default_namespace: Some("default".into()), ..Default::default() };
    let rendered = pipeline::render(&package, &render, Some(client)).await.expect("rendered");
    let options = Options {
        wait: package.spec.wait == Some(true),
        prune: package.spec.prune == Some(true),
        timeout: BOUND,
        ..Options::default()
    };
    let applied = pipeline::apply(client, &package, &rendered, "default", &options, &Silent).await.expect("applied");
    assert!(applied.report.succeeded(), "{}", applied.report.table());
}

/// The row `id` of a page: from its `<tr` to its `</tr>`.
fn table_row<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!(r#"<tr id="{id}""#)).unwrap_or_else(|| panic!("no row {id} in {html}"));
    let end = html[start..].find("</tr>").expect("the row ends") + start;
    &html[start..end]
}

/// A page's Server-Sent Events, read as they come.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn open(url: &str) -> Events {
        let response = client().get(url).send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"));
        assert_eq!(response.status(), StatusCode::OK);
        Events { response, buffer: String::new() }
    }

    /// The html of the part `id` of the first update (from now) that has one for which
    /// `wanted` holds.
    async fn part(&mut self, id: &str, wanted: impl Fn(&str) -> bool) -> String {
        let found = tokio::time::timeout(BOUND, async {
            loop {
                while let Some(end) = self.buffer.find("\n\n") {
                    let event: String = self.buffer.drain(..end + 2).collect();
                    let Some(data) = event.strip_prefix("event: update\ndata: ") else { continue };
                    let update: Value = serde_json::from_str(data.trim_end()).expect("an update is JSON");
                    let parts = update["replace"].as_array().cloned().unwrap_or_default();
                    let html = parts.iter().find(|p| p["id"] == id).and_then(|p| p["html"].as_str());
                    if let Some(html) = html.filter(|html| wanted(html)) {
                        return html.to_string();
                    }
                }
                let chunk = self.response.chunk().await.expect("the stream").expect("the stream goes on");
                self.buffer.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("no update of {id} as wanted within {BOUND:?}"))
    }
}

#[tokio::test]
async fn packages_applied_by_the_cli_are_listed_read_only_with_their_objects_health_live() {
    let cluster = Cluster::start(Duration::from_millis(100), &[]).await;
    let client = cluster.server.client();
    // `bosun dev examples/quickstart` and a package with a Secret, both applied by the CLI.
    let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart");
    apply_with_the_cli(&client, &quickstart).await;
    let credentials = support::package_dir(&[
        ("bosun.yaml", "apiVersion: bosun.dev/v1alpha1\nkind: Package\nmetadata: {name: credentials}\nspec: {}\n"),
        ("secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: hunter2-cli}\n"),
    ]);
    apply_with_the_cli(&client, credentials.path()).await;
    let dashboard = cluster.dashboard().await;
    let url = &dashboard.url;

    // Among the Packages, marked as the CLI's, linked to their own pages, counted.
    let (status, _, overview) = get(&format!("{url}/"), None).await;
    assert_eq!(status, StatusCode::OK);
    let row = table_row(&overview, "row:inventories:default:quickstart");
    assert!(row.contains(r#"data-state="Ready""#), "the Deployment is available: {row}");
    assert!(row.contains(r#"href="/inventories/default/quickstart""#) && row.contains("badge cli"), "{row}");
    assert!(row.contains("applied by bosun apply · 4 objects") && row.contains("all 4 objects healthy"), "{row}");
    assert!(overview.contains(r#"id="row:inventories:default:credentials""#), "{overview}");
    let counts = &overview[overview.find(r#"id="counts:packages""#).expect("the Packages' counts")..];
    assert!(counts.contains(r#"Ready</span> <data class="count" value="2">"#), "{counts}");

    // Its page: each object, its health judged live, its YAML linked; no action.
    let (status, _, page) = get(&format!("{url}/inventories/default/quickstart"), None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    for object in [
        "/yaml/core/v1/Namespace/_/quickstart",
        "/yaml/core/v1/ConfigMap/quickstart/web-settings",
        "/yaml/apps/v1/Deployment/quickstart/web",
        "/yaml/core/v1/Service/quickstart/web",
    ] {
        let link = format!(r#"<a href="{object}">"#);
        let leaf = page.find(&link).map(|at| &page[page[..at].rfind("<li").expect("its item")..at]);
        assert!(leaf.is_some_and(|leaf| leaf.contains("badge ready")), "{object} healthy on {page}");
    }
    assert!(page.contains("re-run <code>bosun apply</code>"), "why it is read-only: {page}");
    assert!(!page.contains("<form") && !page.contains("/actions/"), "no action: {page}");
    for (path, why) in [
        ("/inventories/default/quickstart/actions/suspend", "no action for a package the CLI applied"),
        ("/packages/default/quickstart", "no Package resource of that name"),
        ("/inventories/default/nothing", "no such inventory"),
    ] {
        let (status, _, _) = get(&format!("{url}{path}"), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {why}");
    }
    // The Secret is listed; its YAML, one click away, masks its values.
    let (_, _, page) = get(&format!("{url}/inventories/default/credentials"), None).await;
    assert!(page.contains(r#"href="/yaml/core/v1/Secret/default/db""#), "{page}");
    let (status, _, yaml) = get(&format!("{url}/yaml/core/v1/Secret/default/db"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(yaml.contains("password") && !yaml.contains("hunter2-cli") && !yaml.contains("aHVudGVyMi1jbGk="), "{yaml}");

    // Live: an object deleted behind the CLI's back fails the package, on its page and its row.
    let mut on_page = Events::open(&format!("{url}/live/inventories/default/quickstart")).await;
    let tree = on_page.part("tree", |_| true).await;
    assert!(tree.contains("/yaml/core/v1/Service/quickstart/web"), "{tree}");
    let mut on_overview = Events::open(&format!("{url}/live/overview")).await;
    let row = on_overview.part("row:inventories:default:quickstart", |_| true).await;
    assert!(row.contains(r#"data-state="Ready""#), "{row}");
    let services: kube::Api<k8s_openapi::api::core::v1::Service> = kube::Api::namespaced(client, "quickstart");
    services.delete("web", &Default::default()).await.expect("the Service deleted");
    let summary = on_page.part("summary", |html| html.contains("gone since it was applied")).await;
    assert!(summary.contains("Service/quickstart/web: gone since it was applied"), "{summary}");
    let row = on_overview.part("row:inventories:default:quickstart", |html| html.contains("Failed")).await;
    assert!(row.contains(r#"data-state="Failed""#), "{row}");
}
