//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds, as
//! apimachinery's `strategicpatch` applies it on the server: maps merge key by key, lists merge
//! by their patch strategy and merge key from the type's merge table (`types::table`), and the
//! directives `$patch` (replace, delete, merge), `$retainKeys`, `$setElementOrder/<field>` and
//! `$deleteFromPrimitiveList/<field>` steer the merge. Element order follows upstream too: merged
//! elements named in the patch keep the patch's order, the others keep the object's.

use serde_json::{Map, Value};

use super::PatchError;
use crate::types::Node;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// The field a `<prefix>/<field>` directive key names; `None` for other keys.
fn directive_field<'k>(
    key: &'k str,
    prefix: &str,
    malformed: fn() -> PatchError,
) -> Result<Option<&'k str>, PatchError> {
    if !key.starts_with(prefix) {
        return Ok(None);
    }
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(Some(field)),
        _ => Err(malformed()),
    }
}

/// Upstream's error texts (apimachinery `mergepatch/errors.go`); the first group is answered
/// with 400, the rest with 500 as the API server does.
fn bad_retain_keys() -> PatchError {
    PatchError::Malformed("invalid patch format of retainKeys".into())
}

fn bad_set_element_order() -> PatchError {
    PatchError::Malformed("invalid patch format of setElementOrder list".into())
}

fn bad_primitive_list() -> PatchError {
    PatchError::Malformed("invalid patch format of primitive list".into())
}

fn no_merge_key(item: &Value, key: &str) -> PatchError {
    PatchError::Internal(format!("map: {item} does not contain declared merge key: {key}"))
}

fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> PatchError {
    let shown = directive.as_str().map_or_else(|| directive.to_string(), str::to_string);
    PatchError::Internal(format!("unknown patch type: {shown} in map: {}", Value::Object(map.clone())))
}

/// Applies a strategic merge patch to `doc`, whose type is described by `node`.
pub fn apply_strategic_merge_patch(doc: &mut Value, body: &[u8], node: Node) -> Result<(), PatchError> {
    let patch: Value =
        serde_json::from_slice(body).map_err(|e| PatchError::Malformed(format!("invalid JSON document: {e}")))?;
    let Value::Object(patch) = patch else {
        return Err(PatchError::Malformed("invalid JSON document".into()));
    };
    let original = match std::mem::take(doc) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    *doc = Value::Object(merge_map(original, patch, node)?);
    Ok(())
}

/// The strategy of a field without `retainKeys` (which is applied by the `$retainKeys`
/// directive, wherever it appears).
fn strategy(node: &Node) -> Result<&'static str, PatchError> {
    let mut others =
        node.patch_strategy().unwrap_or_default().split(',').filter(|s| !s.is_empty() && *s != "retainKeys");
    let first = others.next().unwrap_or_default();
    if others.next().is_some() {
        return Err(PatchError::Internal(format!("unexpected patch strategy: {:?}", node.patch_strategy())));
    }
    Ok(first)
}

