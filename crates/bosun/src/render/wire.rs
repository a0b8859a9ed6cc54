//! What passes between a controller and its render worker (see [`super::worker`]), one JSON
//! line at a time: the request on the worker's stdin; on its stdout, `lookup` calls (each
//! answered on its stdin) and then the render or the error.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use bosun_core::scopes::Scopes;

use crate::package::Package;

use bosun_api::package::RolloutSpec;

use super::{CommandLimits, HelmContext, HookStyle, Manifests, Rendered, Response, Sandbox};

/// A render, as the worker is asked for it: what [`super::Input`] holds, with `lookup` turned
/// into a flag (the calls come back to the controller) and the keys as text.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Request {
    pub(crate) package: Package,
    pub(crate) config: Value,
    pub(crate) extra: BTreeMap<String, Value>,
    pub(crate) allow_empty: bool,
    /// The age identities, as an identity file.
    pub(crate) keys: Option<String>,
    pub(crate) helm: Option<Helm>,
    pub(crate) sandbox: Option<WireSandbox>,
    /// The scopes known beyond the built-ins: (API group, kind, namespaced).
    pub(crate) scopes: Vec<(String, String, bool)>,
    /// Namespaced objects that name none go here (`kubectl apply -n`).
    pub(crate) default_namespace: Option<String>,
}

/// [`HelmContext`] without its `lookup` callback: only whether there is one.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Helm {
    namespace: String,
    revision: i64,
    is_upgrade: bool,
    values_from: Option<Vec<(String, String)>>,
    capabilities: Option<bosun_helm::release::Capabilities>,
    lookup: bool,
    release_name: Option<String>,
    object_values: Option<Value>,
}

impl Helm {
    pub(crate) fn from_context(context: &HelmContext) -> Helm {
        Helm {
            namespace: context.namespace.clone(),
            revision: context.revision,
            is_upgrade: context.is_upgrade,
            values_from: context.values_from.clone(),
            capabilities: context.capabilities.clone(),
            lookup: context.lookup.is_some(),
            release_name: context.release_name.clone(),
            object_values: context.object_values.clone(),
        }
    }

    /// The context in the worker, `lookup` (when there was one) going back to the controller.
    pub(crate) fn into_context(self, lookup: Arc<dyn bosun_helm::engine::Lookup>) -> HelmContext {
        HelmContext {
            namespace: self.namespace,
            revision: self.revision,
            is_upgrade: self.is_upgrade,
            values_from: self.values_from,
            capabilities: self.capabilities,
            lookup: self.lookup.then_some(lookup),
            release_name: self.release_name,
            object_values: self.object_values,
        }
    }
}

/// [`Sandbox`] as the worker gets it: it renders in process, so it has no worker of its own.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WireSandbox {
    root: PathBuf,
    exec: Option<CommandLimits>,
    remote_bases: bool,
}

impl WireSandbox {
    pub(crate) fn from_sandbox(sandbox: &Sandbox) -> WireSandbox {
        WireSandbox { root: sandbox.root.clone(), exec: sandbox.exec.clone(), remote_bases: sandbox.remote_bases }
    }

    pub(crate) fn into_sandbox(self) -> Sandbox {
        Sandbox { root: self.root, exec: self.exec, remote_bases: self.remote_bases, worker: None }
    }
}

/// The scopes of a request, back as [`Scopes`].
pub(super) fn scopes(entries: &[(String, String, bool)]) -> Scopes {
    let mut scopes = Scopes::builtin();
    for (group, kind, namespaced) in entries {
        scopes.insert(group, kind, *namespaced);
    }
    scopes
}

/// A line the worker writes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum FromWorker {
    /// A chart's `lookup`: the controller answers with a [`LookupAnswer`] line.
    Lookup { api_version: String, kind: String, namespace: String, name: String },
    /// The render.
    Rendered(WireRendered),
    /// The render failed: the error's message.
    Failed(String),
}

/// The controller's answer to a `lookup`: the object (none: not found), or why it failed.
pub(super) type LookupAnswer = Result<Option<Value>, String>;

/// [`Rendered`], its manifests as (key, object) in order.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct WireRendered {
    manifests: Vec<(String, Value)>,
    rollout: Option<RolloutSpec>,
    warnings: Vec<String>,
    response: Response,
    hooks: HookStyle,
    notes: String,
    release: Option<Box<bosun_helm::storage::Release>>,
}

