//! What an `AppProject` allows (pure): the repositories an application's source may come
//! from, the destinations it may deliver to, and the kinds it may write — Argo CD's globs,
//! with `!` in front denying. Without an AppProject named `default`, the default project
//! allows everything, as the one Argo CD creates does.

use bosun_api::argo::AppProject;
use bosun_api::argo::application::ApplicationDestination;
use bosun_api::argo::project::{AppProjectSpec, GroupKind};

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
    /// An object's kind is not allowed.
    #[error("resource {group}:{kind} is not permitted in project {project}")]
    Resource {
        /// Its API group.
        group: String,
        /// Its kind.
        kind: String,
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

/// Checks one object's kind: cluster-scoped kinds must be in `clusterResourceWhitelist`
/// (nothing when empty) and not in the blacklist; namespaced ones not in
/// `namespaceResourceBlacklist`, and in the whitelist when it has entries.
///
/// # Errors
/// The kind is not allowed.
pub(crate) fn permits_resource(
    project_name: &str,
    project: &AppProjectSpec,
    (group, kind, name): (&str, &str, &str),
    namespaced: bool,
) -> Result<(), ProjectError> {
    let listed = |list: &[GroupKind]| {
        list.iter().any(|entry| {
            glob_match(&entry.group, group)
                && glob_match(&entry.kind, kind)
                && entry.name.as_deref().filter(|n| !n.is_empty()).is_none_or(|glob| glob_match(glob, name))
        })
    };
    let allowed = match namespaced {
        false => listed(&project.cluster_resource_whitelist) && !listed(&project.cluster_resource_blacklist),
        true => {
            (project.namespace_resource_whitelist.is_empty() || listed(&project.namespace_resource_whitelist))
                && !listed(&project.namespace_resource_blacklist)
        }
    };
    match allowed {
        true => Ok(()),
        false => Err(ProjectError::Resource { group: group.into(), kind: kind.into(), project: project_name.into() }),
    }
}

/// Whether a list of globs (`!` denying) allows `matches`: some allowing glob matches and no
/// denying one does.
fn allowed(globs: &[String], matches: impl Fn(&str) -> bool) -> bool {
    let denied = globs.iter().filter_map(|g| g.strip_prefix('!')).any(&matches);
    let granted = globs.iter().filter(|g| !g.starts_with('!')).any(|g| matches(g));
    granted && !denied
}

/// Argo CD's glob (gobwas/glob without separators): `*` crossing `/`, `?`, `[…]` classes,
/// `{a,b}`, exact text otherwise.
pub(crate) fn glob_match(glob: &str, text: &str) -> bool {
    // `/` made an ordinary character: no separator.
    const SLASH: char = '\u{1}';
    let glob = glob.replace('/', &SLASH.to_string());
    bosun_glob::Pattern::glob(&glob).is_ok_and(|pattern| pattern.matches(&text.replace('/', &SLASH.to_string())))
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
        permits_resource("default", &spec, ("", "Namespace", "x"), false).expect("cluster kinds too");
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
    fn cluster_kinds_need_the_whitelist_namespaced_ones_the_blacklist_s_absence() {
        let mut spec = project(&["*"], &[(IN, "*")]);
        assert!(permits_resource("p", &spec, ("", "Namespace", "web"), false).is_err(), "empty whitelist: none");
        permits_resource("p", &spec, ("apps", "Deployment", "web"), true).expect("namespaced: all");
        spec.cluster_resource_whitelist = vec![GroupKind { group: "".into(), kind: "Namespace".into(), name: None }];
        spec.cluster_resource_blacklist =
            vec![GroupKind { group: "".into(), kind: "Namespace".into(), name: Some("kube-*".into()) }];
        permits_resource("p", &spec, ("", "Namespace", "web"), false).expect("listed");
        assert!(permits_resource("p", &spec, ("", "Namespace", "kube-public"), false).is_err(), "blacklisted name");
        spec.namespace_resource_blacklist =
            vec![GroupKind { group: "".into(), kind: "ResourceQuota".into(), name: None }];
        let refused = permits_resource("p", &spec, ("", "ResourceQuota", "q"), true).expect_err("blacklisted");
        assert_eq!(refused.to_string(), "resource :ResourceQuota is not permitted in project p");
        spec.namespace_resource_whitelist =
            vec![GroupKind { group: "apps".into(), kind: "Deployment".into(), name: None }];
        assert!(permits_resource("p", &spec, ("", "Service", "s"), true).is_err(), "whitelist given: only those");
    }
}
