//! Field ownership (`metadata.managedFields`) and server-side apply, as structured-merge-diff
//! does it upstream: every writer ("manager") owns the fields it set; an apply sets exactly the
//! fields of its configuration, conflicts with other owners of fields it would change, and
//! removes fields it owned before and no longer sets; updates take over what they change.
//! Pure functions of the live object, the request and the type information.

pub mod set;

use serde_json::{Map, Value, json};

use crate::{
    error::{ApiError, StatusCause},
    types::{ListKind, Node},
};
use set::{Element, FieldSet, Path};

/// Managers kept as separate `Update` entries before older ones are merged.
const MAX_UPDATE_ENTRIES: usize = 10;

/// The kind of write that made an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or a non-apply patch.
    Update,
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The manager.
    pub manager: String,
    /// How it wrote.
    pub operation: Operation,
    /// The API version it wrote with.
    pub api_version: String,
    /// When its fields last changed.
    pub time: String,
    /// `status` for writes through `/status`, else empty.
    pub subresource: String,
    /// What it owns.
    pub fields: FieldSet,
}

impl Entry {
    fn is(&self, manager: &str, operation: Operation, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }

    fn to_value(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": if self.operation == Operation::Apply { "Apply" } else { "Update" },
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": self.fields.to_fields_v1(),
        });
        if !self.subresource.is_empty() {
            entry["subresource"] = json!(self.subresource);
        }
        entry
    }

    fn from_value(value: &Value) -> Option<Entry> {
        let text = |field: &str| value.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
        Some(Entry {
            manager: text("manager"),
            operation: if text("operation") == "Apply" { Operation::Apply } else { Operation::Update },
            api_version: text("apiVersion"),
            time: text("time"),
            subresource: text("subresource"),
            fields: FieldSet::from_fields_v1(value.get("fieldsV1")?),
        })
    }
}

/// The entries of an object.
pub fn entries(object: &Value) -> Vec<Entry> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Entry::from_value).collect())
        .unwrap_or_default()
}

fn write_entries(object: &mut Value, entries: &[Entry]) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let kept: Vec<Value> = entries.iter().filter(|e| !e.fields.is_empty()).map(Entry::to_value).collect();
    if kept.is_empty() {
        metadata.remove("managedFields");
    } else {
        metadata.insert("managedFields".into(), Value::Array(kept));
    }
}

fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(metadata) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    copy
}

/// A field another manager owns with a different value.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The owner.
    pub manager: String,
    /// Its operation.
    pub operation: Operation,
    /// The API version it wrote with.
    pub api_version: String,
    /// Its subresource.
    pub subresource: String,
    /// The field.
    pub path: Path,
}

