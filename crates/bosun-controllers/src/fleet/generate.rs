//! What a Fleet generates, decided without a cluster: the parameter sets of its generators
//! (given the registered clusters), `{{…}}` substituted into the template, and the Packages
//! that come out. Combining, selecting and substituting are shared with Argo CD's
//! ApplicationSet (`crate::generate`); the parameters' names and the Packages are the Fleet's.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use bosun_api::fleet::{BasicGenerator, Combination, DirectoriesGenerator, FleetSpec, Generator};
use bosun_api::package::PackageSpec;

pub(crate) use crate::generate::{GenerateError, selects};
use crate::generate::{Join, ParamSet, Params, Unknown, exactly_one, flatten, invalid, matching, merged, product};

/// A registered cluster, as the `clusters` generator sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// The Secret's name.
    pub name: String,
    /// The Secret's labels.
    pub labels: BTreeMap<String, String>,
}

/// What generators read from outside the Fleet.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Inputs<'a> {
    /// The registered clusters.
    pub clusters: &'a [Cluster],
    /// The directories of the template's source, relative, `/`-separated (when a
    /// `directories` generator asks for them).
    pub directories: &'a [String],
}

/// Whether any generator of `spec` is a `directories` one (the source must be fetched).
pub(crate) fn uses_directories(spec: &FleetSpec) -> bool {
    spec.generators.iter().any(|g| {
        g.directories.is_some()
            || [&g.matrix, &g.merge]
                .into_iter()
                .flatten()
                .any(|c| c.generators.iter().any(|inner| inner.directories.is_some()))
    })
}

/// A Package the Fleet generates.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Generated {
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// The spec.
    pub spec: PackageSpec,
}

/// The Packages `spec` generates from `inputs`, sorted by name.
pub(crate) fn packages(spec: &FleetSpec, inputs: Inputs<'_>) -> Result<Vec<Generated>, GenerateError> {
    let mut generated: BTreeMap<String, Generated> = BTreeMap::new();
    for (index, generator) in spec.generators.iter().enumerate() {
        let field = format!("spec.generators[{index}]");
        for set in generate(&field, generator, inputs)? {
            let package = instantiate(spec, &set)?;
            if let Some(earlier) = generated.get(&package.name)
                && earlier != &package
            {
                let message = format!("two parameter sets generate Package {} differently", package.name);
                return Err(invalid("spec.template.metadata.name", message));
            }
            generated.insert(package.name.clone(), package);
        }
    }
    Ok(generated.into_values().collect())
}

/// The template filled with one parameter set.
fn instantiate(spec: &FleetSpec, set: &ParamSet) -> Result<Generated, GenerateError> {
    let template = &spec.template;
    let name = substitute(&template.metadata.name, &set.values)
        .map_err(|message| invalid("spec.template.metadata.name", message))?;
    let map = |field: &str, map: &BTreeMap<String, String>| {
        map.iter()
            .map(|(key, value)| {
                let value = substitute(value, &set.values).map_err(|m| invalid(&format!("{field}.{key}"), m))?;
                Ok((key.clone(), value))
            })
            .collect::<Result<BTreeMap<_, _>, GenerateError>>()
    };
    let labels = map("spec.template.metadata.labels", &template.metadata.labels)?;
    let annotations = map("spec.template.metadata.annotations", &template.metadata.annotations)?;
    let mut value = template.spec.clone();
    crate::generate::render_strings(&mut value, "spec.template.spec", false, &mut |text| {
        substitute(text, &set.values)
    })?;
    if let (Some(cluster), Some(object)) = (&set.cluster, value.as_object_mut()) {
        object.entry("kubeConfig").or_insert_with(|| json!({"secretRef": {"name": cluster}}));
    }
    let spec: PackageSpec =
        serde_json::from_value(value).map_err(|e| invalid("spec.template.spec", format!("Package {name}: {e}")))?;
    Ok(Generated { name, labels, annotations, spec })
}

