//! Flux's notification kinds served by bosun's own: each `Provider`, `Alert` (v1beta3) and
//! `Receiver` (v1) of `notification.toolkit.fluxcd.io` is read into the bosun object that does
//! the same (`translate_*`, pure) and written as its child (same name and namespace, owned,
//! deleted with it), which bosun's alert and receiver controllers serve (the Packages doing
//! the work of Kustomizations and HelmReleases publish their events on those, as Flux does);
//! a Receiver's status (its webhook path) is written back
//! as notification-controller writes it. Providers and Alerts have no status in v1beta3: a
//! field bosun cannot honour is a Warning event on the object (`UnsupportedField`).

use std::{marker::PhantomData, time::Duration};

use kube::{Client, Resource};
use serde_json::{Value, json};

use bosun_api::flux::notification::{
    AlertSpec, CrossNamespaceObjectReference, FluxAlert, FluxProvider, FluxReceiver, ProviderSpec, ReceiverSpec,
};
use bosun_api::notification::{
    AlertResource, EventSource, ProviderResource, ProviderType, ReceiverResource, ReceiverType, ResourceSelector,
    Severity,
};
use bosun_api::{API_VERSION, LocalObjectReference};
use bosun_kit::{self as kit, Failure, Object, Run};

use super::child;
use crate::fetch::unsupported::{self, Unsupported};

/// A Flux notification kind and the bosun kind that serves it.
pub(crate) trait Notifying:
    Object + kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
{
    /// The bosun kind written as the child.
    type Child: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static;
    /// The Flux kind.
    const KIND: &'static str;
    /// Whether the Flux kind has a status to write.
    const STATUS: bool;

    /// The child's spec.
    fn child_spec(&self) -> Result<Value, Unsupported>;

    /// The status written back from the child's (kinds with a status).
    fn status_from(_child: &Self::Child, _run: &mut Run<Self>) {}
}

/// The reconciler of one Flux notification kind.
pub(crate) struct Notifications<K>(PhantomData<fn() -> K>);

/// The controller of Flux's notification kind `K`, as `flux-<kind>`: a change of the object or
/// of its child reconciles it.
pub(crate) fn controller<K: Notifying>(client: Client, scope: &super::Scope) -> kit::Controller<Notifications<K>> {
    let name = format!("flux-{}", K::KIND.to_lowercase());
    let controller = kit::Controller::new(&name, Notifications(PhantomData), client)
        .owns::<K::Child>()
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone());
    if K::STATUS { controller } else { controller.without_status() }
}

impl<K: Notifying> kit::Reconciler for Notifications<K> {
    type Resource = K;

    async fn reconcile(&self, run: &mut Run<K>) -> Result<(), Failure> {
        let existing = child::existing::<K, K::Child>(run, K::KIND).await?;
        let spec = run
            .object()
            .child_spec()
            .map_err(|e| Failure::give_up(unsupported::REASON, format!("{}: {e}", run.describe())))?;
        let metadata = json!({"name": run.name(), "labels": run.object().meta().labels.clone().unwrap_or_default()});
        let child = json!({"apiVersion": API_VERSION, "kind": K::Child::kind(&()), "metadata": metadata, "spec": spec});
        let described = run.describe().to_string();
        run.children
            .add_value(child)
            .map_err(|e| Failure::give_up("ReconciliationFailed", format!("{described}: {e}")))?;
        run.apply_children().await?;
        if let Some(existing) = existing {
            K::status_from(&existing, run);
        }
        Ok(())
    }
}

/// Flux's provider types bosun sends to.
fn provider_type(flux: &str) -> Option<ProviderType> {
    Some(match flux {
        "generic" => ProviderType::Generic,
        "generic-hmac" => ProviderType::GenericHmac,
        "slack" => ProviderType::Slack,
        "alertmanager" => ProviderType::Alertmanager,
        _ => return None,
    })
}

