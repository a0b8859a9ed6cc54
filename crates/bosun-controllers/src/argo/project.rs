//! What an `AppProject` allows (pure): the repositories an application's source may come
//! from, the destinations it may deliver to, and the kinds it may write — Argo CD's globs,
//! with `!` in front denying. Without an AppProject named `default`, the default project
//! allows everything, as the one Argo CD creates does.

use bosun_api::argo::AppProject;
use bosun_api::argo::application::{ApplicationDestination, IN_CLUSTER_NAME, IN_CLUSTER_SERVER};
use bosun_api::argo::project::{AppProjectSpec, GroupKind};
use bosun_api::package::Permitted;

use crate::package::permitted::{allowed, glob_match};

/// The project Argo CD creates when it starts: every repository, destination and kind.
pub(crate) fn permissive() -> AppProjectSpec {
    let all = GroupKind { group: "*".into(), kind: "*".into(), name: None };
    AppProjectSpec {
        source_repos: vec!["*".into()],
        destinations: vec![ApplicationDestination {
            server: Some("*".into()),
            namespace: Some("*".into()),
            name: Some("*".into()),
        }],
        cluster_resource_whitelist: vec![all],
        ..AppProjectSpec::default()
    }
}

/// Why a project refuses an application (the message of Argo CD's `InvalidSpecError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProjectError {
    /// The source's repository is not among `sourceRepos`.
    #[error("application repo {repo} is not permitted in project '{project}'")]
    Repository {
        /// The repository's URL.
        repo: String,
        /// The project.
        project: String,
    },
    /// The destination is not among `destinations`.
    #[error(
        "application destination server '{server}' and namespace '{namespace}' do not match any of the allowed destinations in project '{project}'"
    )]
    Destination {
        /// The server (or cluster name).
        server: String,
        /// The namespace.
        namespace: String,
        /// The project.
        project: String,
    },
    /// The project asks for something bosun does not do yet.
    #[error("project '{project}': {field}: bosun does not honour this yet (docs/argocd.md lists what it does)")]
    Unsupported {
        /// The field's path.
        field: String,
        /// The project.
        project: String,
    },
}

/// The project `name` as found (`None`: not found), as it governs: the permissive default
/// project when `default` does not exist.
///
/// # Errors
/// Another project that does not exist (the message Argo CD writes).
pub(crate) fn governing(name: &str, found: Option<&AppProject>) -> Result<AppProjectSpec, String> {
    match found {
        Some(project) => Ok(project.spec.clone()),
        None if name == bosun_api::argo::project::DEFAULT_PROJECT => Ok(permissive()),
        None => Err(format!("Application referencing project {name} which does not exist")),
    }
}

/// Checks that the project asks nothing bosun cannot do: sync windows, impersonation and
/// signature checks are refused by name rather than skipped.
///
/// # Errors
/// The first such field.
pub(crate) fn honourable(project_name: &str, project: &AppProjectSpec) -> Result<(), ProjectError> {
    let fields = [
        ("spec.syncWindows", !project.sync_windows.is_empty()),
        ("spec.destinationServiceAccounts", !project.destination_service_accounts.is_empty()),
        ("spec.signatureKeys", !project.signature_keys.is_empty()),
        ("spec.sourceIntegrity", project.source_integrity.is_some()),
    ];
    match fields.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(ProjectError::Unsupported { field: (*field).into(), project: project_name.into() }),
        None => Ok(()),
    }
}

/// Checks the source's repository and the destination against the project.
///
/// # Errors
/// The first one the project does not allow.
pub(crate) fn permits(
    project_name: &str,
    project: &AppProjectSpec,
    repo: &str,
    destination: &ApplicationDestination,
) -> Result<(), ProjectError> {
    if !allowed(&project.source_repos, |glob| glob_match(glob, repo.trim_end_matches(".git")) || glob_match(glob, repo))
    {
        return Err(ProjectError::Repository { repo: repo.into(), project: project_name.into() });
    }
    let namespace = destination.namespace.clone().unwrap_or_default();
    let server = destination.server.clone();
    let name = destination.name.clone();
    let matches = |d: &ApplicationDestination| {
        let server_ok = match (&d.server, &server) {
            (Some(glob), Some(server)) => glob_match(glob.trim_start_matches('!'), server),
            _ => false,
        };
        let name_ok = match (&d.name, &name) {
            (Some(glob), Some(name)) => glob_match(glob.trim_start_matches('!'), name),
            _ => false,
        };
        let namespace_ok = glob_match(d.namespace.as_deref().unwrap_or("").trim_start_matches('!'), &namespace);
        (server_ok || name_ok) && namespace_ok
    };
    let denied = project.destinations.iter().any(|d| {
        let denying =
            [&d.server, &d.name, &d.namespace].iter().any(|f| f.as_deref().is_some_and(|g| g.starts_with('!')));
        denying && !matches(d)
    });
    let granted = project.destinations.iter().any(|d| {
        let denying =
            [&d.server, &d.name, &d.namespace].iter().any(|f| f.as_deref().is_some_and(|g| g.starts_with('!')));
        !denying && matches(d)
    });
    if denied || !granted {
        return Err(ProjectError::Destination {
            server: server.or(name).unwrap_or_default(),
            namespace,
            project: project_name.into(),
        });
    }
    Ok(())
}

