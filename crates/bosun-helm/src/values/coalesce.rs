//! Coalescing values with the chart's defaults and its subcharts', as Helm's `CoalesceValues`
//! and `MergeValues` do: `global` copied down, a `null` deleting a default, Helm's warnings.

use serde_json::Value;

use super::{GLOBAL_KEY, Values, ValuesError};
use crate::chart::Chart;
use crate::golang::sprint;

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() { b.to_string() } else { format!("{a}.{b}") }
}

/// Coalesced values with the warnings Helm logs on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Coalesced {
    /// The values.
    pub(crate) values: Values,
    /// Helm's warnings (`warning: skipped value for …: Not a table.`).
    pub(crate) warnings: Vec<String>,
}

struct Coalescer {
    warnings: Vec<String>,
}

/// Helm's `CoalesceValues`: the chart's defaults (and its subcharts', under their names)
/// under `values`; a `null` in `values` deletes the default.
pub(crate) fn coalesce_values(chart: &Chart, values: &Values) -> Result<Coalesced, ValuesError> {
    run_coalesce(chart, values, false)
}

/// Helm's `MergeValues`: as [`coalesce_values`], but `null`s are kept.
pub(crate) fn merge_values(chart: &Chart, values: &Values) -> Result<Coalesced, ValuesError> {
    run_coalesce(chart, values, true)
}

fn run_coalesce(chart: &Chart, values: &Values, merge: bool) -> Result<Coalesced, ValuesError> {
    let mut coalescer = Coalescer { warnings: Vec::new() };
    let mut dest = values.clone();
    coalescer.coalesce(chart, &mut dest, "", merge)?;
    Ok(Coalesced { values: dest, warnings: coalescer.warnings })
}

/// Helm's `CoalesceTables`: `src` under `dst` (`dst` wins), `null` in `dst` deleting.
pub(crate) fn coalesce_tables(dst: &mut Values, src: Values) -> Vec<String> {
    let mut coalescer = Coalescer { warnings: Vec::new() };
    coalescer.tables(dst, src, "", false);
    coalescer.warnings
}

/// Helm's `MergeTables`: as [`coalesce_tables`], `null`s kept.
pub(crate) fn merge_tables(dst: &mut Values, src: Values) -> Vec<String> {
    let mut coalescer = Coalescer { warnings: Vec::new() };
    coalescer.tables(dst, src, "", true);
    coalescer.warnings
}

fn clean_nil_values(map: &mut Values) {
    map.retain(|_, v| !v.is_null());
    for value in map.values_mut() {
        if let Value::Object(sub) = value {
            clean_nil_values(sub);
        }
    }
}

impl Coalescer {
    fn warn(&mut self, message: String) {
        self.warnings.push(message);
    }

    fn coalesce(&mut self, chart: &Chart, dest: &mut Values, prefix: &str, merge: bool) -> Result<(), ValuesError> {
        self.chart_values(chart, dest, prefix, merge);
        self.dependencies(chart, dest, prefix, merge)
    }

    fn dependencies(&mut self, chart: &Chart, dest: &mut Values, prefix: &str, merge: bool) -> Result<(), ValuesError> {
        for sub in &chart.dependencies {
            let mut sub_values = match dest.remove(sub.name()) {
                None => Values::new(),
                Some(Value::Object(map)) => map,
                Some(other) => {
                    let value = sprint(&other);
                    dest.insert(sub.name().to_string(), other);
                    return Err(ValuesError::TypeMismatch { chart: sub.name().to_string(), value });
                }
            };
            let sub_prefix = concat_prefix(prefix, chart.name());
            self.globals(&mut sub_values, dest, &sub_prefix);
            self.coalesce(sub, &mut sub_values, &sub_prefix, merge)?;
            dest.insert(sub.name().to_string(), Value::Object(sub_values));
        }
        Ok(())
    }

