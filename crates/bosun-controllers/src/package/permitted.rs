//! Which objects a Package may write (`spec.permitted`, an Argo CD AppProject's rules), checked
//! on the rendered set before anything is written (pure): cluster-scoped kinds must be in the
//! whitelist and not the blacklist, namespaced kinds not in the blacklist (and in the
//! whitelist when it has entries), and namespaced objects in a permitted namespace. The
//! messages are Argo CD's.

use bosun_api::argo::project::GroupKind;
use bosun_api::package::Permitted;

/// The reason of a run refused for an object outside `spec.permitted`.
pub(crate) const NOT_PERMITTED: &str = "NotPermitted";

/// One rendered object, as the check sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate<'a> {
    /// API group (`""` the core group).
    pub(crate) group: &'a str,
    /// Kind.
    pub(crate) kind: &'a str,
    /// Name.
    pub(crate) name: &'a str,
    /// Its namespace, for a namespaced kind; `None` for a cluster-scoped one.
    pub(crate) namespace: Option<&'a str>,
}

/// Whether the kind (and name) is permitted, by scope.
pub(crate) fn kind_permitted(permitted: &Permitted, (group, kind, name): (&str, &str, &str), namespaced: bool) -> bool {
    let listed = |list: &[GroupKind]| {
        list.iter().any(|entry| {
            glob_match(&entry.group, group)
                && glob_match(&entry.kind, kind)
                && entry.name.as_deref().filter(|n| !n.is_empty()).is_none_or(|glob| glob_match(glob, name))
        })
    };
    match namespaced {
        false => listed(&permitted.cluster_resource_whitelist) && !listed(&permitted.cluster_resource_blacklist),
        true => {
            (permitted.namespace_resource_whitelist.is_empty() || listed(&permitted.namespace_resource_whitelist))
                && !listed(&permitted.namespace_resource_blacklist)
        }
    }
}

/// The first object `permitted` refuses, as Argo CD says it.
pub(crate) fn refusal(permitted: &Permitted, objects: &[Candidate<'_>]) -> Option<String> {
    objects.iter().find_map(|object| {
        let project = &permitted.project;
        if !kind_permitted(permitted, (object.group, object.kind, object.name), object.namespace.is_some()) {
            return Some(format!("resource {}:{} is not permitted in project {project}", object.group, object.kind));
        }
        let namespace = object.namespace?;
        (!allowed(&permitted.namespaces, |glob| glob_match(glob, namespace)))
            .then(|| format!("namespace {namespace} is not permitted in project '{project}'"))
    })
}

/// Whether a list of globs (`!` in front denying) allows what `matches` matches: some
/// allowing glob matches and no denying one does.
pub(crate) fn allowed(globs: &[String], matches: impl Fn(&str) -> bool) -> bool {
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

    fn kind(group: &str, kind: &str, name: Option<&str>) -> GroupKind {
        GroupKind { group: group.into(), kind: kind.into(), name: name.map(str::to_string) }
    }

    fn candidate<'a>(group: &'a str, kind: &'a str, name: &'a str, namespace: Option<&'a str>) -> Candidate<'a> {
        Candidate { group, kind, name, namespace }
    }

    #[test]
    fn cluster_kinds_need_the_whitelist_namespaced_ones_the_blacklist_s_absence() {
        let mut permitted = Permitted { project: "p".into(), namespaces: vec!["*".into()], ..Permitted::default() };
        assert!(!kind_permitted(&permitted, ("", "Namespace", "web"), false), "empty whitelist: none");
        assert!(kind_permitted(&permitted, ("apps", "Deployment", "web"), true), "namespaced: all");
        permitted.cluster_resource_whitelist = vec![kind("", "Namespace", None)];
        permitted.cluster_resource_blacklist = vec![kind("", "Namespace", Some("kube-*"))];
        assert!(kind_permitted(&permitted, ("", "Namespace", "web"), false), "listed");
        assert!(!kind_permitted(&permitted, ("", "Namespace", "kube-public"), false), "blacklisted name");
        permitted.namespace_resource_blacklist = vec![kind("", "ResourceQuota", None)];
        let refused = refusal(&permitted, &[candidate("", "ResourceQuota", "q", Some("a"))]);
        assert_eq!(refused.as_deref(), Some("resource :ResourceQuota is not permitted in project p"));
        permitted.namespace_resource_whitelist = vec![kind("apps", "Deployment", None)];
        assert!(!kind_permitted(&permitted, ("", "Service", "s"), true), "a whitelist given: only those");
    }

    #[test]
    fn namespaced_objects_must_go_to_a_permitted_namespace() {
        let permitted = Permitted {
            project: "p".into(),
            namespaces: vec!["team-*".into(), "!team-secret".into()],
            ..Permitted::default()
        };
        assert_eq!(refusal(&permitted, &[candidate("apps", "Deployment", "web", Some("team-a"))]), None);
        let refused = refusal(&permitted, &[candidate("apps", "Deployment", "web", Some("team-secret"))]);
        assert_eq!(refused.as_deref(), Some("namespace team-secret is not permitted in project 'p'"));
        assert!(refusal(&permitted, &[candidate("", "ConfigMap", "c", Some("default"))]).is_some());
    }

    #[test]
    fn globs_are_argo_cd_s() {
        assert!(glob_match("https://github.com/argoproj/*", "https://github.com/argoproj/a/b.git"), "* crosses /");
        assert!(glob_match("{a,b}-*", "b-1"));
        assert!(glob_match("", ""));
        assert!(!glob_match("a", "b"));
    }
}