/// The bosun `Provider` doing what a Flux Provider asks.
pub(crate) fn translate_provider(spec: &ProviderSpec) -> Result<bosun_api::notification::ProviderSpec, Unsupported> {
    unsupported::refuse(&[
        ("spec.type", provider_type(&spec.type_).is_none()),
        ("spec.certSecretRef", spec.cert_secret_ref.is_some()),
        ("spec.proxy", spec.proxy.is_some()),
        ("spec.proxySecretRef", spec.proxy_secret_ref.is_some()),
        ("spec.serviceAccountName", spec.service_account_name.is_some()),
        ("spec.commitStatusExpr", spec.commit_status_expr.is_some()),
    ])?;
    Ok(bosun_api::notification::ProviderSpec {
        type_: provider_type(&spec.type_).unwrap_or_default(),
        address: spec.address.clone(),
        channel: spec.channel.clone(),
        username: spec.username.clone(),
        secret_ref: spec.secret_ref.as_ref().map(|r| LocalObjectReference { name: r.name.clone() }),
        timeout: spec.timeout,
        suspend: spec.suspend,
    })
}

/// An event source as bosun's Alert names one.
fn event_source(source: &CrossNamespaceObjectReference) -> EventSource {
    EventSource {
        kind: source.kind.clone(),
        name: source.name.clone(),
        namespace: source.namespace.clone(),
        match_labels: source.match_labels.clone(),
    }
}

/// The bosun `Alert` doing what a Flux Alert asks (its Provider is the bosun Provider of the
/// same name, the Flux Provider's child).
pub(crate) fn translate_alert(spec: &AlertSpec) -> bosun_api::notification::AlertSpec {
    let mut event_metadata = spec.event_metadata.clone();
    if let Some(summary) = &spec.summary {
        event_metadata.entry("summary".into()).or_insert_with(|| summary.clone());
    }
    bosun_api::notification::AlertSpec {
        provider_ref: Some(LocalObjectReference { name: spec.provider_ref.name.clone() }),
        provider: None,
        event_sources: spec.event_sources.iter().map(event_source).collect(),
        event_severity: Some(match spec.event_severity.as_deref() {
            Some("error") => Severity::Error,
            _ => Severity::Info,
        }),
        inclusion_list: spec.inclusion_list.clone(),
        exclusion_list: spec.exclusion_list.clone(),
        event_metadata,
        suspend: spec.suspend,
    }
}

/// The bosun `Receiver` doing what a Flux Receiver asks.
pub(crate) fn translate_receiver(spec: &ReceiverSpec) -> Result<bosun_api::notification::ReceiverSpec, Unsupported> {
    let type_ = match spec.type_.as_str() {
        "generic" => Some(ReceiverType::Generic),
        "generic-hmac" => Some(ReceiverType::GenericHmac),
        "github" => Some(ReceiverType::Github),
        "gitlab" => Some(ReceiverType::Gitlab),
        _ => None,
    };
    unsupported::refuse(&[("spec.type", type_.is_none()), ("spec.resourceFilter", spec.resource_filter.is_some())])?;
    Ok(bosun_api::notification::ReceiverSpec {
        type_: type_.unwrap_or_default(),
        events: spec.events.clone(),
        resources: spec
            .resources
            .iter()
            .map(|r| ResourceSelector {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                namespace: r.namespace.clone(),
                match_labels: r.match_labels.clone(),
            })
            .collect(),
        secret_ref: LocalObjectReference { name: spec.secret_ref.name.clone() },
        interval: spec.interval,
        suspend: spec.suspend,
    })
}

impl Notifying for FluxProvider {
    type Child = ProviderResource;
    const KIND: &'static str = "Provider";
    const STATUS: bool = false;

    fn child_spec(&self) -> Result<Value, Unsupported> {
        Ok(serde_json::to_value(translate_provider(&self.spec)?).unwrap_or_default())
    }
}

