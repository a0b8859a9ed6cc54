//! Which commit a Git source means: the spec's reference after Flux's precedence, matched
//! against the references a repository advertises, and the revision string that names it.

use gix::ObjectId;

use bosun_api::package::GitReference;
use bosun_semver::Constraints;

/// The one reference a source follows, after precedence (commit > name > semver > tag >
/// branch; none: the remote's default branch).
#[derive(Debug, Clone)]
pub(crate) enum Wanted {
    /// A pinned commit, optionally named by the branch it is on (the revision's label).
    Commit { id: ObjectId, branch: Option<String> },
    /// Any reference by its full name (`refs/pull/1/head`).
    Name(String),
    /// The highest tag in a semver range.
    Semver(Constraints),
    /// A tag.
    Tag(String),
    /// A branch.
    Branch(String),
    /// What the remote's `HEAD` points to.
    DefaultBranch,
}

/// A reference as a repository advertises it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Advertised {
    /// Full name (`refs/heads/main`, `HEAD`).
    pub(crate) name: String,
    /// The object the reference points to: a commit, or an annotated tag.
    pub(crate) target: ObjectId,
    /// The commit behind `target` (annotated tags peeled).
    pub(crate) commit: ObjectId,
    /// For a symbolic reference (`HEAD`), the full name it points to.
    pub(crate) symref: Option<String>,
}

/// What a wanted reference resolved to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    /// The name in the revision string (`main`, `v1.2.0`, `refs/pull/1/head`), none for a bare
    /// commit.
    pub(crate) label: Option<String>,
    /// The advertised reference to fetch, none for a pinned commit (fetched by its id).
    pub(crate) reference: Option<String>,
    /// The commit.
    pub(crate) commit: ObjectId,
}

/// Why a wanted reference resolved to nothing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Unresolved {
    /// Nothing by that name.
    NotFound(String),
    /// No tag in the range: how many tags there were, and how many of them versions.
    NoMatchingTag { tags: usize, versions: usize },
}

impl Wanted {
    /// The spec's reference after precedence, or what is wrong with it.
    pub(crate) fn from_spec(reference: Option<&GitReference>) -> Result<Wanted, String> {
        let set =
            |field: &Option<String>| field.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
        let Some(reference) = reference else { return Ok(Wanted::DefaultBranch) };
        let branch = set(&reference.branch).map(|b| checked(b, "branch", "refs/heads/")).transpose()?;
        if let Some(commit) = set(&reference.commit) {
            let id = (commit.len() == 40)
                .then(|| ObjectId::from_hex(commit.as_bytes()).ok())
                .flatten()
                .ok_or_else(|| format!("ref.commit: {commit:?} is not a full 40-character commit SHA"))?;
            return Ok(Wanted::Commit { id, branch });
        }
        if let Some(name) = set(&reference.name) {
            if !name.starts_with("refs/") {
                return Err(format!("ref.name: {name:?} must be a full reference name (refs/…)"));
            }
            return checked(name, "name", "").map(Wanted::Name);
        }
        if let Some(range) = set(&reference.semver) {
            return Constraints::parse(&range).map(Wanted::Semver).map_err(|e| format!("ref.semver: {e}"));
        }
        if let Some(tag) = set(&reference.tag) {
            return checked(tag, "tag", "refs/tags/").map(Wanted::Tag);
        }
        Ok(branch.map_or(Wanted::DefaultBranch, Wanted::Branch))
    }

    /// The references to list to resolve this one: one name, or the tags for a range. A pinned
    /// commit without a branch lists `HEAD` only to check that the remote can be read.
    pub(crate) fn listing(&self) -> String {
        match self {
            Wanted::Commit { branch: Some(branch), .. } | Wanted::Branch(branch) => format!("refs/heads/{branch}"),
            Wanted::Commit { branch: None, .. } | Wanted::DefaultBranch => "HEAD".into(),
            Wanted::Name(name) => name.clone(),
            // gix wants both sides of a glob; nothing is fetched with a listing.
            Wanted::Semver(_) => "refs/tags/*:refs/tags/*".into(),
            Wanted::Tag(tag) => format!("refs/tags/{tag}"),
        }
    }