impl From<Rendered> for WireRendered {
    fn from(rendered: Rendered) -> WireRendered {
        WireRendered {
            manifests: rendered.manifests.items.into_iter().map(|m| (m.key, m.object)).collect(),
            rollout: rendered.rollout,
            warnings: rendered.warnings,
            response: rendered.response,
            hooks: rendered.hooks,
            notes: rendered.notes,
            release: rendered.release,
        }
    }
}

impl From<WireRendered> for Rendered {
    fn from(wire: WireRendered) -> Rendered {
        let mut manifests = Manifests::default();
        for (key, object) in wire.manifests {
            manifests.push(key, object);
        }
        Rendered {
            manifests,
            rollout: wire.rollout,
            warnings: wire.warnings,
            response: wire.response,
            hooks: wire.hooks,
            notes: wire.notes,
            release: wire.release,
        }
    }
}

/// One line of JSON (no newline inside: serde_json escapes them in strings).
pub(super) fn line(value: &impl Serialize) -> String {
    let mut text = serde_json::to_string(value).unwrap_or_else(|e| format!("{:?}", e.to_string()));
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_rendered_package_comes_back_as_it_was_rendered() {
        let mut manifests = Manifests::default();
        manifests.push("b.yaml".into(), json!({"kind": "ConfigMap", "metadata": {"name": "b"}}));
        manifests.push("a.yaml#1".into(), json!({"kind": "Secret", "metadata": {"name": "a"}}));
        let rendered = Rendered {
            manifests,
            rollout: None,
            warnings: vec!["careful".into()],
            response: Response { finalized: Some(true), ..Response::default() },
            hooks: HookStyle::Helm,
            notes: "installed".into(),
            release: Some(Box::new(bosun_helm::storage::Release::new("web", "apps", 3))),
        };
        let text = line(&FromWorker::Rendered(rendered.clone().into()));
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        let FromWorker::Rendered(back) = serde_json::from_str(&text).expect("parses") else { panic!("{text}") };
        let back = Rendered::from(back);
        assert_eq!(back, rendered);
        assert_eq!(back.manifests.get("a.yaml#1").map(|m| m.describe()), Some("Secret/a".into()));
    }

    #[test]
    fn each_line_kind_reads_back() {
        let cases = [
            (
                FromWorker::Lookup {
                    api_version: "v1".into(),
                    kind: "Secret".into(),
                    namespace: "team".into(),
                    name: "db\nx".into(),
                },
                r#"{"lookup":{"api_version":"v1","kind":"Secret","namespace":"team","name":"db\nx"}}"#,
            ),
            (FromWorker::Failed("jsonnet main.jsonnet: boom".into()), r#"{"failed":"jsonnet main.jsonnet: boom"}"#),
        ];
        for (message, expected) in cases {
            let text = line(&message);
            assert_eq!(text.trim_end(), expected);
            let back: FromWorker = serde_json::from_str(&text).expect("parses");
            assert_eq!(format!("{back:?}"), format!("{message:?}"));
        }
        let answers: [LookupAnswer; 3] = [Ok(None), Ok(Some(json!({"kind": "Secret"}))), Err("forbidden".into())];
        for answer in answers {
            assert_eq!(serde_json::from_str::<LookupAnswer>(&line(&answer)).expect("parses"), answer);
        }
    }

    #[test]
    fn the_sandbox_and_scopes_cross_without_the_worker() {
        let sandbox = Sandbox {
            root: "/snap".into(),
            exec: Some(CommandLimits::default()),
            remote_bases: true,
            worker: Some(super::super::Worker::new("/bin/bosun".into(), super::super::WorkerLimits::default())),
        };
        let back: WireSandbox = serde_json::from_str(&line(&WireSandbox::from_sandbox(&sandbox))).expect("parses");
        assert_eq!(back.into_sandbox(), Sandbox { worker: None, ..sandbox });
        let mut known = Scopes::builtin();
        known.insert("example.com", "Widget", false);
        let entries: Vec<(String, String, bool)> =
            known.entries().map(|(g, k, n)| (g.to_string(), k.to_string(), n)).collect();
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        assert_eq!(scopes(&entries).namespaced(&widget), Some(false));
    }
}