impl Notifying for FluxAlert {
    type Child = AlertResource;
    const KIND: &'static str = "Alert";
    const STATUS: bool = false;

    fn child_spec(&self) -> Result<Value, Unsupported> {
        Ok(serde_json::to_value(translate_alert(&self.spec)).unwrap_or_default())
    }
}

impl Notifying for FluxReceiver {
    type Child = ReceiverResource;
    const KIND: &'static str = "Receiver";
    const STATUS: bool = true;

    fn child_spec(&self) -> Result<Value, Unsupported> {
        Ok(serde_json::to_value(translate_receiver(&self.spec)?).unwrap_or_default())
    }

    /// The webhook path and `Ready`, as bosun's Receiver reports them.
    fn status_from(child: &ReceiverResource, run: &mut Run<Self>) {
        let Some(status) = &child.status else { return };
        run.set_status("webhookPath", &status.webhook_path);
        if let Some(ready) = status.conditions.iter().find(|c| c.type_ == "Ready") {
            run.condition("Ready", ready.status == "True", &ready.reason, &ready.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).expect("spec")
    }

    #[test]
    fn providers_of_the_kinds_bosun_sends_to_are_translated_and_others_refused() {
        let spec: ProviderSpec = from(json!({"type": "slack", "channel": "ops", "secretRef": {"name": "webhook"}}));
        let provider = translate_provider(&spec).expect("slack");
        assert_eq!((provider.type_, provider.channel.as_deref()), (ProviderType::Slack, Some("ops")));
        assert_eq!(provider.secret_ref.map(|r| r.name).as_deref(), Some("webhook"));
        for (spec, field) in [
            (json!({"type": "msteams"}), "spec.type"),
            (json!({"type": "generic", "certSecretRef": {"name": "ca"}}), "spec.certSecretRef"),
            (json!({"type": "generic", "proxy": "http://proxy:3128"}), "spec.proxy"),
        ] {
            assert_eq!(translate_provider(&from(spec)).expect_err(field).field, field);
        }
    }

    #[test]
    fn alerts_keep_their_sources_severity_and_metadata() {
        let spec: AlertSpec = from(json!({
            "providerRef": {"name": "slack"}, "eventSeverity": "error", "summary": "prod",
            "eventSources": [
                {"kind": "Kustomization", "name": "*"},
                {"kind": "HelmRelease", "name": "web", "namespace": "apps"},
                {"kind": "GitRepository", "name": "fleet"},
            ],
        }));
        let alert = translate_alert(&spec);
        let expected: Vec<EventSource> = from(json!([
            {"kind": "Kustomization", "name": "*"},
            {"kind": "HelmRelease", "name": "web", "namespace": "apps"},
            {"kind": "GitRepository", "name": "fleet"},
        ]));
        assert_eq!(alert.event_sources, expected);
        assert_eq!(alert.event_severity, Some(Severity::Error));
        assert_eq!(alert.event_metadata["summary"], "prod");
        assert_eq!(alert.provider_ref.map(|r| r.name).as_deref(), Some("slack"));
    }

    #[test]
    fn receivers_keep_their_resources_and_refuse_what_bosun_cannot_check() {
        let spec: ReceiverSpec = from(json!({
            "type": "github", "events": ["push"], "secretRef": {"name": "token"},
            "resources": [{"kind": "GitRepository", "name": "fleet"}],
        }));
        let receiver = translate_receiver(&spec).expect("github");
        assert_eq!(receiver.type_, ReceiverType::Github);
        assert_eq!(
            (receiver.resources[0].kind.as_str(), receiver.resources[0].name.as_str()),
            ("GitRepository", "fleet")
        );
        let harbor: ReceiverSpec = from(json!({"type": "harbor", "secretRef": {"name": "t"}, "resources": []}));
        assert_eq!(translate_receiver(&harbor).expect_err("harbor").field, "spec.type");
    }
}
