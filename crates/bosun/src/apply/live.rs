//! Reading and writing live objects: the reads and dry runs a group's decisions need (one
//! paged list where a resource holds many of the package's objects), server-side apply and
//! delete.

use std::{collections::HashMap, future::Future, time::Duration};

use futures::{StreamExt, stream};
use kube::{
    Client, Resource,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
};
use serde_json::Value;

use super::{
    Cache, FIELD_MANAGER, Item,
    decide::{DryRunFinding, Refusal},
};
use crate::report::Cause;
use bosun_api::package::Action;
use bosun_core::object;
use bosun_core::ssa;

/// What a dry run found for one object.
pub(super) struct DryRun {
    pub(super) live: Option<Value>,
    /// The object as applying would leave it; `None` when the live object alone proves that
    /// applying changes nothing.
    pub(super) result: Result<Option<Value>, kube::Error>,
}

impl DryRun {
    /// Whether the object exists and applying would change nothing.
    pub(super) fn unchanged(&self) -> bool {
        match (&self.live, &self.result) {
            (Some(_), Ok(None)) => true,
            (Some(live), Ok(Some(result))) => !ssa::would_change(live, result, FIELD_MANAGER),
            _ => false,
        }
    }
}

impl DryRun {
    /// What the dry run found, for [`decide::after_dry_run`].
    pub(super) fn finding(&self) -> DryRunFinding {
        match &self.result {
            Ok(_) => DryRunFinding::Passed { exists: self.live.is_some(), unchanged: self.unchanged() },
            Err(error) => {
                let cause = match missing_namespace(error) {
                    Some(namespace) => Refusal::MissingNamespace(namespace.to_string()),
                    None if immutable(error) => Refusal::Immutable,
                    None => Refusal::Other,
                };
                DryRunFinding::Refused { message: message(error), cause, reported: Cause::of(error) }
            }
        }
    }
}

pub(super) fn message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

/// The namespace a 404 says is missing (`namespaces "x" not found`).
pub(super) fn missing_namespace(error: &kube::Error) -> Option<&str> {
    match error {
        kube::Error::Api(status) if status.code == 404 => {
            let details = status.details.as_ref()?;
            (details.kind == "namespaces").then_some(details.name.as_str())
        }
        _ => None,
    }
}

pub(super) fn immutable(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 422 && status.message.contains("field is immutable"))
}

/// How many times a request is sent when its connection is lost before the answer arrives.
const CONNECTION_ATTEMPTS: u32 = 4;