    /// The reference in words, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Wanted::Commit { id, branch: None } => format!("commit {id}"),
            Wanted::Commit { id, branch: Some(branch) } => format!("commit {id} (branch {branch:?})"),
            Wanted::Name(name) => format!("reference {name:?}"),
            Wanted::Semver(range) => format!("semver range {:?}", range.text()),
            Wanted::Tag(tag) => format!("tag {tag:?}"),
            Wanted::Branch(branch) => format!("branch {branch:?}"),
            Wanted::DefaultBranch => "default branch (HEAD)".into(),
        }
    }

    /// The commit this reference means among `refs`.
    pub(crate) fn resolve(&self, refs: &[Advertised]) -> Result<Resolved, Unresolved> {
        let find = |name: &str| refs.iter().find(|r| r.name == name);
        let named = |label: &str, name: &str| {
            find(name)
                .map(|r| Resolved {
                    label: Some(label.to_string()),
                    reference: Some(name.to_string()),
                    commit: r.commit,
                })
                .ok_or_else(|| Unresolved::NotFound(self.describe()))
        };
        match self {
            Wanted::Commit { id, branch } => {
                if let Some(branch) = branch {
                    named(branch, &format!("refs/heads/{branch}"))?;
                }
                Ok(Resolved { label: branch.clone(), reference: None, commit: *id })
            }
            Wanted::Name(name) => named(name, name),
            Wanted::Tag(tag) => named(tag, &format!("refs/tags/{tag}")),
            Wanted::Branch(branch) => named(branch, &format!("refs/heads/{branch}")),
            Wanted::DefaultBranch => {
                let head = find("HEAD").ok_or_else(|| Unresolved::NotFound(self.describe()))?;
                let label = head
                    .symref
                    .as_deref()
                    .map(|target| target.strip_prefix("refs/heads/").unwrap_or(target).to_string());
                Ok(Resolved { label, reference: Some("HEAD".into()), commit: head.commit })
            }
            Wanted::Semver(range) => {
                let tags = refs.iter().filter_map(|r| r.name.strip_prefix("refs/tags/"));
                let (best, versions) = range.highest(tags.clone());
                match best {
                    Some(tag) => named(tag, &format!("refs/tags/{tag}")),
                    None => Err(Unresolved::NoMatchingTag { tags: tags.count(), versions }),
                }
            }
        }
    }
}

/// The revision string, as Flux writes it: `main@sha1:<commit>`, or `sha1:<commit>` for a bare
/// commit.
pub(crate) fn revision(label: Option<&str>, commit: &ObjectId) -> String {
    match label {
        Some(label) => format!("{label}@sha1:{commit}"),
        None => format!("sha1:{commit}"),
    }
}