/// The parameter sets of one top-level generator.
fn generate(field: &str, generator: &Generator, inputs: Inputs<'_>) -> Result<Vec<ParamSet>, GenerateError> {
    let Generator { list, clusters, directories, matrix, merge } = generator;
    exactly_one(
        field,
        &[
            ("list", list.is_some()),
            ("clusters", clusters.is_some()),
            ("directories", directories.is_some()),
            ("matrix", matrix.is_some()),
            ("merge", merge.is_some()),
        ],
    )?;
    let basic = BasicGenerator { list: list.clone(), clusters: clusters.clone(), directories: directories.clone() };
    match (matrix, merge) {
        (Some(combination), _) => {
            let [a, b] = pair(&format!("{field}.matrix"), combination, inputs)?;
            product(&format!("{field}.matrix"), &a, |_| Ok(b.clone()), Join::Flat)
        }
        (_, Some(combination)) => {
            let field = format!("{field}.merge");
            let [base, other] = pair(&field, combination, inputs)?;
            merged(&field, &combination.merge_keys, base, &other, Join::Flat)
        }
        _ => basic_sets(field, &basic, inputs),
    }
}

/// The two generators' sets of a `matrix` or `merge`.
fn pair(field: &str, combination: &Combination, inputs: Inputs<'_>) -> Result<[Vec<ParamSet>; 2], GenerateError> {
    let [a, b] = combination.generators.as_slice() else {
        return Err(invalid(&format!("{field}.generators"), "exactly two generators"));
    };
    Ok([
        basic_sets(&format!("{field}.generators[0]"), a, inputs)?,
        basic_sets(&format!("{field}.generators[1]"), b, inputs)?,
    ])
}

fn basic_sets(field: &str, generator: &BasicGenerator, inputs: Inputs<'_>) -> Result<Vec<ParamSet>, GenerateError> {
    match (&generator.list, &generator.clusters, &generator.directories) {
        (Some(list), None, None) => list
            .elements
            .iter()
            .enumerate()
            .map(|(index, element)| {
                let Some(object) = element.as_object() else {
                    return Err(invalid(&format!("{field}.list.elements[{index}]"), "an object"));
                };
                let mut values = Params::new();
                for (key, value) in object {
                    flatten(key, value, &mut values);
                }
                Ok(ParamSet::of(values))
            })
            .collect(),
        (None, Some(generator), None) => {
            let selector = generator.selector.clone().unwrap_or_default();
            let mut sets = Vec::new();
            for cluster in inputs.clusters {
                if selects(&selector, &cluster.labels).map_err(|m| invalid(&format!("{field}.clusters.selector"), m))? {
                    sets.push(cluster_params(cluster));
                }
            }
            Ok(sets)
        }
        (None, None, Some(generator)) => directories(&format!("{field}.directories"), generator, inputs.directories),
        _ => Err(invalid(field, "exactly one of list, clusters, directories")),
    }
}

/// A set per directory matching a pattern of `paths` and none of `exclude`.
fn directories(field: &str, generator: &DirectoriesGenerator, all: &[String]) -> Result<Vec<ParamSet>, GenerateError> {
    fn globs<'a>(field: &str, name: &str, patterns: &'a [String]) -> Vec<(String, &'a str)> {
        patterns.iter().enumerate().map(|(i, p)| (format!("{field}.{name}[{i}]"), p.as_str())).collect()
    }
    let (paths, exclude) = (globs(field, "paths", &generator.paths), globs(field, "exclude", &generator.exclude));
    let sets = matching(all, &paths, &exclude, false)?
        .into_iter()
        .map(|dir| {
            let basename = dir.rsplit('/').next().unwrap_or(dir);
            ParamSet::of(Params::from([
                ("path".to_string(), Value::from(dir.as_str())),
                ("path.basename".to_string(), Value::from(basename)),
            ]))
        })
        .collect();
    Ok(sets)
}

fn cluster_params(cluster: &Cluster) -> ParamSet {
    let mut values = Params::from([("cluster.name".to_string(), Value::from(cluster.name.as_str()))]);
    for (key, value) in &cluster.labels {
        values.insert(format!("cluster.labels.{key}"), Value::from(value.as_str()));
    }
    ParamSet { values, cluster: Some(cluster.name.clone()) }
}