impl Conflict {
    fn owner(&self) -> String {
        let mut owner = format!("{:?}", self.manager);
        if self.operation == Operation::Update {
            owner.push_str(&format!(" using {}", self.api_version));
        }
        if !self.subresource.is_empty() {
            owner.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        owner
    }
}

/// The 409 answer for apply conflicts, with upstream's message and causes.
pub fn conflicts_error(info: &crate::registry::ResourceInfo, name: &str, conflicts: &[Conflict]) -> ApiError {
    let message = if let [one] = conflicts {
        format!("Apply failed with 1 conflict: conflict with {}: {}", one.owner(), set::display(&one.path))
    } else {
        let mut text = format!("Apply failed with {} conflicts: ", conflicts.len());
        let mut owners: Vec<String> = Vec::new();
        for conflict in conflicts {
            let owner = conflict.owner();
            if !owners.contains(&owner) {
                owners.push(owner);
            }
        }
        let parts: Vec<String> = owners
            .iter()
            .map(|owner| {
                let paths: Vec<String> = conflicts
                    .iter()
                    .filter(|c| &c.owner() == owner)
                    .map(|c| format!("- {}", set::display(&c.path)))
                    .collect();
                format!("conflicts with {owner}:\n{}", paths.join("\n"))
            })
            .collect();
        text.push_str(&parts.join("\n"));
        text
    };
    let mut error = ApiError::conflict(info, name).with_message(message);
    if let Some(details) = error.details.as_mut() {
        details.causes = conflicts
            .iter()
            .map(|c| StatusCause {
                reason: "FieldManagerConflict",
                message: format!("conflict with {}", c.owner()),
                field: set::display(&c.path),
            })
            .collect();
    }
    error
}

/// Merges an applied configuration into the live object by the type's rules.
fn merge(live: &Value, applied: &Value, node: Node) -> Value {
    match (live, applied) {
        (Value::Object(current), Value::Object(patch)) if !node.is_atomic_map() => {
            let mut out = current.clone();
            for (key, value) in patch {
                let merged = match current.get(key) {
                    Some(existing) => merge(existing, value, node.field(key)),
                    None => value.clone(),
                };
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(current), Value::Array(patch)) => match node.list_kind() {
            ListKind::Atomic => applied.clone(),
            ListKind::Set => {
                let mut out = current.clone();
                for item in patch {
                    if !out.contains(item) {
                        out.push(item.clone());
                    }
                }
                Value::Array(out)
            }
            ListKind::Map(keys) => {
                let item_node = node.item();
                let mut out = current.clone();
                for item in patch {
                    let key = Element::key(item, &keys);
                    match out.iter().position(|existing| Element::key(existing, &keys) == key) {
                        Some(index) => out[index] = merge(&out[index], item, item_node),
                        None => out.push(item.clone()),
                    }
                }
                Value::Array(out)
            }
        },
        _ => applied.clone(),
    }
}

/// An apply: who applies, how, and when.
#[derive(Debug, Clone, Copy)]
pub struct Apply<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// Take fields from other managers instead of conflicting.
    pub force: bool,
    /// The API version applied with.
    pub api_version: &'a str,
    /// `status` when applying to `/status`.
    pub subresource: &'a str,
    /// The current time.
    pub now: &'a str,
}

/// Server-side apply of `applied` onto `live` (absent: a create). Returns the new object with
/// its managedFields, or the conflicts when not forced.
pub fn apply(live: Option<&Value>, applied: &Value, node: Node, request: &Apply) -> Result<Value, Vec<Conflict>> {
    let mut owners = live.map(entries).unwrap_or_default();
    if let Some(live) = live
        && owners.is_empty()
    {
        // Objects written before anyone tracked fields: their fields stay with a stand-in
        // owner, so the first apply does not remove them.
        owners.push(Entry {
            manager: "before-first-apply".into(),
            operation: Operation::Update,
            api_version: live.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string(),
            time: request.now.to_string(),
            subresource: String::new(),
            fields: set::of_object(live, node),
        });
    }
    let empty = Value::Object(Map::new());
    let live_object = live.map(without_managed_fields).unwrap_or(empty);
    let applied_set = set::of_object(applied, node);
    let mine = owners.iter().position(|e| e.is(request.manager, Operation::Apply, request.subresource));
    let previous = mine.map(|i| owners[i].fields.clone()).unwrap_or_default();

    let mut conflicts = Vec::new();
    for (index, owner) in owners.iter().enumerate() {
        if Some(index) == mine {
            continue;
        }
        for path in applied_set.intersection(&owner.fields).paths() {
            if applied_set.is_leaf(&path) && set::get(applied, &path) != set::get(&live_object, &path) {
                conflicts.push((index, path));
            }
        }
    }
    if !conflicts.is_empty() && !request.force {
        return Err(conflicts
            .into_iter()
            .map(|(index, path)| Conflict {
                manager: owners[index].manager.clone(),
                operation: owners[index].operation,
                api_version: owners[index].api_version.clone(),
                subresource: owners[index].subresource.clone(),
                path,
            })
            .collect());
    }
    for (index, path) in conflicts {
        let mut taken = FieldSet::default();
        taken.insert(&path);
        owners[index].fields = owners[index].fields.difference(&taken);
    }

    let mut merged = merge(&live_object, applied, node);
    let others = owners
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != mine)
        .fold(FieldSet::default(), |all, (_, e)| all.union(&e.fields));
    let mut removed = previous.difference(&applied_set).paths();
    removed.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for path in removed {
        if others.covers(&path) || applied_set.covers(&path) || set::is_item_key(&path) {
            continue;
        }
        set::remove(&mut merged, &path);
        // A map emptied by the removal goes too, unless someone owns it.
        let mut parent = path.clone();
        while parent.pop().is_some() && !parent.is_empty() {
            let empty_map = set::get(&merged, &parent).is_some_and(|v| v.as_object().is_some_and(Map::is_empty));
            if empty_map && !others.contains(&parent) && !applied_set.contains(&parent) {
                set::remove(&mut merged, &parent);
            } else {
                break;
            }
        }
    }

    let unchanged = previous == applied_set && merged == live_object;
    match mine {
        Some(index) => {
            let entry = &mut owners[index];
            if !unchanged {
                entry.time = request.now.to_string();
            }
            entry.api_version = request.api_version.to_string();
            entry.fields = applied_set;
        }
        None => owners.push(Entry {
            manager: request.manager.to_string(),
            operation: Operation::Apply,
            api_version: request.api_version.to_string(),
            time: request.now.to_string(),
            subresource: request.subresource.to_string(),
            fields: applied_set,
        }),
    }
    write_entries(&mut merged, &owners);
    Ok(merged)
}