    /// Copies the parent's `global` into the subchart's: the parent's entries win, tables are
    /// merged.
    fn globals(&mut self, dest: &mut Values, src: &Values, prefix: &str) {
        let mut dest_globals = match dest.get(GLOBAL_KEY) {
            None => Values::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                self.warn(format!("warning: skipping globals because destination {GLOBAL_KEY} is not a table."));
                return;
            }
        };
        let src_globals = match src.get(GLOBAL_KEY) {
            None => Values::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                self.warn(format!("warning: skipping globals because source {GLOBAL_KEY} is not a table."));
                return;
            }
        };
        for (key, value) in src_globals {
            match (value, dest_globals.get_mut(&key)) {
                (Value::Object(table), None) => {
                    dest_globals.insert(key, Value::Object(table));
                }
                (Value::Object(mut table), Some(Value::Object(existing))) => {
                    let own = std::mem::take(existing);
                    self.tables(&mut table, own, &concat_prefix(prefix, &key), true);
                    *existing = table;
                }
                (Value::Object(_), Some(_)) => {
                    self.warn(format!("Conflict: cannot merge map onto non-map for {key:?}. Skipping."));
                }
                (_, Some(Value::Object(_))) => self.warn(format!("key {key} is table. Skipping")),
                (value, _) => {
                    dest_globals.insert(key, value);
                }
            }
        }
        dest.insert(GLOBAL_KEY.to_string(), Value::Object(dest_globals));
    }

    /// Helm's `coalesceValues`: the chart's defaults under the values given for it.
    fn chart_values(&mut self, chart: &Chart, dest: &mut Values, prefix: &str, merge: bool) {
        let sub_prefix = concat_prefix(prefix, chart.name());
        for (key, default) in chart.values.clone() {
            match dest.get_mut(&key) {
                Some(Value::Null) if !merge => {
                    dest.remove(&key);
                }
                Some(Value::Object(given)) => match default {
                    Value::Object(mut default) => {
                        // A subchart's values keep their nulls here: they are coalesced with
                        // the subchart's own defaults later.
                        let merge = merge || chart.dependencies.iter().any(|sub| sub.name() == key);
                        if !merge {
                            clean_nil_values(&mut default);
                        }
                        self.tables(given, default, &concat_prefix(&sub_prefix, &key), merge);
                    }
                    Value::Null => {}
                    _ => self.warn(format!("warning: skipped value for {sub_prefix}.{key}: Not a table.")),
                },
                Some(_) => {}
                None => {
                    let mut default = default;
                    if !merge {
                        match &mut default {
                            Value::Null => continue,
                            Value::Object(map) => clean_nil_values(map),
                            _ => {}
                        }
                    }
                    dest.insert(key, default);
                }
            }
        }
    }

    /// Helm's `coalesceTablesFullKey`: `src` under `dst`.
    fn tables(&mut self, dst: &mut Values, mut src: Values, prefix: &str, merge: bool) {
        let src_non_nil: std::collections::HashSet<String> =
            src.iter().filter(|(_, v)| !v.is_null()).map(|(k, _)| k.clone()).collect();
        for (key, value) in dst.iter() {
            if value.is_null() {
                src.insert(key.clone(), Value::Null);
            }
        }
        for (key, value) in src {
            let full_key = concat_prefix(prefix, &key);
            match dst.get_mut(&key) {
                Some(Value::Null) if !merge && src_non_nil.contains(&key) => {
                    dst.remove(&key);
                }
                None => {
                    dst.insert(key, value);
                }
                Some(Value::Object(existing)) => match value {
                    Value::Object(table) => self.tables(existing, table, &full_key, merge),
                    Value::Null => {}
                    other => self.warn(format!(
                        "warning: destination for {full_key} is a table. Ignoring non-table value ({})",
                        sprint(&other)
                    )),
                },
                Some(_) => {
                    if let Value::Object(_) = value {
                        self.warn(format!(
                            "warning: cannot overwrite table with non table for {full_key} ({})",
                            sprint(&value)
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;
    use crate::values::read_values;
    use serde_json::json;

    fn chart(name: &str, values: Value, dependencies: Vec<Chart>) -> Chart {
        Chart {
            metadata: Metadata { name: name.into(), ..Metadata::default() },
            values: values.as_object().cloned().unwrap_or_default(),
            dependencies,
            ..Chart::default()
        }
    }

    /// What `{{ .a.b.c }}` prints for these values: `<no value>` when missing.
    fn lookup(values: &Values, path: &str) -> String {
        let mut current = Value::Object(values.clone());
        for key in path.trim_start_matches('.').split('.') {
            match current.get(key) {
                Some(next) => current = next.clone(),
                None => return "<no value>".into(),
            }
        }
        sprint(&current)
    }

    fn moby(pequod_values: Value, ahab_values: Value, moby_values: Value) -> Chart {
        chart(
            "moby",
            moby_values,
            vec![
                chart("pequod", pequod_values, vec![chart("ahab", ahab_values, vec![])]),
                chart("spouter", json!({"scope": "spouter", "global": {"nested2": {"l1": "spouter"}}}), vec![]),
            ],
        )
    }

    const TEST_VALUES: &str = "
top: yup
bottom: null
right: Null
left: NULL
front: ~
back: \"\"
nested:
  boat: null

global:
  name: Ishmael
  subject: Queequeg
  nested:
    boat: true

pequod:
  boat: null
  global:
    name: Stinky
    harpooner: Tashtego
    nested:
      boat: false
      sail: true
      foo2: null
  ahab:
    scope: whale
    boat: null
    nested:
      foo: true
      boat: null
    object: null
";

    const EXPECTATIONS: &[(&str, &str)] = &[
        ("top", "yup"),
        ("back", ""),
        ("name", "moby"),
        ("global.name", "Ishmael"),
        ("global.subject", "Queequeg"),
        ("global.harpooner", "<no value>"),
        ("pequod.name", "pequod"),
        ("pequod.ahab.name", "ahab"),
        ("pequod.ahab.scope", "whale"),
        ("pequod.ahab.nested.foo", "true"),
        ("pequod.ahab.global.name", "Ishmael"),
        ("pequod.ahab.global.nested.foo", "bar"),
        ("pequod.ahab.global.subject", "Queequeg"),
        ("pequod.ahab.global.harpooner", "Tashtego"),
        ("pequod.global.name", "Ishmael"),
        ("pequod.global.nested.foo", "<no value>"),
        ("pequod.global.subject", "Queequeg"),
        ("spouter.global.name", "Ishmael"),
        ("spouter.global.harpooner", "<no value>"),
        ("global.nested.boat", "true"),
        ("pequod.global.nested.boat", "true"),
        ("spouter.global.nested.boat", "true"),
        ("pequod.global.nested.sail", "true"),
        ("spouter.global.nested.sail", "<no value>"),
        ("global.nested2.l0", "moby"),
        ("global.nested2.l1", "<no value>"),
        ("global.nested2.l2", "<no value>"),
        ("pequod.global.nested2.l0", "moby"),
        ("pequod.global.nested2.l1", "pequod"),
        ("pequod.global.nested2.l2", "<no value>"),
        ("pequod.ahab.global.nested2.l0", "moby"),
        ("pequod.ahab.global.nested2.l1", "pequod"),
        ("pequod.ahab.global.nested2.l2", "ahab"),
        ("spouter.global.nested2.l0", "moby"),
        ("spouter.global.nested2.l1", "spouter"),
        ("spouter.global.nested2.l2", "<no value>"),
    ];

    /// Helm's `TestCoalesceValues`.
    #[test]
    fn coalesce_values_as_helm() {
        let c = moby(
            json!({"name": "pequod", "scope": "pequod", "global": {"nested2": {"l1": "pequod"}}, "boat": false,
                "ahab": {"boat": false, "nested": {"boat": false}}}),
            json!({"global": {"nested": {"foo": "bar", "foo2": "bar2"}, "nested2": {"l2": "ahab"}}, "scope": "ahab",
                "name": "ahab", "boat": true, "nested": {"foo": false, "boat": true}, "object": {"foo": "bar"}}),
            json!({"back": "exists", "bottom": "exists", "front": "exists", "left": "exists", "name": "moby",
                "nested": {"boat": true}, "override": "bad", "right": "exists", "scope": "moby", "top": "nope",
                "global": {"nested2": {"l0": "moby"}},
                "pequod": {"boat": "maybe", "ahab": {"boat": "maybe", "nested": {"boat": "maybe"}}}}),
        );
        let given = read_values(TEST_VALUES).unwrap();
        let before = given.clone();
        let v = coalesce_values(&c, &given).unwrap().values;
        for (path, want) in EXPECTATIONS.iter().chain(&[("pequod.ahab.global.nested.foo2", "<no value>")]) {
            assert_eq!(lookup(&v, path), *want, "{path}");
        }
        for key in ["bottom", "right", "left", "front"] {
            assert!(!v.contains_key(key), "{key} is removed");
        }
        assert!(!v["nested"].as_object().unwrap().contains_key("boat"));
        assert!(!v["pequod"].as_object().unwrap().contains_key("boat"));
        let ahab = v["pequod"]["ahab"].as_object().unwrap();
        assert!(!ahab.contains_key("boat"));
        assert!(!ahab["nested"].as_object().unwrap().contains_key("boat"));
        assert!(!ahab.contains_key("object"));
        assert_eq!(given, before, "the values given are not changed");
    }

    /// Helm's `TestMergeValues`: nulls are kept.
    #[test]
    fn merge_values_as_helm() {
        let c = moby(
            json!({"name": "pequod", "scope": "pequod", "global": {"nested2": {"l1": "pequod"}}}),
            json!({"global": {"nested": {"foo": "bar"}, "nested2": {"l2": "ahab"}}, "scope": "ahab", "name": "ahab",
                "boat": true, "nested": {"foo": false, "bar": true}}),
            json!({"back": "exists", "bottom": "exists", "front": "exists", "left": "exists", "name": "moby",
                "nested": {"boat": true}, "override": "bad", "right": "exists", "scope": "moby", "top": "nope",
                "global": {"nested2": {"l0": "moby"}}}),
        );
        let v = merge_values(&c, &read_values(TEST_VALUES).unwrap()).unwrap().values;
        for (path, want) in EXPECTATIONS {
            assert_eq!(lookup(&v, path), *want, "{path}");
        }
        for key in ["bottom", "right", "left", "front"] {
            assert_eq!(v.get(key), Some(&Value::Null), "{key} is kept as null");
        }
        assert!(v["nested"].as_object().unwrap().contains_key("boat"));
        let ahab = v["pequod"]["ahab"].as_object().unwrap();
        assert!(ahab.contains_key("boat"));
        assert!(ahab["nested"].as_object().unwrap().contains_key("bar"));
    }

    fn ishmael(hole: Value, country: Value) -> Values {
        json!({"name": "Ishmael", "address": {"street": "123 Spouter Inn Ct.", "city": "Nantucket", "country": country},
            "details": {"friends": ["Tashtego"]}, "boat": "pequod", "hole": hole})
        .as_object()
        .cloned()
        .unwrap()
    }

    fn whaler() -> Values {
        json!({"occupation": "whaler", "address": {"state": "MA", "street": "234 Spouter Inn Ct.", "country": "US"},
            "details": "empty", "boat": {"mast": true}, "hole": "black"})
        .as_object()
        .cloned()
        .unwrap()
    }

    /// Helm's `TestCoalesceTables` and `TestMergeTables`.
    #[test]
    fn coalesce_and_merge_tables_as_helm() {
        let mut dst = ishmael(Value::Null, Value::Null);
        coalesce_tables(&mut dst, whaler());
        assert_eq!(
            Value::Object(dst),
            json!({"name": "Ishmael", "occupation": "whaler",
                "address": {"street": "123 Spouter Inn Ct.", "city": "Nantucket", "state": "MA"},
                "details": {"friends": ["Tashtego"]}, "boat": "pequod"})
        );
        let mut dst = ishmael(json!("black"), json!("US"));
        coalesce_tables(&mut dst, Values::new());
        assert_eq!(dst, ishmael(json!("black"), json!("US")));

        let mut dst = ishmael(Value::Null, Value::Null);
        merge_tables(&mut dst, whaler());
        assert_eq!(
            Value::Object(dst),
            json!({"name": "Ishmael", "occupation": "whaler",
                "address": {"street": "123 Spouter Inn Ct.", "city": "Nantucket", "state": "MA", "country": null},
                "details": {"friends": ["Tashtego"]}, "boat": "pequod", "hole": null})
        );
    }

    /// Helm's `TestCoalesceValuesWarnings`.
    #[test]
    fn coalesce_warns_as_helm() {
        let c = chart(
            "level1",
            json!({"name": "moby"}),
            vec![chart(
                "level2",
                json!({"name": "pequod"}),
                vec![chart(
                    "level3",
                    json!({"name": "ahab", "boat": true, "spear": {"tip": true, "sail": {"cotton": true}}}),
                    vec![],
                )],
            )],
        );
        let given =
            json!({"level2": {"level3": {"boat": {"mast": true}, "spear": {"tip": {"sharp": true}, "sail": true}}}});
        let warnings = coalesce_values(&c, given.as_object().unwrap()).unwrap().warnings;
        for want in [
            "warning: skipped value for level1.level2.level3.boat: Not a table.",
            "warning: destination for level1.level2.level3.spear.tip is a table. Ignoring non-table value (true)",
            "warning: cannot overwrite table with non table for level1.level2.level3.spear.sail (map[cotton:true])",
        ] {
            assert!(warnings.iter().any(|w| w == want), "{want} in {warnings:?}");
        }
    }

    /// Helm's regression tests for issues 31643, 31919 and 31971.
    #[test]
    fn nulls_as_helm_regression_tests() {
        let c = chart("test", json!({"data": {}}), vec![]);
        let v = coalesce_values(&c, json!({"data": {"foo": "bar", "baz": null}}).as_object().unwrap()).unwrap().values;
        assert_eq!(v["data"], json!({"foo": "bar", "baz": null}), "a null without a default is kept");

        let parent = |sub_values: Value| chart("parent", json!({}), vec![chart("child", sub_values, vec![])]);
        let v = coalesce_values(&parent(json!({"keyMapping": {"password": null}})), &Values::new()).unwrap().values;
        assert_eq!(v["child"]["keyMapping"], json!({}), "nulls in subchart defaults are cleaned");

        let v = coalesce_values(
            &parent(json!({"someKey": "default"})),
            json!({"child": {"someKey": null}}).as_object().unwrap(),
        )
        .unwrap()
        .values;
        assert!(!v["child"].as_object().unwrap().contains_key("someKey"), "a user null erases a subchart default");

        let v = coalesce_values(
            &parent(json!({"ingress": {"feature": null}})),
            json!({"global": {"ingress": {"feature": true}}}).as_object().unwrap(),
        )
        .unwrap()
        .values;
        assert_eq!(v["child"]["ingress"], json!({}), "a null default does not shadow a global");

        let v = coalesce_values(
            &parent(json!({"keyMapping": {"password": null, "format": "bcrypt"}})),
            json!({"child": {"keyMapping": {"format": "sha256"}}}).as_object().unwrap(),
        )
        .unwrap()
        .values;
        assert_eq!(v["child"]["keyMapping"], json!({"format": "sha256"}));
    }

    #[test]
    fn subchart_values_must_be_tables() {
        let c = chart("parent", json!({}), vec![chart("child", json!({}), vec![])]);
        let error = coalesce_values(&c, json!({"child": "x"}).as_object().unwrap()).unwrap_err();
        assert_eq!(error.to_string(), "type mismatch on child: x is not a table");
    }
}
