//! Which API resource a name means, the way kubectl reads it: plural, singular, short name or
//! kind, optionally followed by `.group` or `.version.group` (`deploy`, `deployments.apps`,
//! `Widget.v1.example.com`), resolved against the cluster's aggregated discovery.

use kube::{Client, api::ApiResource};

/// A resource the cluster serves, as discovery describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// API group (empty for the core group).
    pub(crate) group: String,
    /// Version.
    pub(crate) version: String,
    /// Whether this is the group's preferred version.
    pub(crate) preferred: bool,
    /// Plural resource name, e.g. `deployments`.
    pub(crate) plural: String,
    /// Singular name, e.g. `deployment`.
    pub(crate) singular: String,
    /// Kind, e.g. `Deployment`.
    pub(crate) kind: String,
    /// Short names, e.g. `deploy`.
    pub(crate) short_names: Vec<String>,
    /// Whether objects live in namespaces.
    pub(crate) namespaced: bool,
    /// Whether it can be listed and watched.
    pub(crate) watchable: bool,
}

impl Candidate {
    /// The resource for kube-rs.
    pub(crate) fn api_resource(&self) -> ApiResource {
        let api_version =
            if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) };
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version,
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }

    /// `plural.group` (or `plural` for the core group).
    pub(crate) fn display(&self) -> String {
        if self.group.is_empty() { self.plural.clone() } else { format!("{}.{}", self.plural, self.group) }
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        [self.plural.as_str(), self.singular.as_str(), self.kind.as_str()]
            .into_iter()
            .chain(self.short_names.iter().map(String::as_str))
            .filter(|name| !name.is_empty())
    }

    fn named(&self, name: &str) -> bool {
        self.names().any(|known| known.eq_ignore_ascii_case(name))
    }
}

/// A name that means no resource the cluster serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the server has no resource type {name:?}{}", suggestion(.close))]
pub struct UnknownResource {
    /// The name asked for.
    pub(crate) name: String,
    /// Close matches, best first.
    pub(crate) close: Vec<String>,
}

fn suggestion(close: &[String]) -> String {
    if close.is_empty() { String::new() } else { format!(" (did you mean {}?)", close.join(", ")) }
}

/// Picks the resource `query` names among `candidates`: the core group before others and a
/// group's preferred version before the rest, as kubectl does.
pub(crate) fn resolve<'a>(query: &str, candidates: &'a [Candidate]) -> Result<&'a Candidate, UnknownResource> {
    let watchable: Vec<&Candidate> = candidates.iter().filter(|c| c.watchable).collect();
    // `name`, `name.group` or `name.version.group`: try every split point.
    let mut splits = vec![(query, None, None)];
    for (dot, _) in query.match_indices('.') {
        let (name, rest) = (&query[..dot], &query[dot + 1..]);
        splits.push((name, None, Some(rest)));
        if let Some((version, group)) = rest.split_once('.') {
            splits.push((name, Some(version), Some(group)));
        }
    }
    for (name, version, group) in splits {
        let mut found: Vec<&Candidate> = watchable
            .iter()
            .copied()
            .filter(|c| c.named(name))
            .filter(|c| group.is_none_or(|g| c.group.eq_ignore_ascii_case(g)))
            .filter(|c| version.is_none_or(|v| c.version == v))
            .collect();
        found.sort_by_key(|c| (!c.group.is_empty(), !c.preferred));
        if let Some(best) = found.first() {
            return Ok(best);
        }
    }
    Err(UnknownResource { name: query.to_string(), close: close_matches(query, &watchable) })
}