/// Sends `request` again (after 0.2, 0.4, 0.8 s) when the connection was lost before its answer.
///
/// kube-rs' client retries the answers that say "try again" (429 with `Retry-After`, 503, 504)
/// but not a lost connection, since the request may or may not have reached the server. Every
/// request of this module is idempotent — reads, server-side apply (the same configuration
/// applied again changes nothing, not even the `resourceVersion`) and delete (a second one
/// finds nothing, which counts as done) — so sending it again is safe, and lets a rollout ride
/// out a dropped connection instead of failing the object.
async fn idempotent<T, F, Fut>(mut request: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut delay = Duration::from_millis(200);
    for _ in 1..CONNECTION_ATTEMPTS {
        match request().await {
            Err(kube::Error::HyperError(_) | kube::Error::Service(_)) => {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            answered => return answered,
        }
    }
    request().await
}

pub(super) async fn server_side_apply(client: &Client, item: &Item, dry_run: bool) -> Result<Value, kube::Error> {
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    params.dry_run = dry_run;
    if !item.policy.validate {
        params = params.validation_ignore();
    }
    let api = item.api(client);
    let request = || async {
        // The answer is decoded straight into JSON, not into a `DynamicObject` that would then
        // be turned back into JSON: that round trip was a tenth of a first apply's client CPU.
        let mut request = kube::core::Request::new(api.resource_url())
            .patch(&item.name, &params, &Patch::Apply(&item.object))
            .map_err(kube::Error::BuildRequest)?;
        request.extensions_mut().insert("patch");
        client.request::<Value>(request).await
    };
    idempotent(request).await.map(header_first)
}

/// The object with `apiVersion`, `kind` and `metadata` first, as a `DynamicObject` writes it
/// and as listed objects come: diffs against the live object then compare like with like,
/// whatever order the server wrote the answer in.
fn header_first(object: Value) -> Value {
    let Value::Object(mut fields) = object else { return object };
    let mut ordered = serde_json::Map::with_capacity(fields.len());
    for key in ["apiVersion", "kind", "metadata"] {
        if let Some(value) = fields.shift_remove(key) {
            ordered.insert(key.to_string(), value);
        }
    }
    ordered.extend(fields);
    Value::Object(ordered)
}

/// What applying `item` would do, given its live state: without asking the server when the
/// live object proves the apply a no-op (or, for create-if-missing, that it exists), else by a
/// server-side dry run.
pub(super) async fn dry_run(
    client: &Client,
    item: &Item,
    action: Action,
    live: Result<Option<Value>, kube::Error>,
) -> DryRun {
    match live {
        Err(error) => DryRun { live: None, result: Err(error) },
        Ok(Some(live))
            if action == Action::CreateIfNotExist
                || (action == Action::Apply && ssa::apply_is_noop(&live, &item.object, FIELD_MANAGER)) =>
        {
            DryRun { live: Some(live), result: Ok(None) }
        }
        Ok(live) => DryRun { live, result: server_side_apply(client, item, true).await.map(Some) },
    }
}

/// Dry runs of many objects, `concurrency` at once, after reading their live state — and,
/// with `take_over` managers, handing their fields on the live objects to bosun first.
pub(super) async fn dry_runs(
    client: &Client,
    items: &[(&Item, Action)],
    concurrency: usize,
    cache: Option<&Cache>,
    take_over: Option<&[String]>,
) -> Vec<DryRun> {
    let mut live = live_objects(client, items, concurrency, cache).await;
    if let Some(managers) = take_over.filter(|managers| !managers.is_empty()) {
        let handed: Vec<_> = items
            .iter()
            .zip(live.iter_mut())
            .filter_map(|((item, _), live)| Some((*item, live.as_mut().ok()?.as_mut()?)))
            .map(|(item, live)| take_over_fields(client, item, live, managers, cache))
            .collect();
        stream::iter(handed).buffer_unordered(concurrency.max(1)).collect::<Vec<bool>>().await;
    }
    // Futures collected first, for the `Send` proof (see runner.rs).
    let runs: Vec<_> =
        items.iter().zip(live).map(|((item, action), live)| dry_run(client, item, *action, live)).collect();
    stream::iter(runs).buffered(concurrency.max(1)).collect().await
}

/// Server-side applies `item`; when the answer shows fields of `managers` (an object bosun
/// adopts, which the cache did not hold: it holds only objects bosun applied), hands them
/// over and applies again, so the fields the configuration does not set go at once.
pub(super) async fn apply_taking_over(client: &Client, item: &Item, managers: &[String]) -> Result<Value, kube::Error> {
    let mut applied = server_side_apply(client, item, false).await?;
    match !managers.is_empty() && take_over_fields(client, item, &mut applied, managers, None).await {
        true => server_side_apply(client, item, false).await,
        false => Ok(applied),
    }
}

/// Hands the fields of `managers` on `live` to bosun (one JSON patch), updates `live` to the
/// answer, and says whether it did. A failure (the object changed in between, a webhook
/// refused) only leaves the fields where they were, logged: the apply goes on, and the next
/// one tries again.
///
/// The cache keeps other managers' names but not their fields: what it says is to be taken
/// over is read whole from the server first (once: the fields are bosun's afterwards).
async fn take_over_fields(
    client: &Client,
    item: &Item,
    live: &mut Value,
    managers: &[String],
    cache: Option<&Cache>,
) -> bool {
    let now = jiff::Timestamp::now().round(jiff::Unit::Second).unwrap_or_else(|_| jiff::Timestamp::now()).to_string();
    if ssa::take_over(live, &item.object, managers, FIELD_MANAGER, &now).is_none() {
        return false;
    }
    let api = item.api(client);
    let whole = match cache {
        None => Some(live.clone()),
        Some(_) => match idempotent(|| api.get_opt(&item.name)).await {
            Ok(found) => found.map(|object| serde_json::to_value(object).unwrap_or_default()),
            Err(error) => {
                tracing::warn!(object = %item.described, "reading it to hand fields over failed: {}", message(&error));
                None
            }
        },
    };
    let patch = whole.and_then(|whole| ssa::take_over(&whole, &item.object, managers, FIELD_MANAGER, &now));
    let Some(Ok(patch)) = patch.map(serde_json::from_value::<json_patch::Patch>) else { return false };
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.to_string()), ..PatchParams::default() };
    match api.patch(&item.name, &params, &Patch::<()>::Json(patch)).await {
        Ok(answer) => {
            let answer = header_first(serde_json::to_value(answer).unwrap_or_default());
            if let Some(cache) = cache {
                cache.wrote(&item.kind, &answer).await;
            }
            tracing::debug!(object = %item.described, "fields of {managers:?} handed to {FIELD_MANAGER}");
            *live = answer;
            true
        }
        Err(error) => {
            tracing::warn!(object = %item.described, "handing the fields of {managers:?} over failed: {}", message(&error));
            false
        }
    }
}

/// From how many objects of one resource in one namespace a list (paged) is cheaper than a
/// read per object.
const LIST_FROM: usize = 8;

