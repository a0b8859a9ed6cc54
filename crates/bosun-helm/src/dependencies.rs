//! Dependencies: which subcharts are present, which are enabled, and the values they export
//! (Helm's `CheckDependencies` and `ProcessDependencies`).
//!
//! `process_dependencies` mutates the chart as Helm does: an aliased dependency loads a copy
//! of the subchart under the alias (one subchart can be loaded twice), `tags` then `condition`
//! decide what stays (the first condition path holding a bool wins; conditions of a
//! subchart's dependencies are read under the subchart's name), and `import-values` copy a
//! child's values into the parent's (`child.exports.x` via the short form, or any
//! `{child, parent}` pair; the parent's own values win over imported ones). Afterwards each
//! parent chart's `values` hold its subcharts' defaults merged in, nulls kept, exactly as
//! Helm leaves them for coalescing.

use serde_json::{Map, Value};

use crate::chart::{Chart, Dependency};
use crate::golang::sprint;
use crate::values::{self, Values, ValuesError};
use bosun_semver::is_compatible_range;

/// Why dependencies cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DependencyError {
    /// Dependencies named in `Chart.yaml` are not in `charts/`.
    #[error("{}", missing_message(.chart, .missing))]
    Missing {
        /// The chart whose dependencies are missing.
        chart: String,
        /// The missing dependencies.
        missing: Vec<Dependency>,
    },
    /// Values could not be coalesced.
    #[error(transparent)]
    Values(#[from] ValuesError),
}

