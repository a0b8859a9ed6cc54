//! Links the pages make: to a commit on GitHub or GitLab (where the source URL says which), and
//! to every object's own page (deep links: `/packages/NS/NAME`, `/yaml/GROUP/VERSION/KIND/NS/NAME`).

/// The segment standing for "no namespace" in links to cluster-scoped objects (a namespace
/// name can never be `_`).
pub(crate) const NO_NAMESPACE: &str = "_";

/// The segment standing for the core API group (`v1` objects) in YAML links.
pub(crate) const CORE_GROUP: &str = "core";

/// The commit of a revision (`main@sha1:<commit>`, `sha1:<commit>`), if it names one.
pub(crate) fn commit_of(revision: &str) -> Option<&str> {
    let (_, commit) = revision.rsplit_once("sha1:")?;
    (commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit())).then_some(commit)
}

/// The page of `revision`'s commit, when the Git URL is an `https://` URL of GitHub or a
/// GitLab (any host whose name says gitlab): `https://github.com/org/repo/commit/<sha>`,
/// `https://gitlab.example.com/group/sub/repo/-/commit/<sha>`. Credentials in the URL are
/// never carried into the link.
pub(crate) fn commit_url(git_url: &str, revision: &str) -> Option<String> {
    let commit = commit_of(revision)?;
    let rest = git_url.strip_prefix("https://")?;
    let (authority, path) = rest.split_once('/')?;
    let host = authority.rsplit('@').next()?.to_ascii_lowercase();
    let path = path.trim_end_matches('/').trim_end_matches(".git");
    if path.split('/').filter(|s| !s.is_empty()).count() < 2 || path.contains(['?', '#']) {
        return None;
    }
    if host == "github.com" || host == "www.github.com" {
        Some(format!("https://github.com/{path}/commit/{commit}"))
    } else if host.split(['.', ':']).any(|label| label == "gitlab") {
        Some(format!("https://{host}/{path}/-/commit/{commit}"))
    } else {
        None
    }
}

/// The pages of an object with live parts (`/live/SECTION/NS/NAME`) and actions (but for a
/// package the CLI applied, which has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ObjectPage {
    /// A Package.
    Package,
    /// A Canary.
    Canary,
    /// A package the CLI applied (its inventory).
    Inventory,
}

impl ObjectPage {
    /// Every one of them.
    pub(crate) const ALL: [ObjectPage; 3] = [ObjectPage::Package, ObjectPage::Canary, ObjectPage::Inventory];

    /// The page of a section of the URL space, if it is one of them.
    pub(crate) fn parse(section: &str) -> Option<ObjectPage> {
        ObjectPage::ALL.into_iter().find(|page| page.section() == section)
    }

    /// Its section of the URL space (`packages`).
    pub(crate) const fn section(self) -> &'static str {
        match self {
            ObjectPage::Package => "packages",
            ObjectPage::Canary => "canaries",
            ObjectPage::Inventory => "inventories",
        }
    }

    /// What it shows, as a title (`Package team/web`).
    pub(crate) fn title(self, namespace: &str, name: &str) -> String {
        match self {
            ObjectPage::Package => format!("Package {namespace}/{name}"),
            ObjectPage::Canary => format!("Canary {namespace}/{name}"),
            ObjectPage::Inventory => format!("Package {namespace}/{name} (applied by the CLI)"),
        }
    }
}

/// The page of a Package, Canary, Operator, Alert or Fleet (`/packages/NS/NAME`).
pub(crate) fn object_page(section: &str, namespace: Option<&str>, name: &str) -> String {
    format!("/{section}/{}/{name}", namespace.filter(|ns| !ns.is_empty()).unwrap_or(NO_NAMESPACE))
}

/// The YAML page of any object: `/yaml/GROUP/VERSION/KIND/NS/NAME` (`core` for `v1`, `_` for
/// no namespace).
pub(crate) fn yaml_page(api_version: &str, kind: &str, namespace: &str, name: &str) -> String {
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => (CORE_GROUP, api_version),
    };
    let namespace = if namespace.is_empty() { NO_NAMESPACE } else { namespace };
    format!("/yaml/{group}/{version}/{kind}/{namespace}/{name}")
}

/// The `apiVersion` of a YAML link's group and version.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    if group == CORE_GROUP { version.to_string() } else { format!("{group}/{version}") }
}

/// The namespace of a link's segment (`_`: none).
pub(crate) fn namespace_of(segment: &str) -> Option<&str> {
    (segment != NO_NAMESPACE).then_some(segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_link_to_github_and_gitlab_only() {
        let sha = "0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d";
        let revision = format!("main@sha1:{sha}");
        let cases = [
            ("https://github.com/org/repo.git", Some(format!("https://github.com/org/repo/commit/{sha}"))),
            ("https://user:secret@github.com/org/repo", Some(format!("https://github.com/org/repo/commit/{sha}"))),
            (
                "https://gitlab.com/group/sub/repo.git",
                Some(format!("https://gitlab.com/group/sub/repo/-/commit/{sha}")),
            ),
            ("https://gitlab.example.com/g/r", Some(format!("https://gitlab.example.com/g/r/-/commit/{sha}"))),
            ("http://github.com/org/repo", None),
            ("ssh://git@github.com/org/repo.git", None),
            ("https://git.example.com/org/repo", None),
            ("https://github.com/org", None),
        ];
        for (url, expected) in cases {
            assert_eq!(commit_url(url, &revision), expected, "{url}");
        }
        assert_eq!(commit_url("https://github.com/org/repo", "sha256:abcdef0123"), None, "not a commit");
        assert_eq!(commit_of(&format!("sha1:{sha}")), Some(sha));
    }

    #[test]
    fn yaml_links_round_trip_groups_and_namespaces() {
        assert_eq!(yaml_page("apps/v1", "Deployment", "team", "web"), "/yaml/apps/v1/Deployment/team/web");
        assert_eq!(yaml_page("v1", "Namespace", "", "team"), "/yaml/core/v1/Namespace/_/team");
        assert_eq!(api_version("core", "v1"), "v1");
        assert_eq!(api_version("apps", "v1"), "apps/v1");
        assert_eq!(namespace_of("_"), None);
        assert_eq!(object_page("packages", Some("team"), "web"), "/packages/team/web");
        assert_eq!(object_page("fleets", None, "all"), "/fleets/_/all");
    }

    #[test]
    fn pages_with_live_parts_are_known_by_their_section() {
        for page in ObjectPage::ALL {
            assert_eq!(ObjectPage::parse(page.section()), Some(page));
        }
        assert_eq!(ObjectPage::parse("inventories"), Some(ObjectPage::Inventory));
        assert_eq!(ObjectPage::parse("operators"), None, "no live parts");
        assert_eq!(ObjectPage::Inventory.title("default", "web"), "Package default/web (applied by the CLI)");
    }
}