/// `text` with each `{{name}}` replaced; a name without a value is an error naming it.
fn substitute(text: &str, params: &Params) -> Result<String, String> {
    crate::generate::substitute(text, params, Unknown::Refuse)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn cluster(name: &str, labels: &[(&str, &str)]) -> Cluster {
        Cluster { name: name.into(), labels: params(labels) }
    }

    fn fleet(generators: Value) -> FleetSpec {
        serde_json::from_value(json!({
            "generators": generators,
            "template": {
                "metadata": {"name": "web-{{cluster.name}}-{{tier}}", "labels": {"env": "{{cluster.labels.env}}"}},
                "spec": {"source": {"dir": "/apps/{{tier}}"}, "substitute": {"region": "{{cluster.labels.region}}"}},
            },
        }))
        .expect("fleet")
    }

    fn names(generated: &[Generated]) -> Vec<&str> {
        generated.iter().map(|g| g.name.as_str()).collect()
    }

    #[test]
    fn generators_give_the_packages_expected() {
        let clusters = [
            cluster("eu", &[("env", "prod"), ("region", "eu")]),
            cluster("us", &[("env", "prod"), ("region", "us")]),
            cluster("dev", &[("env", "staging"), ("region", "eu")]),
        ];
        let tiers = json!({"list": {"elements": [{"tier": "api"}, {"tier": "ui"}]}});
        let cases: Vec<(Value, Result<Vec<&str>, &str>)> = vec![
            (
                json!([{"matrix": {"generators": [{"clusters": {}}, tiers]}}]),
                Ok(vec!["web-dev-api", "web-dev-ui", "web-eu-api", "web-eu-ui", "web-us-api", "web-us-ui"]),
            ),
            (
                json!([{"matrix": {"generators": [{"clusters": {"selector": {"matchLabels": {"env": "prod"}}}}, tiers]}}]),
                Ok(vec!["web-eu-api", "web-eu-ui", "web-us-api", "web-us-ui"]),
            ),
            (
                json!([{"matrix": {"generators": [
                    {"clusters": {"selector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["eu"]}]}}},
                    {"list": {"elements": [{"tier": "api"}]}},
                ]}}]),
                Ok(vec!["web-us-api"]),
            ),
            (
                json!([{"merge": {"mergeKeys": ["cluster.name"], "generators": [
                    {"clusters": {"selector": {"matchLabels": {"env": "prod"}}}},
                    {"list": {"elements": [{"cluster": {"name": "eu"}, "tier": "edge"}]}},
                ]}}]),
                Err(
                    "spec.template.metadata.name: \"web-{{cluster.name}}-{{tier}}\": no parameter tier (there are: cluster.labels.env, cluster.labels.region, cluster.name)",
                ),
            ),
            (
                json!([{"list": {"elements": [{"cluster": {"name": "a", "labels": {"env": "x", "region": "r"}}, "tier": "api"}]}}]),
                Ok(vec!["web-a-api"]),
            ),
            (
                json!([{"clusters": {}, "list": {"elements": []}}]),
                Err("spec.generators[0]: exactly one of list, clusters, directories, matrix, merge"),
            ),
            (
                json!([{"matrix": {"generators": [tiers]}}]),
                Err("spec.generators[0].matrix.generators: exactly two generators"),
            ),
            (
                json!([{"matrix": {"generators": [{"clusters": {}}, {"clusters": {}}]}}]),
                Err("spec.generators[0].matrix: both generators select clusters"),
            ),
            (
                json!([{"matrix": {"generators": [{"list": {"elements": [{"tier": "a"}]}}, {"list": {"elements": [{"tier": "b"}]}}]}}]),
                Err("spec.generators[0].matrix: both generators set tier (\"a\" and \"b\")"),
            ),
            (
                json!([{"clusters": {"selector": {"matchExpressions": [{"key": "env", "operator": "Like"}]}}}]),
                Err("spec.generators[0].clusters.selector: operator \"Like\": one of In, NotIn, Exists, DoesNotExist"),
            ),
        ];
        for (generators, expected) in cases {
            let result = packages(&fleet(generators.clone()), Inputs { clusters: &clusters, directories: &[] });
            match (&result, &expected) {
                (Ok(generated), Ok(expected)) => assert_eq!(&names(generated), expected, "{generators}"),
                (Err(error), Err(expected)) => assert_eq!(&error.to_string(), expected, "{generators}"),
                _ => panic!("{generators}: {result:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn a_merge_overrides_the_base_sets_with_the_same_keys() {
        let clusters = [cluster("eu", &[("env", "prod")]), cluster("us", &[("env", "prod")])];
        let mut spec = fleet(json!([{"merge": {"mergeKeys": ["cluster.name"], "generators": [
            {"clusters": {}},
            {"list": {"elements": [
                {"cluster": {"name": "eu"}, "tier": "edge"},
                {"cluster": {"name": "us"}, "tier": "api"},
                {"cluster": {"name": "mars"}, "tier": "x"},
            ]}},
        ]}}]));
        spec.template.metadata.labels.clear();
        spec.template.spec = json!({"source": {"dir": "/apps/{{ tier }}"}});
        let generated = packages(&spec, Inputs { clusters: &clusters, directories: &[] }).expect("generated");
        assert_eq!(names(&generated), ["web-eu-edge", "web-us-api"], "a set without a base set is not added");
        let dir = generated[0].spec.source.as_ref().and_then(|s| s.dir.clone());
        assert_eq!(dir.as_deref(), Some("/apps/edge"));
        assert!(generated.iter().all(|g| g.spec.kube_config.is_some()), "the base sets' clusters stay");
    }

    #[test]
    fn a_cluster_package_delivers_to_the_clusters_secret_and_fills_labels_and_spec() {
        let clusters = [cluster("eu", &[("env", "prod"), ("region", "eu")])];
        let spec =
            fleet(json!([{"matrix": {"generators": [{"clusters": {}}, {"list": {"elements": [{"tier": "api"}]}}]}}]));
        let generated = packages(&spec, Inputs { clusters: &clusters, directories: &[] }).expect("generated");
        let [package] = generated.as_slice() else { panic!("{generated:?}") };
        assert_eq!(package.labels, params(&[("env", "prod")]));
        assert_eq!(package.spec.source.as_ref().and_then(|s| s.dir.as_deref()), Some("/apps/api"));
        assert_eq!(package.spec.substitute, params(&[("region", "eu")]));
        let kube_config = package.spec.kube_config.as_ref().expect("kubeConfig");
        assert_eq!((kube_config.secret_ref.name.as_str(), kube_config.secret_ref.key.as_deref()), ("eu", None));

        // A list element is no cluster: no kubeConfig.
        let mut local = fleet(
            json!([{"list": {"elements": [{"cluster": {"name": "here", "labels": {"env": "dev", "region": "x"}}, "tier": "api"}]}}]),
        );
        local.template.spec["replicas"] = json!("{{tier}}");
        let error = packages(&local, Inputs::default()).expect_err("unknown field");
        assert!(
            error.to_string().starts_with("spec.template.spec: Package web-here-api: unknown field `replicas`"),
            "{error}"
        );
        local.template.spec.as_object_mut().expect("object").remove("replicas");
        assert_eq!(packages(&local, Inputs::default()).expect("generated")[0].spec.kube_config, None);
    }

    #[test]
    fn directories_matching_the_patterns_give_path_and_basename_and_combine_with_clusters() {
        let dirs: Vec<String> =
            ["apps", "apps/api", "apps/ui", "apps/ui/assets", "apps/legacy", "infra/db"].map(String::from).to_vec();
        let clusters = [cluster("eu", &[("env", "prod")])];
        let mut spec = fleet(json!([{"matrix": {"generators": [
            {"clusters": {}},
            {"directories": {"paths": ["apps/*", "infra/*"], "exclude": ["apps/legacy"]}},
        ]}}]));
        spec.template.metadata =
            serde_json::from_value(json!({"name": "{{path.basename}}-{{cluster.name}}"})).expect("metadata");
        spec.template.spec = json!({"source": {"dir": "/repo", "path": "{{path}}"}});
        let generated = packages(&spec, Inputs { clusters: &clusters, directories: &dirs }).expect("generated");
        assert_eq!(names(&generated), ["api-eu", "db-eu", "ui-eu"]);
        let paths: Vec<Option<&str>> =
            generated.iter().map(|g| g.spec.source.as_ref().and_then(|s| s.path.as_deref())).collect();
        assert_eq!(paths, [Some("apps/api"), Some("infra/db"), Some("apps/ui")]);
        assert!(uses_directories(&spec));
        assert!(!uses_directories(&fleet(json!([{"clusters": {}}]))));
        spec.generators = serde_json::from_value(json!([{"directories": {"paths": ["apps/["]}}])).expect("generators");
        let error = packages(&spec, Inputs { clusters: &clusters, directories: &dirs }).expect_err("bad pattern");
        assert_eq!(error.field, "spec.generators[0].directories.paths[0]");
    }
}