/// What an update is and who makes it.
#[derive(Debug, Clone, Copy)]
pub struct Update<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// The API version written with.
    pub api_version: &'a str,
    /// `status` for writes through `/status`.
    pub subresource: &'a str,
    /// The current time.
    pub now: &'a str,
}

/// Records an update (create, PUT, non-apply patch) of `old` into `new`: the manager takes the
/// fields it changed (from everyone else), removed fields leave every owner. `managedFields`
/// sent by the client are kept as given, except `[]`, which resets them.
pub fn track_update(old: Option<&Value>, new: &mut Value, node: Node, request: &Update) {
    let old_entries = old.map(entries).unwrap_or_default();
    let sent = new.pointer("/metadata/managedFields").cloned();
    let mut owners = match &sent {
        None => old_entries,
        Some(Value::Array(list)) if list.is_empty() => Vec::new(),
        Some(list) if old.and_then(|o| o.pointer("/metadata/managedFields")) == Some(list) => old_entries,
        Some(_) => return,
    };
    let plain_old = old.map(without_managed_fields);
    let plain_new = without_managed_fields(new);
    let old_set = plain_old.as_ref().map(|o| set::of_object(o, node)).unwrap_or_default();
    let new_set = set::of_object(&plain_new, node);
    let mut changed = FieldSet::default();
    for path in new_set.paths() {
        let before = plain_old.as_ref().and_then(|o| set::get(o, &path));
        let leaf = new_set.is_leaf(&path);
        if before.is_none() || (leaf && before != set::get(&plain_new, &path)) {
            changed.insert(&path);
        }
    }
    let mut removed = old_set.difference(&new_set);
    if request.subresource == "status" {
        // A write through /status changes only the status (the server keeps the rest as it
        // was), so it never takes over, or takes away, anyone's spec or metadata fields.
        let status = status_only(&changed);
        changed = status;
        removed = status_only(&removed);
    }
    let mine = owners.iter().position(|e| e.is(request.manager, Operation::Update, request.subresource));
    for (index, owner) in owners.iter_mut().enumerate() {
        owner.fields = owner.fields.difference(&removed);
        if Some(index) != mine {
            owner.fields = owner.fields.difference(&changed);
        }
    }
    if !changed.is_empty() {
        match mine {
            Some(index) => {
                let entry = &mut owners[index];
                entry.fields = entry.fields.union(&changed);
                entry.time = request.now.to_string();
                entry.api_version = request.api_version.to_string();
            }
            None => owners.push(Entry {
                manager: request.manager.to_string(),
                operation: Operation::Update,
                api_version: request.api_version.to_string(),
                time: request.now.to_string(),
                subresource: request.subresource.to_string(),
                fields: changed,
            }),
        }
    }
    owners.retain(|e| !e.fields.is_empty());
    cap_update_entries(&mut owners);
    write_entries(new, &owners);
}

/// The part of a set under `.status`.
fn status_only(fields: &FieldSet) -> FieldSet {
    let mut status = FieldSet::default();
    for path in fields.paths() {
        if path.first() == Some(&set::Element::field("status")) {
            status.insert(&path);
        }
    }
    status
}

/// Keeps at most [`MAX_UPDATE_ENTRIES`] update entries by merging the oldest into
/// `ancient-changes`, as upstream does.
fn cap_update_entries(owners: &mut Vec<Entry>) {
    let updates = owners.iter().filter(|e| e.operation == Operation::Update).count();
    if updates <= MAX_UPDATE_ENTRIES {
        return;
    }
    let mut oldest: Vec<usize> = (0..owners.len()).filter(|i| owners[*i].operation == Operation::Update).collect();
    oldest.sort_by(|a, b| owners[*a].time.cmp(&owners[*b].time));
    let merge: Vec<usize> = oldest.into_iter().take(updates - MAX_UPDATE_ENTRIES + 1).collect();
    let mut ancient = Entry {
        manager: "ancient-changes".into(),
        operation: Operation::Update,
        api_version: String::new(),
        time: String::new(),
        subresource: String::new(),
        fields: FieldSet::default(),
    };
    for index in &merge {
        let entry = &owners[*index];
        ancient.fields = ancient.fields.union(&entry.fields);
        ancient.api_version = entry.api_version.clone();
        ancient.time = ancient.time.clone().max(entry.time.clone());
    }
    let mut index = 0;
    owners.retain(|_| {
        let keep = !merge.contains(&index);
        index += 1;
        keep
    });
    owners.push(ancient);
}

#[cfg(test)]
mod tests;
