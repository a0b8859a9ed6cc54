//! Fair shares of the watch budget (issue 49, "Tenancy that holds"): one user who opens
//! watches until refused leaves room for other users and for `system:masters`; the
//! ServiceAccounts of a namespace share one share. Over real HTTP, with tokens.

mod common;

use std::time::Duration;

use bosun_apiserver::{ApiServer, RunningServer};
use k8s_openapi::api::{authentication::v1::TokenRequest, core::v1::ServiceAccount, rbac::v1::RoleBinding};
use kube::{Api, api::PostParams};
use serde_json::{Value, json};

/// A watch asked for over its own connection: the connection (kept open while the test holds
/// it), the status code and, for a refusal, the `Retry-After` header and the Status.
struct Watch {
    _connection: tokio::net::TcpStream,
    code: u16,
    retry_after: Option<String>,
    status: Option<Value>,
}

/// Asks for a watch of ConfigMaps in `default` with `token` (none: the admin, over plain HTTP).
async fn watch(server: &RunningServer, token: Option<&str>) -> Watch {
    let (mut connection, head) = common::open_watch(server, token).await;
    let code = head[9..12].parse().expect("status code");
    let retry_after = head.lines().find_map(|l| l.strip_prefix("retry-after: ")).map(|v| v.trim().to_string());
    let status = if code == 200 { None } else { Some(common::chunked_document(&mut connection).await) };
    Watch { _connection: connection, code, retry_after, status }
}

/// Opens watches with `token` until one is refused; returns those open and the refusal.
async fn watch_until_refused(server: &RunningServer, token: Option<&str>) -> (Vec<Watch>, Watch) {
    let mut open = Vec::new();
    loop {
        let answer = watch(server, token).await;
        if answer.code != 200 {
            return (open, answer);
        }
        open.push(answer);
        assert!(open.len() <= 100, "never refused");
    }
}

fn message(refused: &Watch) -> String {
    let status = refused.status.as_ref().expect("a Status");
    status["message"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn one_user_holding_its_share_of_watches_leaves_room_for_others_and_the_admin() {
    let server =
        ApiServer::in_memory().max_watches(8).user("alice", &[]).user("bob", &[]).start().await.expect("server");
    let client = server.client();
    let accounts: Api<ServiceAccount> = Api::default_namespaced(client.clone());
    for name in ["robot-a", "robot-b"] {
        let account = json!({"metadata": {"name": name}});
        accounts.create(&PostParams::default(), &serde_json::from_value(account).expect("sa")).await.expect("sa");
    }
    let binding = json!({"metadata": {"name": "view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                     {"kind": "Group", "name": "system:serviceaccounts:default"}]});
    let bindings: Api<RoleBinding> = Api::default_namespaced(client.clone());
    bindings.create(&PostParams::default(), &serde_json::from_value(binding).expect("rb")).await.expect("binding");
    let token_of = |name: &'static str| {
        let accounts = accounts.clone();
        async move {
            let request = TokenRequest::default();
            let answered = accounts.create_token_request(name, &PostParams::default(), &request).await.expect("token");
            answered.status.expect("status").token
        }
    };
    let (alice, bob) = (server.user_token("alice").expect("alice"), server.user_token("bob").expect("bob"));

    // alice alone may hold half of the 8: her fifth watch is refused, as upstream refuses.
    let (alices, refused) = watch_until_refused(&server, Some(alice)).await;
    assert_eq!(alices.len(), 4);
    assert_eq!((refused.code, refused.retry_after.as_deref()), (429, Some("1")));
    let status = refused.status.as_ref().expect("a Status");
    assert_eq!(
        (status["reason"].clone(), status["details"]["retryAfterSeconds"].clone()),
        (json!("TooManyRequests"), json!(1))
    );
    let said = message(&refused);
    assert!(said.starts_with("Too many requests, please try again later: "), "{said}");
    assert!(said.contains(r#"user "alice" holds 4 of the 8"#) && said.contains("--max-watches"), "{said}");

    // bob still gets watches: half of the 4 alice leaves.
    let (bobs, refused) = watch_until_refused(&server, Some(bob)).await;
    assert_eq!((bobs.len(), refused.code), (2, 429));

    // The ServiceAccounts of a namespace share one share: one of the 2 left, whichever asks.
    let first = watch(&server, Some(&token_of("robot-a").await)).await;
    assert_eq!(first.code, 200);
    let second = watch(&server, Some(&token_of("robot-b").await)).await;
    assert_eq!(second.code, 429);
    assert!(message(&second).contains(r#"the ServiceAccounts of namespace "default" hold 1"#), "{}", message(&second));

    // The admin (system:masters: the server's kubeconfig, bosun dev's controllers) is not
    // counted against what the users hold.
    let admins = watch(&server, None).await;
    assert_eq!(admins.code, 200);
    assert_eq!(server.open_watches(), 4 + 2 + 1 + 1);

    // A watch that ends gives its place back to its flow.
    drop(first);
    let freed = async {
        loop {
            let again = watch(&server, Some(&token_of("robot-b").await)).await;
            if again.code == 200 {
                return again;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let _robot =
        tokio::time::timeout(Duration::from_secs(30), freed).await.expect("a closed watch gives its place back");
}