/// The project's rules on kinds and namespaces as the Package carries them (checked on what
/// it renders, before anything is written): the namespaces are those of the destinations
/// naming the cluster bosun runs in.
pub(crate) fn permitted(project_name: &str, project: &AppProjectSpec) -> Permitted {
    let in_cluster = |d: &ApplicationDestination| {
        let server =
            d.server.as_deref().is_some_and(|glob| glob_match(glob.trim_start_matches('!'), IN_CLUSTER_SERVER));
        let name = d.name.as_deref().is_some_and(|glob| glob_match(glob.trim_start_matches('!'), IN_CLUSTER_NAME));
        server || name
    };
    let namespaces = project
        .destinations
        .iter()
        .filter(|d| in_cluster(d))
        .map(|d| {
            let namespace = d.namespace.clone().unwrap_or_default();
            let denying = [&d.server, &d.name].iter().any(|f| f.as_deref().is_some_and(|g| g.starts_with('!')));
            match denying && !namespace.starts_with('!') {
                true => format!("!{namespace}"),
                false => namespace,
            }
        })
        .collect();
    Permitted {
        project: project_name.to_string(),
        cluster_resource_whitelist: project.cluster_resource_whitelist.clone(),
        cluster_resource_blacklist: project.cluster_resource_blacklist.clone(),
        namespace_resource_whitelist: project.namespace_resource_whitelist.clone(),
        namespace_resource_blacklist: project.namespace_resource_blacklist.clone(),
        namespaces,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn destination(server: &str, namespace: &str) -> ApplicationDestination {
        ApplicationDestination { server: Some(server.into()), namespace: Some(namespace.into()), name: None }
    }

    fn project(repos: &[&str], destinations: &[(&str, &str)]) -> AppProjectSpec {
        AppProjectSpec {
            source_repos: repos.iter().map(|r| r.to_string()).collect(),
            destinations: destinations
                .iter()
                .map(|(s, n)| ApplicationDestination {
                    server: Some(s.to_string()),
                    namespace: Some(n.to_string()),
                    name: None,
                })
                .collect(),
            ..AppProjectSpec::default()
        }
    }

    const IN: &str = "https://kubernetes.default.svc";
    const REPO: &str = "https://github.com/argoproj/argocd-example-apps.git";

    #[test]
    fn the_default_project_allows_everything_when_it_does_not_exist() {
        let spec = governing("default", None).expect("permissive");
        permits("default", &spec, REPO, &destination(IN, "anything")).expect("allowed");
        let kinds = permitted("default", &spec);
        assert!(crate::package::permitted::kind_permitted(&kinds, ("", "Namespace", "x"), false), "cluster kinds too");
        honourable("default", &spec).expect("nothing bosun cannot do");
        let windows = AppProjectSpec { sync_windows: vec![serde_json::json!({"kind": "deny"})], ..spec };
        assert_eq!(
            honourable("p", &windows).expect_err("windows").to_string(),
            "project 'p': spec.syncWindows: bosun does not honour this yet (docs/argocd.md lists what it does)"
        );
        assert_eq!(
            governing("team", None).expect_err("missing"),
            "Application referencing project team which does not exist"
        );
    }

    #[test]
    fn repositories_and_destinations_are_globs_and_bang_denies() {
        let spec =
            project(&["https://github.com/argoproj/*", "!https://github.com/argoproj/secret*"], &[(IN, "guestbook-*")]);
        permits("p", &spec, REPO, &destination(IN, "guestbook-dev")).expect("allowed");
        let refused = permits("p", &spec, "https://github.com/argoproj/secret.git", &destination(IN, "guestbook-dev"));
        assert!(matches!(refused, Err(ProjectError::Repository { .. })), "{refused:?}");
        let refused = permits("p", &spec, REPO, &destination(IN, "kube-system")).expect_err("namespace");
        assert_eq!(
            refused.to_string(),
            "application destination server 'https://kubernetes.default.svc' and namespace 'kube-system' do not match any of the allowed destinations in project 'p'"
        );
        assert!(permits("p", &project(&[], &[(IN, "*")]), REPO, &destination(IN, "a")).is_err(), "no repos: none");
        let by_name =
            ApplicationDestination { server: None, namespace: Some("a".into()), name: Some("in-cluster".into()) };
        let named = AppProjectSpec {
            destinations: vec![ApplicationDestination {
                server: None,
                namespace: Some("*".into()),
                name: Some("in-cluster".into()),
            }],
            ..project(&["*"], &[])
        };
        permits("p", &named, REPO, &by_name).expect("by name");
    }

    #[test]
    fn the_package_carries_the_project_s_kinds_and_in_cluster_namespaces() {
        let mut spec = project(&["*"], &[(IN, "team-*"), ("https://prod.example.com", "prod")]);
        spec.destinations.push(ApplicationDestination {
            server: Some(format!("!{IN}")),
            namespace: Some("team-secret".into()),
            name: None,
        });
        spec.cluster_resource_whitelist = vec![GroupKind { group: "".into(), kind: "Namespace".into(), name: None }];
        let permitted = permitted("p", &spec);
        assert_eq!(permitted.project, "p");
        assert_eq!(permitted.namespaces, ["team-*", "!team-secret"]);
        assert_eq!(permitted.cluster_resource_whitelist, spec.cluster_resource_whitelist);
        let everything = permitted_default();
        assert_eq!(everything.namespaces, ["*"]);
    }

    fn permitted_default() -> Permitted {
        permitted("default", &governing("default", None).expect("permissive"))
    }
}