fn same_json_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    node: Node,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.shift_remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    apply_set_element_order(&mut original, &mut patch, node)?;
    for (key, patch_value) in patch {
        let (key, delete_list) = match directive_field(&key, DELETE_FROM_PRIMITIVE_LIST, bad_primitive_list)? {
            Some(field) => (field.to_string(), true),
            None => (key, false),
        };
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let replace = match original.get(&key) {
            None => true,
            Some(current) => !same_json_type(current, &patch_value),
        };
        if replace {
            if !delete_list {
                let mut value = patch_value;
                discard_nulls(&mut value);
                match remove_directives(value) {
                    Some(value) => original.insert(key, value),
                    None => original.shift_remove(&key),
                };
            }
            continue;
        }
        let child = node.field(&key);
        let slot = original.get_mut(&key).expect("present: checked above");
        let merged = match (std::mem::take(slot), patch_value) {
            (Value::Object(current), Value::Object(patch_map)) => {
                if strategy(&child)? == "replace" {
                    Value::Object(patch_map)
                } else {
                    Value::Object(merge_map(current, patch_map, child)?)
                }
            }
            (Value::Array(current), Value::Array(patch_list)) => {
                if strategy(&child)? == "merge" || delete_list {
                    Value::Array(merge_list(current, patch_list, &child, delete_list)?)
                } else {
                    Value::Array(patch_list)
                }
            }
            (_, scalar) => match remove_directives(scalar) {
                Some(value) => value,
                None => {
                    original.shift_remove(&key);
                    continue;
                }
            },
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// `$retainKeys`: keys of the object not listed are cleared.
fn apply_retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<(), PatchError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else { return Ok(()) };
    let Value::Array(retain) = retain else { return Err(bad_retain_keys()) };
    let retained = |key: &str| retain.iter().any(|k| k.as_str() == Some(key));
    let unlisted = patch.iter().any(|(key, value)| {
        !value.is_null()
            && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            && !key.starts_with(SET_ELEMENT_ORDER)
            && !retained(key)
    });
    if unlisted {
        return Err(bad_retain_keys());
    }
    original.retain(|key, _| retained(key));
    Ok(())
}

/// `$setElementOrder/<field>`: merges the field's list, then orders it as listed.
fn apply_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    node: Node,
) -> Result<(), PatchError> {
    let keys: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER)).cloned().collect();
    for directive_key in keys {
        let order = patch.shift_remove(&directive_key).expect("key listed above");
        let Value::Array(order) = order else { return Err(bad_set_element_order()) };
        let field = directive_field(&directive_key, SET_ELEMENT_ORDER, bad_set_element_order)?.expect("prefix checked");
        let as_list = |value: Option<&Value>| match value {
            None => Ok(None),
            Some(Value::Array(list)) => Ok(Some(list.clone())),
            Some(_) => Err(bad_set_element_order()),
        };
        let current = as_list(original.get(field))?;
        let patch_list = as_list(patch.get(field))?;
        let child = node.field(field);
        let merge_key = child.merge_key();
        check_order(patch_list.as_deref().unwrap_or_default(), &order, merge_key)?;
        let merged = match (&current, patch_list) {
            (Some(current), None) => current.clone(),
            (None, Some(patch_list)) => match remove_directives(Value::Array(patch_list)) {
                Some(Value::Array(list)) => list,
                _ => continue,
            },
            (Some(current), Some(patch_list)) if strategy(&child)? == "merge" => {
                merge_list(current.clone(), patch_list, &child, false)?
            }
            (Some(_), Some(patch_list)) => patch_list,
            (None, None) => continue,
        };
        let (listed, server_only) = partition(merged, &order, merge_key)?;
        let ordered = normalize_order(listed, server_only, &order, current.as_deref().unwrap_or_default(), merge_key)?;
        original.insert(field.to_string(), Value::Array(ordered));
        patch.shift_remove(field);
    }
    Ok(())
}

/// The patch list must follow the `$setElementOrder` list (deletions aside).
fn check_order(patch_list: &[Value], order: &[Value], merge_key: Option<&str>) -> Result<(), PatchError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let kept: Vec<&Value> = patch_list.iter().filter(|item| merge_key.is_none() || !is_delete(item)).collect();
    let (mut at_patch, mut at_order) = (0, 0);
    while at_patch < kept.len() && at_order < order.len() {
        if kept[at_patch].get(DIRECTIVE).is_some() {
            at_patch += 1;
            continue;
        }
        let equal = match merge_key {
            None => kept[at_patch] == &order[at_order],
            Some(key) => {
                let patch_key = kept[at_patch].get(key).ok_or_else(|| no_merge_key(kept[at_patch], key))?;
                let order_key = order[at_order].get(key).ok_or_else(|| no_merge_key(&order[at_order], key))?;
                patch_key == order_key
            }
        };
        if equal {
            at_patch += 1;
        }
        at_order += 1;
    }
    if at_patch < kept.len() {
        let shown = |list: Vec<&Value>| Value::Array(list.into_iter().cloned().collect());
        return Err(PatchError::Internal(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            shown(patch_list.iter().collect()),
            shown(order.iter().collect())
        )));
    }
    Ok(())
}

fn is_delete(item: &Value) -> bool {
    item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete")
}

/// Merges a list with patch strategy `merge`: objects by merge key, scalars as a set (or
/// removed, for `$deleteFromPrimitiveList`).
fn merge_list(
    current: Vec<Value>,
    patch: Vec<Value>,
    node: &Node,
    delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if current.is_empty() && patch.is_empty() {
        return Ok(current);
    }
    let mut elements = current.iter().chain(&patch);
    let first = elements.next().expect("one list is not empty");
    if elements.any(|e| !same_json_type(e, first)) {
        return Err(PatchError::Internal("lists of mixed types cannot be merged".into()));
    }
    if first.is_array() {
        return Err(PatchError::NotApplicable("lists of lists are not supported".into()));
    }
    if !first.is_object() {
        if delete_list {
            return Ok(current.into_iter().filter(|item| !patch.contains(item)).collect());
        }
        let merged = deduplicate_scalars(current.iter().chain(&patch).cloned().collect());
        let (listed, server_only) = partition(merged, &patch, None)?;
        return normalize_order(listed, server_only, &patch, &current, None);
    }
    let merge_key =
        node.merge_key().ok_or_else(|| PatchError::Internal("cannot merge lists without merge key".into()))?;
    let (current, patch) = apply_list_directives(current, patch, merge_key)?;
    let mut merged = current.clone();
    let item_node = node.item();
    for item in &patch {
        let value = item.get(merge_key).ok_or_else(|| no_merge_key(item, merge_key))?;
        match position(&merged, merge_key, value)? {
            Some(index) => {
                let existing = std::mem::take(&mut merged[index]);
                let (Value::Object(existing), Value::Object(item)) = (existing, item.clone()) else {
                    unreachable!("all elements are objects")
                };
                merged[index] = Value::Object(merge_map(existing, item, item_node)?);
            }
            None => merged.push(item.clone()),
        }
    }
    let (listed, server_only) = partition(merged, &patch, Some(merge_key))?;
    normalize_order(listed, server_only, &patch, &current, Some(merge_key))
}