/// The live state of each item, in order: from the cache where it has them, else one paged
/// list per resource and namespace holding many of them, single reads for the rest (and when
/// listing is forbidden).
pub(super) async fn live_objects(
    client: &Client,
    writes: &[(&Item, Action)],
    concurrency: usize,
    cache: Option<&Cache>,
) -> Vec<Result<Option<Value>, kube::Error>> {
    let items: &[&Item] = &writes.iter().map(|(item, _)| *item).collect::<Vec<_>>();
    let mut live: Vec<Option<Result<Option<Value>, kube::Error>>> = items.iter().map(|_| None).collect();
    if let Some(cache) = cache {
        for (index, (item, action)) in writes.iter().enumerate() {
            let found = cache.object(&item.kind, &item.namespace, &item.name).await;
            // An object the cache lacks is taken as absent: what this process wrote is in it
            // at once (`Cache::wrote`), and a server-side apply of one another writer created
            // a moment ago only configures it. Not so for create-if-absent, which must not
            // touch an existing object: the server is asked.
            live[index] = match action {
                Action::CreateIfNotExist => found.filter(|found| found.is_some()),
                _ => found,
            }
            .map(Ok);
        }
    }
    let mut by_place: HashMap<(&str, &str, &str), Vec<usize>> = HashMap::new();
    for (index, item) in items.iter().enumerate().filter(|(index, _)| live[*index].is_none()) {
        let resource = &item.kind.resource;
        let place = (resource.api_version.as_str(), resource.plural.as_str(), item.namespace.as_str());
        by_place.entry(place).or_default().push(index);
    }
    // The lists go out together: an unchanged re-apply of several kinds waits for the slowest,
    // not for their sum.
    let lists: Vec<_> = by_place
        .values()
        .filter(|indexes| indexes.len() >= LIST_FROM)
        .map(|indexes| async move { (indexes, list_all(client, items[indexes[0]]).await) })
        .collect();
    let lists: Vec<_> = stream::iter(lists).buffer_unordered(concurrency.max(1)).collect().await;
    for (indexes, listed) in lists {
        let Ok(mut listed) = listed else { continue };
        for &index in indexes {
            let item = items[index];
            let found = listed.remove(&item.name).map(|mut object| {
                object["apiVersion"] = item.object["apiVersion"].clone();
                object["kind"] = item.object["kind"].clone();
                object
            });
            live[index] = Some(Ok(found));
        }
    }
    let missing: Vec<usize> = live.iter().enumerate().filter(|(_, found)| found.is_none()).map(|(i, _)| i).collect();
    let reads: Vec<_> = missing
        .into_iter()
        .map(|index| async move {
            let item = items[index];
            let api = item.api(client);
            let read = idempotent(|| api.get_opt(&item.name)).await;
            (index, read.map(|found| found.as_ref().map(object::to_value)))
        })
        .collect();
    let reads: Vec<(usize, Result<Option<Value>, kube::Error>)> =
        stream::iter(reads).buffered(concurrency.max(1)).collect().await;
    for (index, read) in reads {
        live[index] = Some(read);
    }
    live.into_iter().map(|found| found.unwrap_or(Ok(None))).collect()
}

/// Every object of a resource in a namespace (or cluster-wide), by name, 500 per page. Read
/// as plain JSON: these objects are only compared, never typed.
pub(super) async fn list_all(client: &Client, item: &Item) -> Result<HashMap<String, Value>, kube::Error> {
    let namespace = item.kind.namespaced.then_some(item.namespace.as_str());
    let request = kube::core::Request::new(DynamicObject::url_path(&item.kind.resource, namespace));
    let mut objects = HashMap::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page_request = || async { client.request(request.list(&params).map_err(kube::Error::BuildRequest)?).await };
        let mut page: Value = idempotent(page_request).await?;
        if let Some(Value::Array(items)) = page.get_mut("items").map(Value::take) {
            for object in items {
                let name = object::name(&object).to_string();
                objects.insert(name, object);
            }
        }
        match page.pointer("/metadata/continue").and_then(Value::as_str) {
            Some(token) if !token.is_empty() => params = params.continue_token(token),
            _ => return Ok(objects),
        }
    }
}

pub(super) async fn delete(client: &Client, item: &Item) -> Result<(), kube::Error> {
    let (api, params) = (item.api(client), DeleteParams::background());
    match idempotent(|| api.delete(&item.name, &params)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_first_puts_the_header_first_and_keeps_the_rest_in_order() {
        let cases = [
            (
                json!({"apiVersion": "v1", "data": {"b": "1", "a": "2"}, "kind": "ConfigMap", "metadata": {"name": "x"}, "binaryData": {}}),
                vec!["apiVersion", "kind", "metadata", "data", "binaryData"],
            ),
            (json!({"spec": 1, "metadata": {}, "status": 2}), vec!["metadata", "spec", "status"]),
            (json!({}), vec![]),
        ];
        for (object, keys) in cases {
            let ordered = header_first(object.clone());
            let got: Vec<&str> = ordered.as_object().unwrap().keys().map(String::as_str).collect();
            assert_eq!(got, keys, "{object}");
            assert_eq!(ordered, object, "the same object, only reordered");
        }
        assert_eq!(header_first(json!("text")), json!("text"));
    }
}