/// `name` if `prefix` + `name` is a valid reference name.
fn checked(name: String, field: &str, prefix: &str) -> Result<String, String> {
    let full = format!("{prefix}{name}");
    match gix::validate::reference::name(full.as_str().into()) {
        Ok(_) => Ok(name),
        Err(e) => Err(format!("ref.{field}: {name:?} is not a valid reference name: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(byte: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[byte; 20])
    }

    fn reference(fields: &[(&str, &str)]) -> GitReference {
        let mut r = GitReference::default();
        for (field, value) in fields {
            let value = Some(value.to_string());
            match *field {
                "branch" => r.branch = value,
                "tag" => r.tag = value,
                "semver" => r.semver = value,
                "name" => r.name = value,
                "commit" => r.commit = value,
                _ => unreachable!("{field}"),
            }
        }
        r
    }

    #[test]
    fn precedence_is_commit_name_semver_tag_branch() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[], "default branch (HEAD)"),
            (&[("branch", "main")], "branch \"main\""),
            (&[("branch", "main"), ("tag", "v1")], "tag \"v1\""),
            (&[("tag", "v1"), ("semver", "^1")], "semver range \"^1\""),
            (&[("semver", "^1"), ("name", "refs/pull/1/head")], "reference \"refs/pull/1/head\""),
            (&[("name", "refs/pull/1/head"), ("commit", sha)], &format!("commit {sha}")),
            (&[("branch", "dev"), ("commit", sha)], &format!("commit {sha} (branch \"dev\")")),
            (&[("branch", " "), ("tag", "")], "default branch (HEAD)"),
        ];
        for (fields, expected) in cases {
            let wanted = Wanted::from_spec(Some(&reference(fields))).expect("valid");
            assert_eq!(&wanted.describe(), expected, "{fields:?}");
        }
        assert_eq!(Wanted::from_spec(None).expect("valid").describe(), "default branch (HEAD)");
    }

    #[test]
    fn bad_references_are_refused_naming_the_field() {
        for (fields, why) in [
            (&[("commit", "abc123")][..], "ref.commit: \"abc123\" is not a full 40-character commit SHA"),
            (&[("commit", "z123456789abcdef0123456789abcdef01234567")], "ref.commit"),
            (&[("semver", ">=")], "ref.semver: "),
            (&[("name", "pull/1/head")], "ref.name: \"pull/1/head\" must be a full reference name"),
            (&[("branch", "a..b")], "ref.branch: \"a..b\" is not a valid reference name"),
            (&[("tag", "v1 beta")], "ref.tag: "),
        ] {
            let error = Wanted::from_spec(Some(&reference(fields))).expect_err(why);
            assert!(error.starts_with(why), "{fields:?}: {error}");
        }
    }

    #[test]
    fn references_resolve_to_commits_and_revisions_as_flux_writes_them() {
        let advertised = |name: &str, target: u8, commit: u8| Advertised {
            name: name.into(),
            target: id(target),
            commit: id(commit),
            symref: None,
        };
        let refs = vec![
            Advertised { symref: Some("refs/heads/main".into()), ..advertised("HEAD", 1, 1) },
            advertised("refs/heads/main", 1, 1),
            advertised("refs/heads/dev", 2, 2),
            advertised("refs/tags/v1.0.0", 3, 3),
            advertised("refs/tags/v1.2.0", 4, 5),
            advertised("refs/tags/v2.0.0", 6, 6),
            advertised("refs/tags/nightly", 7, 7),
            advertised("refs/pull/1/head", 8, 8),
        ];
        let resolve = |fields: &[(&str, &str)]| {
            let wanted = Wanted::from_spec(Some(&reference(fields))).expect("valid");
            wanted.resolve(&refs).map(|r| (revision(r.label.as_deref(), &r.commit), r.reference))
        };
        let sha = |byte: u8| id(byte).to_string();
        const PINNED: &str = "0909090909090909090909090909090909090909";
        let pinned = sha(9);
        assert_eq!(pinned, PINNED);
        type Case<'a> = (&'a [(&'a str, &'a str)], Result<(String, Option<&'a str>), Unresolved>);
        let cases: Vec<Case<'_>> = vec![
            (&[], Ok((format!("main@sha1:{}", sha(1)), Some("HEAD")))),
            (&[("branch", "dev")], Ok((format!("dev@sha1:{}", sha(2)), Some("refs/heads/dev")))),
            (&[("tag", "v1.2.0")], Ok((format!("v1.2.0@sha1:{}", sha(5)), Some("refs/tags/v1.2.0")))),
            (&[("semver", "^1")], Ok((format!("v1.2.0@sha1:{}", sha(5)), Some("refs/tags/v1.2.0")))),
            (
                &[("name", "refs/pull/1/head")],
                Ok((format!("refs/pull/1/head@sha1:{}", sha(8)), Some("refs/pull/1/head"))),
            ),
            (&[("commit", PINNED)], Ok((format!("sha1:{pinned}"), None))),
            (&[("commit", PINNED), ("branch", "dev")], Ok((format!("dev@sha1:{pinned}"), None))),
            (&[("branch", "gone")], Err(Unresolved::NotFound("branch \"gone\"".into()))),
            (
                &[("commit", PINNED), ("branch", "gone")],
                Err(Unresolved::NotFound(format!("commit {pinned} (branch \"gone\")"))),
            ),
            (&[("semver", "^3")], Err(Unresolved::NoMatchingTag { tags: 4, versions: 3 })),
        ];
        for (fields, expected) in cases {
            let expected = expected.map(|(rev, reference)| (rev, reference.map(str::to_string)));
            assert_eq!(resolve(fields), expected, "{fields:?}");
        }
        let detached = vec![advertised("HEAD", 1, 1)];
        let resolved = Wanted::DefaultBranch.resolve(&detached).expect("detached HEAD");
        assert_eq!(revision(resolved.label.as_deref(), &resolved.commit), format!("sha1:{}", sha(1)));
        assert_eq!(Wanted::DefaultBranch.resolve(&[]), Err(Unresolved::NotFound("default branch (HEAD)".into())));
    }
}
