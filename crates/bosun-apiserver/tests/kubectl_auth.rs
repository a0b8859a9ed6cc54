//! kubectl as different users against the HTTPS server: `auth whoami`, `auth can-i` (with
//! `--list`), `create token`, `--as`/`--as-group`, and the refusals it prints.

mod common;

use bosun_apiserver::{ApiServer, RunningServer};
use common::{Kubectl, texts};

async fn secure() -> RunningServer {
    ApiServer::in_memory().tls(true).user("alice", &["dev"]).start().await.expect("server starts")
}

/// The stderr of a kubectl run that must fail.
async fn fails(kubectl: &Kubectl, args: &[&str]) -> String {
    let output = kubectl.run(args).await;
    assert!(!output.status.success(), "kubectl {args:?} succeeded: {:?}", texts(&output));
    texts(&output).1
}

fn rows(table: &str) -> Vec<Vec<&str>> {
    table.lines().map(|line| line.split_whitespace().collect()).collect()
}

#[tokio::test]
async fn whoami_names_the_admin_the_named_users_and_impersonated_ones() {
    let server = secure().await;
    let kubectl = Kubectl::new(&server);
    let admin = kubectl.ok(&["auth", "whoami"]).await;
    assert!(rows(&admin).contains(&vec!["Username", "kubernetes-admin"]), "{admin}");
    assert!(rows(&admin).contains(&vec!["Groups", "[system:masters", "system:authenticated]"]), "{admin}");
    let alice = kubectl.ok(&["--context", "alice", "auth", "whoami"]).await;
    assert!(rows(&alice).contains(&vec!["Username", "alice"]), "{alice}");
    let carol = kubectl.ok(&["auth", "whoami", "--as", "carol", "--as-group", "ops"]).await;
    assert!(rows(&carol).contains(&vec!["Groups", "[ops", "system:authenticated]"]), "{carol}");
    // `get --raw` skips discovery (whose refusals kubectl 1.32 prints as "Forbidden: unknown",
    // as it does against any cluster).
    let refused = fails(&kubectl, &["--context", "alice", "get", "--raw", "/api/v1/namespaces", "--as", "bob"]).await;
    assert_eq!(
        refused.trim(),
        r#"Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
}

#[tokio::test]
async fn can_i_follows_bindings_and_lists_what_a_user_may_do() {
    let server = secure().await;
    let kubectl = Kubectl::new(&server);
    let refused = fails(&kubectl, &["--context", "alice", "get", "pods"]).await;
    assert_eq!(
        refused.trim(),
        r#"Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
    );
    let no = kubectl.run(&["auth", "can-i", "list", "pods", "--as", "alice"]).await;
    assert_eq!((no.status.code(), texts(&no).0.trim()), (Some(1), "no"));
    kubectl.ok(&["create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice"]).await;
    assert_eq!(kubectl.ok(&["--context", "alice", "auth", "can-i", "list", "pods"]).await.trim(), "yes");
    assert_eq!(kubectl.ok(&["--context", "alice", "get", "pods", "-o", "name"]).await, "");
    let no = kubectl.run(&["--context", "alice", "auth", "can-i", "delete", "pods"]).await;
    assert_eq!(texts(&no).0.trim(), "no");
    let no = kubectl.run(&["--context", "alice", "auth", "can-i", "list", "pods", "-n", "kube-system"]).await;
    assert_eq!(texts(&no).0.trim(), "no");

    let list = kubectl.ok(&["--context", "alice", "auth", "can-i", "--list"]).await;
    let table = rows(&list);
    assert_eq!(table[0], ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"], "{list}");
    assert!(table.iter().any(|row| row.first() == Some(&"pods") && row.last() == Some(&"watch]")), "{list}");
    assert!(table.iter().any(|row| row.first() == Some(&"[/version]")), "{list}");
    assert!(!list.contains("secrets "), "view does not read secrets: {list}");
}

#[tokio::test]
async fn create_token_gives_a_service_account_token_kubectl_can_use() {
    let server = secure().await;
    let kubectl = Kubectl::new(&server);
    kubectl.ok(&["create", "serviceaccount", "robot"]).await;
    let token = kubectl.ok(&["create", "token", "robot", "--duration", "15m"]).await;
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let whoami = kubectl.ok(&["--token", token, "auth", "whoami"]).await;
    assert!(rows(&whoami).contains(&vec!["Username", "system:serviceaccount:default:robot"]), "{whoami}");
    let refused = fails(&kubectl, &["--token", token, "get", "configmaps"]).await;
    assert!(
        refused.contains(r#"User "system:serviceaccount:default:robot" cannot list resource "configmaps" in API group "" in the namespace "default""#),
        "{refused}"
    );
    kubectl.ok(&["create", "rolebinding", "robot-edit", "--clusterrole=edit", "--serviceaccount=default:robot"]).await;
    kubectl.ok(&["--token", token, "create", "configmap", "made-by-robot"]).await;
    let too_short = fails(&kubectl, &["create", "token", "robot", "--duration", "5m"]).await;
    assert!(too_short.contains("may not specify a duration less than 10 minutes"), "{too_short}");
    let sa_impersonated = fails(&kubectl, &["get", "nodes", "--as", "system:serviceaccount:default:robot"]).await;
    assert!(
        sa_impersonated.contains(r#"User "system:serviceaccount:default:robot" cannot list resource "nodes" in API group "" at the cluster scope"#),
        "{sa_impersonated}"
    );
}