/// Elements with `$patch`: `delete` removes the element with that key, `replace` makes the
/// rest of the patch the whole list.
fn apply_list_directives(
    mut current: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let value = item.get(merge_key).ok_or_else(|| no_merge_key(&item, merge_key))?;
                current.retain(|element| element.get(merge_key) != Some(value));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(PatchError::Internal("merging lists cannot yet be specified in the patch".into()));
            }
            _ => return Err(bad_patch_type(directive, item.as_object().expect("list elements are objects"))),
        }
    }
    Ok(if replace { (plain, Vec::new()) } else { (current, plain) })
}

fn position(list: &[Value], merge_key: &str, value: &Value) -> Result<Option<usize>, PatchError> {
    for (index, element) in list.iter().enumerate() {
        if !element.is_object() {
            return Err(PatchError::Internal(format!("value for key {index} is not a map")));
        }
        if element.get(merge_key) == Some(value) {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// Go's in-place deduplication: a duplicate is replaced by the last element.
fn deduplicate_scalars(mut list: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i + 1 < list.len() {
        let mut j = i + 1;
        while j < list.len() {
            if list[i] == list[j] {
                let last = list.pop().expect("not empty");
                if j < list.len() {
                    list[j] = last;
                }
                continue;
            }
            j += 1;
        }
        i += 1;
    }
    list
}

/// The identity of an element for ordering: its merge key's value, or itself.
fn identity<'v>(element: &'v Value, merge_key: Option<&str>) -> Option<&'v Value> {
    match merge_key {
        Some(key) => element.get(key),
        None => Some(element),
    }
}

fn index_in(order: &[Value], element: &Value, merge_key: Option<&str>) -> Option<usize> {
    let wanted = identity(element, merge_key);
    order.iter().position(|candidate| identity(candidate, merge_key) == wanted)
}

/// Splits merged elements into those named by `by` and the rest.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut listed = Vec::with_capacity(merged.len());
    let mut server_only = Vec::new();
    for element in merged {
        if let Some(key) = merge_key
            && element.get(key).is_none()
        {
            return Err(no_merge_key(&element, key));
        }
        if index_in(by, &element, merge_key).is_some() { listed.push(element) } else { server_only.push(element) }
    }
    Ok((listed, server_only))
}

/// Orders the patch's elements by the patch order and the server-only ones by the object's
/// order, then interleaves them: a server element goes first only when both are in the
/// object's order and it comes earlier there (upstream's `mergeSortedSlice`).
fn normalize_order(
    mut listed: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let sort = |list: &mut Vec<Value>, order: &[Value]| -> Result<(), PatchError> {
        if let Some(key) = merge_key {
            if let Some(bad) = list.iter().chain(order).find(|e| e.get(key).is_none()) {
                return Err(no_merge_key(bad, key));
            }
            // Deletions go last.
            let (deletions, kept): (Vec<Value>, Vec<Value>) = std::mem::take(list).into_iter().partition(is_delete);
            *list = kept;
            list.sort_by_key(|element| index_in(order, element, merge_key).unwrap_or(usize::MAX));
            list.extend(deletions);
        } else {
            list.sort_by_key(|element| index_in(order, element, merge_key).unwrap_or(usize::MAX));
        }
        Ok(())
    };
    sort(&mut listed, patch_order)?;
    sort(&mut server_only, server_order)?;
    let mut out = Vec::with_capacity(listed.len() + server_only.len());
    let mut server = server_only.into_iter().peekable();
    let mut patched = listed.into_iter().peekable();
    loop {
        let take_server = match (server.peek(), patched.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(left), Some(right)) => {
                match (index_in(server_order, left, merge_key), index_in(server_order, right, merge_key)) {
                    (Some(l), Some(r)) => l < r,
                    _ => false,
                }
            }
        };
        out.extend(if take_server { server.next() } else { patched.next() });
    }
    Ok(out)
}

/// Drops `null`s inside a value that replaces a missing field (they would delete nothing).
fn discard_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Removes maps carrying `$patch` (and their entries) from a value taken over whole; `None`
/// when the value itself is such a map.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) if map.contains_key(DIRECTIVE) => None,
        Value::Object(map) => {
            Some(Value::Object(map.into_iter().filter_map(|(k, v)| remove_directives(v).map(|v| (k, v))).collect()))
        }
        Value::Array(items) => Some(Value::Array(items.into_iter().filter_map(remove_directives).collect())),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests;
