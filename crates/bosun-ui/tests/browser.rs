//! The dashboard in a real browser: Debian's Chromium, headless, driven over WebDriver, against
//! the embedded API server with simulated workloads and the real Package and Canary
//! controllers. With `BOSUN_UI_SCREENSHOTS=docs/ui` the tests save the screenshots of
//! docs/ui.md (light and dark).

mod support;

use std::{
    cell::{Cell, RefCell},
    time::Duration,
};

use serde_json::{Value, json};
use support::{Browser, Cluster, deployment, eventually, package_dir};
use thirtyfour::Key;

/// Whether `seen` has `wanted` in this order (other values between).
fn in_order(seen: &[String], wanted: &[&str]) -> bool {
    let mut wanted = wanted.iter().peekable();
    for value in seen {
        if wanted.peek().is_some_and(|w| *w == value) {
            wanted.next();
        }
    }
    wanted.peek().is_none()
}

#[tokio::test]
async fn the_overview_shows_each_package_in_its_state_and_a_rollout_progresses_without_reload() {
    let cluster = Cluster::start(Duration::from_millis(1500), &[]).await;
    let config = package_dir(&[(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n",
    )]);
    let dir = config.path().display().to_string();
    cluster.create("Package", "ready", json!({"source": {"dir": dir}, "interval": "1h"})).await;
    cluster.create("Package", "paused", json!({"source": {"dir": dir}, "suspend": true})).await;
    cluster
        .create("Package", "broken", json!({"source": {"dir": "/nonexistent/bosun-ui-test"}, "retryInterval": "1h"}))
        .await;
    cluster.ready_is("Package", "ready", "True").await;
    cluster.ready_is("Package", "broken", "False").await;

    let dashboard = cluster.dashboard().await;
    let browser = Browser::start().await;
    browser.open(&format!("{}/", dashboard.url)).await;
    let state = |name: &str| format!("tr[id='row:packages:default:{name}']");
    for (name, expected) in [("ready", "Ready"), ("paused", "Suspended"), ("broken", "Failed")] {
        assert_eq!(browser.attribute(&state(name), "data-state").await.as_deref(), Some(expected), "{name}");
    }
    assert!(browser.text(&state("broken")).await.contains("/nonexistent/bosun-ui-test"), "the failure says why");
    let counts = browser.text("ul[id='counts:packages']").await;
    assert_eq!(counts, "✔ Ready 1 ◎ Progressing 0 ✗ Failed 1 ‖ Suspended 1", "{counts}");
    // Filters narrow the list (server-side, no script needed).
    browser.open(&format!("{}/?q=brok", dashboard.url)).await;
    assert!(browser.attribute(&state("broken"), "data-state").await.is_some());
    assert!(browser.attribute(&state("ready"), "data-state").await.is_none(), "filtered out");

    // A rollout of two groups (the second of two steps), each waiting for a Deployment.
    let app = package_dir(&[
        ("db.yaml", &deployment("db")),
        ("api.yaml", &deployment("api")),
        ("web.yaml", &deployment("web")),
    ]);
    let rollout = json!({"groups": [
        {"name": "database", "steps": [{"object": "db.yaml"}]},
        {"name": "app", "steps": [{"object": "api.yaml"}, {"object": "web.yaml"}]},
    ]});
    cluster
        .create(
            "Package",
            "shop",
            json!({"source": {"dir": app.path().display().to_string()}, "rollout": rollout, "interval": "1h"}),
        )
        .await;
    browser.open(&format!("{}/packages/default/shop", dashboard.url)).await;
    browser.eval("document.body.dataset.loaded = 'once'; return true;").await;
    let seen: RefCell<Vec<String>> = RefCell::default();
    eventually("the rollout succeeds on screen", || async {
        let progress = browser.text("#progress").await;
        let mut seen = seen.borrow_mut();
        if seen.last() != Some(&progress) {
            seen.push(progress.clone());
        }
        progress.starts_with("Succeeded").then_some(())
    })
    .await;
    let seen = seen.into_inner();
    assert_eq!(browser.eval("return document.body.dataset.loaded;").await, json!("once"), "the page was not reloaded");
    let steps: Vec<&str> = seen.iter().map(String::as_str).collect();
    assert!(
        seen.iter().any(|s| s.contains("group 1 of 2 (database)"))
            && seen.iter().any(|s| s.contains("group 2 of 2 (app), step 2 of 2")),
        "the steps as they came: {steps:?}"
    );
    // The tree: every Deployment with its health and a link to its YAML.
    let tree = eventually("the tree shows every Deployment ready", || async {
        let tree = browser.text("#tree").await;
        (tree.matches("Ready").count() >= 3).then_some(tree)
    })
    .await;
    for name in ["db", "api", "web"] {
        assert!(tree.contains(&format!("Deployment/{name}")), "{tree}");
    }
    assert_eq!(browser.attribute("#tree a", "href").await.as_deref(), Some("/yaml/apps/v1/Deployment/default/db"));
    assert!(browser.text("#plan").await.contains("Apply web.yaml"), "the plan's steps");
    browser.screenshots("package").await;
    browser.click("Deployment/db").await;
    browser.wait_for_heading("Deployment/default/db").await;
    assert!(browser.text("pre.yaml").await.contains("kind: Deployment"));

    browser.open(&format!("{}/", dashboard.url)).await;
    assert_eq!(browser.attribute(&state("shop"), "data-state").await.as_deref(), Some("Ready"));
    browser.screenshots("overview").await;
    browser.close().await;
}