fn missing_message(chart: &str, missing: &[Dependency]) -> String {
    missing
        .iter()
        .map(|d| {
            format!(
                "chart {:?} {} (repository {}) is missing from charts/: run 'bosun deps {chart}'",
                d.name, d.version, d.repository
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Helm's `CheckDependencies`: every dependency of `Chart.yaml` must be loaded from
/// `charts/` (by name, before aliases apply).
pub(crate) fn check_dependencies(chart: &Chart) -> Result<(), DependencyError> {
    let missing: Vec<Dependency> = chart
        .metadata
        .dependencies
        .iter()
        .filter(|d| !chart.dependencies.iter().any(|sub| sub.name() == d.name))
        .cloned()
        .collect();
    if missing.is_empty() { Ok(()) } else { Err(DependencyError::Missing { chart: chart.name().to_string(), missing }) }
}

/// Helm's `ProcessDependencies`: removes disabled subcharts and applies aliases, then imports
/// values. `values` are the user's values (before coalescing). Returns Helm's warnings.
pub(crate) fn process_dependencies(chart: &mut Chart, values: &Values) -> Result<Vec<String>, DependencyError> {
    let mut warnings = Vec::new();
    process_enabled(chart, values, "", &mut warnings)?;
    process_import_values(chart, true, &mut warnings)?;
    Ok(warnings)
}

/// The loaded subchart a dependency names (name and compatible version), as a copy renamed
/// to the alias.
fn alias_dependency(subcharts: &[Chart], dependency: &Dependency) -> Option<Chart> {
    let found = subcharts
        .iter()
        .find(|c| c.name() == dependency.name && is_compatible_range(&dependency.version, &c.metadata.version))?;
    let mut copy = found.clone();
    if !dependency.alias.is_empty() {
        copy.metadata.name = dependency.alias.clone();
    }
    Some(copy)
}

fn apply_tags(dependencies: &mut [Dependency], values: &Values, warnings: &mut Vec<String>) {
    let Some(tags) = values::table(values, "tags") else { return };
    for dependency in dependencies {
        let (mut any_true, mut any_false) = (false, false);
        for tag in &dependency.tags {
            match tags.get(tag) {
                Some(Value::Bool(true)) => any_true = true,
                Some(Value::Bool(false)) => any_false = true,
                Some(_) => warnings.push(format!("returned non-bool value for tag {tag} of chart {}", dependency.name)),
                None => {}
            }
        }
        dependency.enabled = any_true || !any_false;
    }
}

fn apply_conditions(dependencies: &mut [Dependency], values: &Values, path: &str, warnings: &mut Vec<String>) {
    for dependency in dependencies {
        for condition in dependency.condition.trim().split(',').filter(|c| !c.is_empty()) {
            match values::path_value(values, &format!("{path}{condition}")) {
                Some(Value::Bool(enabled)) => {
                    dependency.enabled = *enabled;
                    break;
                }
                Some(_) => {
                    warnings.push(format!("returned non-bool value for path {condition} of chart {}", dependency.name))
                }
                None => {}
            }
        }
    }
}

fn process_enabled(
    chart: &mut Chart,
    values: &Values,
    path: &str,
    warnings: &mut Vec<String>,
) -> Result<(), DependencyError> {
    // A chart without dependencies in Chart.yaml keeps its subcharts untouched (and Helm does
    // not look further down). An explicit empty list is treated the same way here.
    if chart.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let requirements = &chart.metadata.dependencies;
    let mut subcharts: Vec<Chart> = chart
        .dependencies
        .iter()
        .filter(|existing| {
            !requirements
                .iter()
                .any(|r| existing.name() == r.name && is_compatible_range(&r.version, &existing.metadata.version))
        })
        .cloned()
        .collect();
    for requirement in &mut chart.metadata.dependencies {
        if let Some(subchart) = alias_dependency(&chart.dependencies, requirement) {
            subcharts.push(subchart);
        }
        if !requirement.alias.is_empty() {
            requirement.name = requirement.alias.clone();
        }
        requirement.enabled = true;
    }
    chart.dependencies = subcharts;

    let coalesced = values::coalesce_values(chart, values)?;
    warnings.extend(coalesced.warnings);
    let cvals = coalesced.values;
    apply_tags(&mut chart.metadata.dependencies, &cvals, warnings);
    apply_conditions(&mut chart.metadata.dependencies, &cvals, path, warnings);

    let disabled: Vec<String> =
        chart.metadata.dependencies.iter().filter(|d| !d.enabled).map(|d| d.name.clone()).collect();
    chart.dependencies.retain(|c| !disabled.iter().any(|name| name == c.name()));
    chart.metadata.dependencies.retain(|d| !disabled.contains(&d.name));
    for subchart in &mut chart.dependencies {
        let sub_path = format!("{path}{}.", subchart.name());
        process_enabled(subchart, &cvals, &sub_path, warnings)?;
    }
    Ok(())
}

/// `a.b` and a table: `{a: {b: table}}`; `.` is the table itself.
fn path_to_map(path: &str, data: Values) -> Values {
    if path == "." {
        return data;
    }
    path.split('.').rev().fold(data, |inner, key| {
        let mut outer = Map::new();
        outer.insert(key.to_string(), Value::Object(inner));
        outer
    })
}

fn trim_nil_values(values: &mut Values) {
    values.retain(|_, v| !v.is_null());
    for value in values.values_mut() {
        if let Value::Object(table) = value {
            trim_nil_values(table);
        }
    }
}

/// Helm's `processDependencyImportValues` (depth first), with `merge` choosing Helm's
/// `MergeValues` (nulls kept, as installs use) or `CoalesceValues`.
pub(crate) fn process_import_values(
    chart: &mut Chart,
    merge: bool,
    warnings: &mut Vec<String>,
) -> Result<(), DependencyError> {
    for subchart in &mut chart.dependencies {
        process_import_values(subchart, merge, warnings)?;
    }
    if chart.metadata.dependencies.is_empty() {
        return Ok(());
    }
    let coalesced = if merge {
        values::merge_values(chart, &Values::new())?
    } else {
        values::coalesce_values(chart, &Values::new())?
    };
    warnings.extend(coalesced.warnings);
    let mut cvals = coalesced.values;
    let mut imported = Values::new();
    let combine = |dst: &mut Values, src: Values| {
        if merge { values::merge_tables(dst, src) } else { values::coalesce_tables(dst, src) }
    };
    for dependency in &mut chart.metadata.dependencies {
        let mut normalized = Vec::new();
        for import in &dependency.import_values {
            let (child, parent) = match import {
                Value::Object(pair) => (
                    pair.get("child").map_or("<nil>".to_string(), sprint),
                    pair.get("parent").map_or("<nil>".to_string(), sprint),
                ),
                Value::String(name) => (format!("exports.{name}"), ".".to_string()),
                _ => continue,
            };
            normalized.push(serde_json::json!({"child": child, "parent": parent}));
            match values::table(&cvals, &format!("{}.{child}", dependency.name)) {
                Some(table) => warnings.extend(combine(&mut imported, path_to_map(&parent, table.clone()))),
                None => warnings.push(format!("ImportValues missing table {child} from chart {}", dependency.name)),
            }
        }
        dependency.import_values = normalized;
    }
    if !merge {
        trim_nil_values(&mut cvals);
    }
    warnings.extend(combine(&mut cvals, imported));
    chart.values = cvals;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load;
    use crate::test_files::write;
    use serde_json::json;
    use std::path::Path;

    const SUBCHART1_DEPENDENCIES: &str = "
dependencies:
- {name: subcharta, version: 0.1.0, condition: subcharta.enabled, tags: [front-end, subcharta],
   import-values: [{child: SCAdata, parent: imported-chartA}, {child: SCAdata, parent: overridden-chartA},
                   {child: SCAdata, parent: imported-chartA-B}]}
- {name: subchartb, version: 0.1.0, condition: subchartb.enabled, tags: [front-end, subchartb],
   import-values: [{child: SCBdata, parent: imported-chartB}, {child: SCBdata, parent: imported-chartA-B},
                   {child: exports.SCBexported2, parent: exports.SCBexported2}, SCBexported1]}
";

    /// A chart shaped like Helm's `subpop` test chart: two subcharts with subcharts of their
    /// own, tags, conditions, an alias and import-values.
    fn population(root: &Path) -> Chart {
        let dir = root.join("parentchart");
        let subchart1 = format!("apiVersion: v1\nname: subchart1\nversion: 0.1.0\n{SUBCHART1_DEPENDENCIES}");
        write(
            &dir,
            &[
                (
                    "Chart.yaml",
                    "apiVersion: v1\nname: parentchart\nversion: 0.1.0\ndependencies:
- {name: subchart1, version: 0.1.0, condition: subchart1.enabled, tags: [front-end, subchart1],
   import-values: [{child: SC1data, parent: imported-chart1}, {child: SC1data, parent: overridden-chart1},
                   {child: imported-chartA, parent: imported-chartA}, {child: imported-chartA-B, parent: imported-chartA-B},
                   {child: overridden-chartA-B, parent: overridden-chartA-B}, {child: SCBexported1A, parent: .},
                   SCBexported2, SC1exported1]}
- {name: subchart2, version: 0.1.0, condition: subchart2.enabled, tags: [back-end, subchart2]}
- {name: subchart2, alias: subchart2alias, version: 0.1.0, condition: subchart2alias.enabled}
",
                ),
                (
                    "values.yaml",
                    "imported-chart1: {SPextra1: helm rocks}
overridden-chart1: {SC1bool: false, SC1float: 3.141592, SC1int: 99, SC1string: pollywog, SPextra2: 42}
imported-chartA: {SPextra3: 1.337}
overridden-chartA: {SCAbool: true, SCAfloat: 41.3, SCAint: 808, SCAstring: jabberwocky, SPextra4: true}
imported-chartA-B: {SPextra5: k8s}
overridden-chartA-B: {SCAbool: true, SCAfloat: 41.3, SCAint: 808, SCAstring: jabberwocky, SCBbool: false,
  SCBfloat: 1.99, SCBint: 77, SCBstring: jango, SPextra6: 111}
tags: {front-end: true, back-end: false}
subchart2alias: {enabled: false}
ensurenull: null
",
                ),
                ("charts/subchart1/Chart.yaml", &subchart1),
                (
                    "charts/subchart1/values.yaml",
                    "SC1data: {SC1bool: true, SC1float: 3.14, SC1int: 100, SC1string: dollywood, SC1extra1: 11}
imported-chartA: {SC1extra2: 1.337}
overridden-chartA: {SCAbool: true, SCAfloat: 3.14, SCAint: 100, SCAstring: jabbathehut, SC1extra3: true}
imported-chartA-B: {SC1extra5: tiller}
overridden-chartA-B: {SCAbool: true, SCAfloat: 3.33, SCAint: 555, SCAstring: wormwood, SCAextra1: 23,
  SCBbool: true, SCBfloat: 0.25, SCBint: 98, SCBstring: murkwood, SCBextra1: 13, SC1extra6: 77}
SCBexported1A: {SC1extra7: true}
exports: {SC1exported1: {global: {SC1exported2: {all: {SC1exported3: SC1expstr}}}}}
",
                ),
                ("charts/subchart1/charts/subchartA/Chart.yaml", "apiVersion: v1\nname: subcharta\nversion: 0.1.0\n"),
                (
                    "charts/subchart1/charts/subchartA/values.yaml",
                    "SCAdata: {SCAbool: false, SCAfloat: 3.1, SCAint: 55, SCAstring: jabba, SCAnested1: {SCAnested2: true}}\n",
                ),
                ("charts/subchart1/charts/subchartB/Chart.yaml", "apiVersion: v1\nname: subchartb\nversion: 0.1.0\n"),
                (
                    "charts/subchart1/charts/subchartB/values.yaml",
                    "SCBdata: {SCBbool: true, SCBfloat: 7.77, SCBint: 33, SCBstring: boba}
exports: {SCBexported1: {SCBexported1A: {SCBexported1B: 1965}}, SCBexported2: {SCBexported2A: blaster}}
",
                ),
                (
                    "charts/subchart2/Chart.yaml",
                    "apiVersion: v1\nname: subchart2\nversion: 0.1.0\ndependencies:
- {name: subchartb, version: 0.1.0, condition: subchartb.enabled, tags: [back-end, subchartb]}
- {name: subchartc, version: 0.1.0, condition: subchartc.enabled, tags: [back-end, subchartc]}
",
                ),
                ("charts/subchart2/charts/subchartB/Chart.yaml", "apiVersion: v1\nname: subchartb\nversion: 0.1.0\n"),
                ("charts/subchart2/charts/subchartC/Chart.yaml", "apiVersion: v1\nname: subchartc\nversion: 0.1.0\n"),
            ],
        );
        load(&dir).unwrap()
    }

    fn chart_names(chart: &Chart, prefix: &str, names: &mut Vec<String>) {
        let name = if prefix.is_empty() { chart.name().to_string() } else { format!("{prefix}.{}", chart.name()) };
        names.push(name.clone());
        for sub in &chart.dependencies {
            chart_names(sub, &name, names);
        }
    }

    /// Helm's `TestDependencyEnabled` table.
    #[test]
    fn enabled_dependencies_as_helm() {
        let root = tempfile::tempdir().unwrap();
        let chart = population(root.path());
        let cases: &[(&str, Value, &[&str])] = &[
            (
                "tags with no effect",
                json!({"tags": {"nothinguseful": false}}),
                &[
                    "parentchart",
                    "parentchart.subchart1",
                    "parentchart.subchart1.subcharta",
                    "parentchart.subchart1.subchartb",
                ],
            ),
            ("tags disabling a group", json!({"tags": {"front-end": false}}), &["parentchart"]),
            (
                "tags disabling a group and enabling a different group",
                json!({"tags": {"front-end": false, "back-end": true}}),
                &[
                    "parentchart",
                    "parentchart.subchart2",
                    "parentchart.subchart2.subchartb",
                    "parentchart.subchart2.subchartc",
                ],
            ),
            (
                "tags disabling only children, children still enabled since tag front-end=true in values.yaml",
                json!({"tags": {"subcharta": false, "subchartb": false}}),
                &[
                    "parentchart",
                    "parentchart.subchart1",
                    "parentchart.subchart1.subcharta",
                    "parentchart.subchart1.subchartb",
                ],
            ),
            (
                "tags disabling all parents/children with additional tag re-enabling a parent",
                json!({"tags": {"front-end": false, "subchart1": true, "back-end": false}}),
                &["parentchart", "parentchart.subchart1"],
            ),
            (
                "conditions enabling the parent charts, but back-end (b, c) is still disabled via values.yaml",
                json!({"subchart1": {"enabled": true}, "subchart2": {"enabled": true}}),
                &[
                    "parentchart",
                    "parentchart.subchart1",
                    "parentchart.subchart1.subcharta",
                    "parentchart.subchart1.subchartb",
                    "parentchart.subchart2",
                ],
            ),
            (
                "conditions disabling the parent charts, effectively disabling children",
                json!({"subchart1": {"enabled": false}, "subchart2": {"enabled": false}}),
                &["parentchart"],
            ),
            (
                "conditions a child using the second condition path of child's condition",
                json!({"subchart1": {"subcharta": {"enabled": false}}}),
                &["parentchart", "parentchart.subchart1", "parentchart.subchart1.subchartb"],
            ),
            (
                "tags enabling a parent/child group with condition disabling one child",
                json!({"subchart2": {"subchartc": {"enabled": false}}, "tags": {"back-end": true}}),
                &[
                    "parentchart",
                    "parentchart.subchart1",
                    "parentchart.subchart1.subcharta",
                    "parentchart.subchart1.subchartb",
                    "parentchart.subchart2",
                    "parentchart.subchart2.subchartb",
                ],
            ),
            (
                "tags will not enable a child if parent is explicitly disabled with condition",
                json!({"subchart1": {"enabled": false}, "tags": {"front-end": true}}),
                &["parentchart"],
            ),
            (
                "subcharts with alias also respect conditions",
                json!({"subchart1": {"enabled": false}, "subchart2alias": {"enabled": true, "subchartb": {"enabled": true}}}),
                &["parentchart", "parentchart.subchart2alias", "parentchart.subchart2alias.subchartb"],
            ),
        ];
        for (name, given, want) in cases {
            let mut chart = chart.clone();
            process_enabled(&mut chart, given.as_object().unwrap(), "", &mut Vec::new()).unwrap();
            let mut names = Vec::new();
            chart_names(&chart, "", &mut names);
            names.sort();
            assert_eq!(names, *want, "{name}");
        }
    }

    /// Helm's `TestProcessDependencyImportValues` expectations.
    #[test]
    #[allow(clippy::approx_constant)] // Helm's test data: 3.14 is a value, not π.
    fn import_values_as_helm() {
        let root = tempfile::tempdir().unwrap();
        let loaded = population(root.path());
        let expected: &[(&str, Value)] = &[
            ("imported-chart1.SC1bool", json!(true)),
            ("imported-chart1.SC1float", json!(3.14)),
            ("imported-chart1.SC1int", json!(100.0)),
            ("imported-chart1.SC1string", json!("dollywood")),
            ("imported-chart1.SC1extra1", json!(11.0)),
            ("imported-chart1.SPextra1", json!("helm rocks")),
            ("imported-chartA.SCAbool", json!(false)),
            ("imported-chartA.SCAfloat", json!(3.1)),
            ("imported-chartA.SCAint", json!(55.0)),
            ("imported-chartA.SCAstring", json!("jabba")),
            ("imported-chartA.SPextra3", json!(1.337)),
            ("imported-chartA.SC1extra2", json!(1.337)),
            ("imported-chartA.SCAnested1.SCAnested2", json!(true)),
            ("imported-chartA-B.SCAbool", json!(false)),
            ("imported-chartA-B.SCAfloat", json!(3.1)),
            ("imported-chartA-B.SCAint", json!(55.0)),
            ("imported-chartA-B.SCAstring", json!("jabba")),
            ("imported-chartA-B.SCBbool", json!(true)),
            ("imported-chartA-B.SCBfloat", json!(7.77)),
            ("imported-chartA-B.SCBint", json!(33.0)),
            ("imported-chartA-B.SCBstring", json!("boba")),
            ("imported-chartA-B.SPextra5", json!("k8s")),
            ("imported-chartA-B.SC1extra5", json!("tiller")),
            ("overridden-chart1.SC1bool", json!(false)),
            ("overridden-chart1.SC1float", json!(3.141592)),
            ("overridden-chart1.SC1int", json!(99.0)),
            ("overridden-chart1.SC1string", json!("pollywog")),
            ("overridden-chart1.SPextra2", json!(42.0)),
            ("overridden-chartA.SCAbool", json!(true)),
            ("overridden-chartA.SCAfloat", json!(41.3)),
            ("overridden-chartA.SCAint", json!(808.0)),
            ("overridden-chartA.SCAstring", json!("jabberwocky")),
            ("overridden-chartA.SPextra4", json!(true)),
            ("overridden-chartA-B.SCAbool", json!(true)),
            ("overridden-chartA-B.SCAfloat", json!(41.3)),
            ("overridden-chartA-B.SCAint", json!(808.0)),
            ("overridden-chartA-B.SCAstring", json!("jabberwocky")),
            ("overridden-chartA-B.SCBbool", json!(false)),
            ("overridden-chartA-B.SCBfloat", json!(1.99)),
            ("overridden-chartA-B.SCBint", json!(77.0)),
            ("overridden-chartA-B.SCBstring", json!("jango")),
            ("overridden-chartA-B.SPextra6", json!(111.0)),
            ("overridden-chartA-B.SCAextra1", json!(23.0)),
            ("overridden-chartA-B.SCBextra1", json!(13.0)),
            ("overridden-chartA-B.SC1extra6", json!(77.0)),
            ("SCBexported1B", json!(1965.0)),
            ("SC1extra7", json!(true)),
            ("SCBexported2A", json!("blaster")),
            ("global.SC1exported2.all.SC1exported3", json!("SC1expstr")),
        ];
        let mut chart = loaded.clone();
        process_import_values(&mut chart, false, &mut Vec::new()).unwrap();
        for (path, want) in expected {
            assert_eq!(values::path_value(&chart.values, path), Some(want), "{path}");
        }
        assert!(!chart.values.contains_key("ensurenull"), "coalescing drops nulls");

        let mut chart = loaded;
        process_import_values(&mut chart, true, &mut Vec::new()).unwrap();
        assert_eq!(chart.values.get("ensurenull"), Some(&Value::Null), "merging keeps nulls");
        assert_eq!(
            chart.metadata.dependencies[0].import_values[6],
            json!({"child": "exports.SCBexported2", "parent": "."}),
            "the short form is rewritten"
        );
    }

    #[test]
    fn aliases_load_a_subchart_twice() {
        let root = tempfile::tempdir().unwrap();
        let mut chart = population(root.path());
        process_dependencies(
            &mut chart,
            json!({"subchart2alias": {"enabled": true}, "tags": {"back-end": true}}).as_object().unwrap(),
        )
        .unwrap();
        let names: Vec<&str> = chart.dependencies.iter().map(Chart::name).collect();
        assert_eq!(names, ["subchart1", "subchart2", "subchart2alias"]);
        let dependency_names: Vec<&str> = chart.metadata.dependencies.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(dependency_names, ["subchart1", "subchart2", "subchart2alias"], "metadata names follow aliases");
    }

    #[test]
    fn missing_dependencies_are_named() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("wp");
        write(
            &dir,
            &[(
                "Chart.yaml",
                "apiVersion: v2\nname: wp\nversion: 1.0.0\ndependencies:\n- {name: wordpress, version: 9.0.3, repository: https://charts.example.com}\n",
            )],
        );
        let error = check_dependencies(&load(&dir).unwrap()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "chart \"wordpress\" 9.0.3 (repository https://charts.example.com) is missing from charts/: run 'bosun deps wp'"
        );
    }
}