/// Names within a small edit distance of `query` (one edit per four characters), or that
/// contain it, nearest first.
fn close_matches(query: &str, candidates: &[&Candidate]) -> Vec<String> {
    let query = query.to_ascii_lowercase();
    let mut scored: Vec<(usize, String)> = candidates
        .iter()
        .flat_map(|c| [c.plural.clone(), c.singular.clone()].into_iter().chain(c.short_names.iter().cloned()))
        .filter(|name| !name.is_empty())
        .filter_map(|name| {
            let distance = strsim::levenshtein(&query, &name);
            // A typo is about one edit in four characters.
            let near = distance <= (query.len() / 4).max(1);
            (near || (query.len() >= 3 && name.contains(&query))).then_some((distance, name))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().map(|(_, name)| name).take(5).collect()
}

/// Every resource the cluster serves, from aggregated discovery (two requests).
pub(crate) async fn candidates(client: &Client) -> Result<Vec<Candidate>, kube::Error> {
    let mut all = Vec::new();
    let core = client.list_core_api_versions_aggregated().await?;
    let groups = client.list_api_groups_aggregated().await?;
    for group in core.items.into_iter().chain(groups.items) {
        let group_name = group.metadata.as_ref().and_then(|m| m.name.clone()).unwrap_or_default();
        for (index, version) in group.versions.into_iter().enumerate() {
            let version_name = version.version.unwrap_or_default();
            for resource in version.resources {
                let kind = resource.response_kind.as_ref().and_then(|k| k.kind.clone()).unwrap_or_default();
                all.push(Candidate {
                    group: group_name.clone(),
                    version: version_name.clone(),
                    preferred: index == 0,
                    plural: resource.resource.unwrap_or_default(),
                    singular: resource.singular_resource.unwrap_or_default(),
                    kind,
                    short_names: resource.short_names,
                    namespaced: resource.scope.as_deref() == Some("Namespaced"),
                    watchable: ["list", "watch"].iter().all(|verb| resource.verbs.iter().any(|v| v == verb)),
                });
            }
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_resolve_as_kubectl_does() {
        use crate::observe::resource::{Candidate, resolve};
        let deployments = Candidate {
            group: "apps".into(),
            version: "v1".into(),
            preferred: true,
            plural: "deployments".into(),
            singular: "deployment".into(),
            kind: "Deployment".into(),
            short_names: vec!["deploy".into()],
            namespaced: true,
            watchable: true,
        };
        let all = [deployments];
        assert_eq!(resolve("deploy", &all).unwrap().plural, "deployments");
        assert_eq!(resolve("deployments.v1.apps", &all).unwrap().kind, "Deployment");
        assert_eq!(resolve("deploymnets", &all).unwrap_err().close, ["deployments"]);
    }

    fn candidate(group: &str, version: &str, preferred: bool, plural: &str, kind: &str, short: &[&str]) -> Candidate {
        Candidate {
            group: group.into(),
            version: version.into(),
            preferred,
            plural: plural.into(),
            singular: kind.to_ascii_lowercase(),
            kind: kind.into(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            namespaced: true,
            watchable: true,
        }
    }

    #[test]
    fn names_resolve_like_kubectl() {
        let all = [
            candidate("", "v1", true, "services", "Service", &["svc"]),
            candidate("", "v1", true, "events", "Event", &["ev"]),
            candidate("events.k8s.io", "v1", true, "events", "Event", &["ev"]),
            candidate("example.com", "v1", true, "widgets", "Widget", &["wd"]),
            candidate("example.com", "v1beta1", false, "widgets", "Widget", &["wd"]),
            Candidate { watchable: false, ..candidate("", "v1", true, "bindings", "Binding", &[]) },
        ];
        type Case<'a> = (&'a str, Result<(&'a str, &'a str), Vec<&'a str>>);
        let cases: [Case; 10] = [
            ("svc", Ok(("", "v1"))),
            ("Service", Ok(("", "v1"))),
            ("service", Ok(("", "v1"))),
            ("events", Ok(("", "v1"))),
            ("events.events.k8s.io", Ok(("events.k8s.io", "v1"))),
            ("widgets.example.com", Ok(("example.com", "v1"))),
            ("widget.v1beta1.example.com", Ok(("example.com", "v1beta1"))),
            ("wd", Ok(("example.com", "v1"))),
            ("servics", Err(vec!["service", "services"])),
            ("bindings", Err(vec![])),
        ];
        for (query, expected) in cases {
            let got = resolve(query, &all).map(|c| (c.group.as_str(), c.version.as_str())).map_err(|e| e.close);
            let expected = expected.map_err(|close| close.iter().map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(got, expected, "{query}");
        }
        let error = resolve("servics", &all).unwrap_err();
        assert_eq!(error.to_string(), "the server has no resource type \"servics\" (did you mean service, services?)");
    }
}