/// A Canary of 10 replicas at version 1, Healthy.
async fn healthy_canary(cluster: &Cluster, steps: Value) {
    let spec = json!({"deployment": {"name": "nginx", "image": "nginx", "version": "1", "replicas": 10, "labels": {"app": "nginx"}}, "steps": steps});
    cluster.create("Canary", "nginx", spec).await;
    eventually("the canary is healthy", || async {
        (cluster.get("Canary", "nginx").await["status"]["phase"] == "Healthy").then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_canary_s_bars_move_through_its_split_and_promote_ends_its_pause() {
    let cluster = Cluster::start(Duration::from_millis(100), &[]).await;
    let steps =
        json!([{"percent": 10, "sleep": 2}, {"percent": 30, "sleep": 2}, {"percent": 60, "sleep": 2}, {"pause": {}}]);
    healthy_canary(&cluster, steps).await;
    let dashboard = cluster.dashboard().await;
    let browser = Browser::start().await;
    browser.open(&format!("{}/canaries/default/nginx", dashboard.url)).await;
    assert_eq!(browser.attribute("p.split", "data-split").await.as_deref(), Some("10/0"));
    cluster.patch("Canary", "nginx", json!({"spec": {"deployment": {"version": "2"}}})).await;
    let seen: RefCell<Vec<String>> = RefCell::default();
    let shot = Cell::new(false);
    eventually("the canary pauses at 60%", || async {
        let split = browser.attribute("p.split", "data-split").await.unwrap_or_default();
        if seen.borrow().last() != Some(&split) {
            seen.borrow_mut().push(split.clone());
        }
        if split == "7/3" && !shot.replace(true) {
            browser.screenshots("canary").await;
        }
        (split == "4/6" && browser.text("#phase").await == "Paused").then_some(())
    })
    .await;
    let seen = seen.into_inner();
    assert!(in_order(&seen, &["9/1", "7/3", "4/6"]), "the bars moved as {seen:?}");
    let steps = browser.text("#steps").await;
    assert!(
        steps.contains("Set weight 30%, then wait 2s")
            && steps.contains("7/3")
            && steps.contains("Pause until promoted"),
        "{steps}"
    );

    // Promote: the confirmation, then the annotation the CLI sets, handled by the controller.
    browser.click("Promote…").await;
    let heading = browser.wait_for_heading("Promote Canary default/nginx?").await;
    assert!(
        browser.text("main").await.contains("bosun.dev/promote"),
        "the confirmation says what it writes: {heading}"
    );
    browser.click("Promote").await;
    browser.wait_for_heading("Canary nginx").await;
    assert!(browser.text("p.notice").await.contains("Promotion requested"));
    // Promoted past its last step, version 2 becomes the stable one with every replica.
    eventually("the controller promotes version 2", || async {
        let promoted =
            browser.text("#phase").await == "Healthy" && browser.text("#summary").await.contains("Stable version 2");
        (promoted && browser.attribute("p.split", "data-split").await.as_deref() == Some("10/0")).then_some(())
    })
    .await;
    let canary = cluster.get("Canary", "nginx").await;
    assert!(canary["metadata"]["annotations"]["bosun.dev/promote"].is_string(), "{canary}");
    browser.close().await;
}

#[tokio::test]
async fn suspend_and_resume_change_the_package_and_a_reader_is_refused_with_the_api_server_s_reason() {
    let cluster = Cluster::start(Duration::from_millis(100), &[("alice", &["system:masters"]), ("viewer", &[])]).await;
    let _config = cluster.settings_package("web").await;
    cluster.ready_is("Package", "web", "True").await;
    cluster.may_only_get_packages("viewer").await;

    let dashboard = cluster.dashboard_with_sign_in().await;
    let browser = Browser::start().await;
    let sign_in = |user: &'static str| {
        let (browser, cluster, url) = (&browser, &cluster, dashboard.url.clone());
        async move {
            browser.open(&format!("{url}/packages/default/web")).await;
            browser.wait_for_heading("Sign in").await;
            let token = cluster.server.user_token(user).expect("token").to_string();
            let field = browser.driver.find(thirtyfour::By::Id("token")).await.expect("token field");
            field.send_keys(token).await.expect("type the token");
            browser.click("Sign in").await;
            browser.wait_for_heading("Overview").await;
            assert!(browser.text(".who").await.contains(user), "signed in as {user}");
            assert!(
                !browser.driver.current_url().await.expect("url").as_str().contains("token"),
                "no token in the URL"
            );
        }
    };
    sign_in("alice").await;
    browser.open(&format!("{}/packages/default/web", dashboard.url)).await;
    browser.click("Suspend…").await;
    browser.wait_for_heading("Suspend Package default/web?").await;
    browser.screenshots("confirm").await;
    browser.click("Suspend").await;
    browser.wait_for_heading("Package web").await;
    assert_eq!(browser.text("p.notice").await, "Suspended.");
    assert_eq!(cluster.get("Package", "web").await["spec"]["suspend"], json!(true));
    assert!(browser.text("#summary").await.contains("Suspended"));
    browser.click("Resume…").await;
    browser.wait_for_heading("Resume Package default/web?").await;
    browser.click("Resume").await;
    browser.wait_for_heading("Package web").await;
    assert_eq!(cluster.get("Package", "web").await["spec"]["suspend"], json!(false));
    browser.click("Sign out").await;
    browser.wait_for_heading("Sign in").await;

    // The viewer sees the Package, and the API server's refusal when pressing a button.
    sign_in("viewer").await;
    browser.open(&format!("{}/packages/default/web", dashboard.url)).await;
    browser.wait_for_heading("Package web").await;
    browser.click("Suspend…").await;
    browser.wait_for_heading("Suspend Package default/web?").await;
    browser.click("Suspend").await;
    browser.wait_for_heading("refused").await;
    let reason = browser.text("p.notice").await;
    assert!(
        reason.contains(r#"403 packages.bosun.dev "web" is forbidden: User "viewer" cannot patch resource "packages" in API group "bosun.dev" in the namespace "default""#),
        "{reason}"
    );
    browser.screenshots("refused").await;
    assert_eq!(cluster.get("Package", "web").await["spec"]["suspend"], json!(false), "unchanged");
    browser.close().await;
}

/// The focused element, as its tag and text (`A Skip to content`); empty for none.
async fn focused(browser: &Browser) -> String {
    let script = "const e = document.activeElement; return !e || e === document.body ? '' : e.tagName + ' ' + e.textContent.replace(/\\s+/g, ' ').trim();";
    browser.eval(script).await.as_str().unwrap_or_default().to_string()
}

async fn tab(browser: &Browser) {
    browser.driver.action_chain().send_keys(Key::Tab).perform().await.expect("Tab");
}

/// The focused element after each Tab from the top of the freshly loaded page at `url`, until
/// focus leaves the page or comes back round.
async fn tab_stops(browser: &Browser, url: &str) -> Vec<String> {
    browser.open(url).await;
    let mut stops = Vec::new();
    for _ in 0..80 {
        tab(browser).await;
        let focused = focused(browser).await;
        if focused.is_empty() || stops.first() == Some(&focused) {
            break;
        }
        stops.push(focused);
    }
    stops
}

/// Presses Tab until `wanted` has the focus.
async fn tab_to(browser: &Browser, wanted: &str) {
    let mut stops = Vec::new();
    while stops.len() < 80 {
        tab(browser).await;
        let focused = focused(browser).await;
        if focused == wanted {
            return;
        }
        stops.push(focused);
    }
    panic!("{wanted} not reached by Tab: {stops:?}");
}

#[tokio::test]
async fn the_keyboard_reaches_every_action_and_confirms_one() {
    let cluster = Cluster::start(Duration::from_millis(100), &[]).await;
    let _config = cluster.settings_package("web").await;
    cluster.ready_is("Package", "web", "True").await;
    healthy_canary(&cluster, json!([{"setWeight": 50}])).await;
    let dashboard = cluster.dashboard().await;
    let browser = Browser::start().await;

    let package = format!("{}/packages/default/web", dashboard.url);
    let stops = tab_stops(&browser, &package).await;
    assert_eq!(stops.first().map(String::as_str), Some("A Skip to content"), "{stops:?}");
    for action in ["BUTTON Reconcile…", "BUTTON Reconcile with source…", "BUTTON Suspend…", "A View YAML"] {
        assert!(stops.iter().any(|s| s == action), "{action} not reached by Tab: {stops:?}");
    }
    let stops = tab_stops(&browser, &format!("{}/canaries/default/nginx", dashboard.url)).await;
    for action in ["BUTTON Promote…", "BUTTON Promote fully…", "BUTTON Abort…", "BUTTON Retry…"] {
        assert!(stops.iter().any(|s| s == action), "{action} not reached by Tab: {stops:?}");
    }

    // Enter on the focused button opens the confirmation (and does not confirm it: nothing
    // there has the focus for that key to land on); Tab reaches its button, Enter confirms.
    browser.open(&package).await;
    tab_to(&browser, "BUTTON Reconcile…").await;
    browser.driver.action_chain().send_keys(Key::Enter).perform().await.expect("Enter");
    browser.wait_for_heading("Reconcile Package default/web?").await;
    tab_to(&browser, "BUTTON Reconcile").await;
    browser.driver.action_chain().send_keys(Key::Enter).perform().await.expect("Enter");
    browser.wait_for_heading("Package web").await;
    let package = cluster.get("Package", "web").await;
    assert!(package["metadata"]["annotations"]["bosun.dev/requested-at"].is_string(), "{package}");
    browser.close().await;
}
