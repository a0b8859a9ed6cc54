//! An ApplicationSet's generators evaluated as Argo CD's ApplicationSet controller evaluates
//! them (pure, given the cluster Secrets and the Git trees read): `list`, `clusters`, `git`
//! (directories and files), `matrix` and `merge`, each set's parameters flat
//! (`path.basename`, for `{{…}}` templates) or nested (`.path.basename`, for Go templates).
//! Combining and selecting are shared with bosun's Fleet (`crate::generate`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use bosun_api::argo::application::{IN_CLUSTER_NAME, IN_CLUSTER_SERVER};
use bosun_api::argo::applicationset::{
    ApplicationSetGenerator, ClusterGenerator, Combination, GitGenerator, ListGenerator, Selector,
};
use bosun_api::fleet::{LabelSelector, Requirement};

use super::template::{Engine, normalized};
use crate::generate::{
    GenerateError, Join, ParamSet, Params, exactly_one, flatten, invalid, matching, merged, product, render_strings,
    selects,
};

pub(crate) use crate::argo::clusters::ArgoCluster;

/// A Git repository's tree at a revision: its directories and files (relative,
/// `/`-separated, hidden ones left out), and where it is checked out.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tree {
    /// The directories.
    pub directories: Vec<String>,
    /// The files.
    pub files: Vec<String>,
    /// The checkout.
    pub root: PathBuf,
}

/// A repository and revision, as a `git` generator names them (after templating).
pub(crate) type RepoKey = (String, String);

/// What generators read from outside the ApplicationSet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inputs<'a> {
    /// The cluster Secrets.
    pub clusters: &'a [ArgoCluster],
    /// The Git trees read so far.
    pub trees: &'a BTreeMap<RepoKey, Tree>,
}

/// Why generation stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A repository must be read first (then generation runs again).
    Read(RepoKey),
    /// The ApplicationSet cannot generate, naming the field.
    Invalid(GenerateError),
}

impl From<GenerateError> for Stop {
    fn from(error: GenerateError) -> Stop {
        Stop::Invalid(error)
    }
}

/// The parameter sets of `generator` at `field`.
pub(crate) fn generate(
    field: &str,
    generator: &ApplicationSetGenerator,
    engine: &Engine,
    inputs: Inputs<'_>,
) -> Result<Vec<ParamSet>, Stop> {
    let ApplicationSetGenerator {
        list,
        clusters,
        git,
        matrix,
        merge,
        selector,
        scm_provider,
        pull_request,
        cluster_decision_resource,
        plugin,
    } = generator;
    let refused = [
        ("scmProvider", scm_provider.is_some()),
        ("pullRequest", pull_request.is_some()),
        ("clusterDecisionResource", cluster_decision_resource.is_some()),
        ("plugin", plugin.is_some()),
    ];
    if let Some((name, _)) = refused.iter().find(|(_, set)| *set) {
        return Err(unsupported(&format!("{field}.{name}"), "this generator is not evaluated"));
    }
    let templates = [
        list.as_ref().and_then(|g| g.template.as_ref()),
        clusters.as_ref().and_then(|g| g.template.as_ref()),
        git.as_ref().and_then(|g| g.template.as_ref()),
        matrix.as_ref().and_then(|g| g.template.as_ref()),
        merge.as_ref().and_then(|g| g.template.as_ref()),
    ];
    if templates.iter().any(Option::is_some) {
        let which = exactly_one(field, &kinds(generator))?;
        return Err(unsupported(&format!("{field}.{which}.template"), "a generator's own template is not applied"));
    }
    let which = exactly_one(field, &kinds(generator))?;
    let field = format!("{field}.{which}");
    let join = if engine.nested() { Join::Nested } else { Join::Flat };
    let sets = match (list, clusters, git, matrix, merge) {
        (Some(list), ..) => list_sets(&field, list, engine)?,
        (_, Some(clusters), ..) => cluster_sets(&field, clusters, engine, inputs.clusters)?,
        (_, _, Some(git), ..) => git_sets(&field, git, engine, inputs.trees)?,
        (.., Some(matrix), _) => {
            let [first, second] = two(&field, matrix)?;
            let firsts = generate(&format!("{field}.generators[0]"), first, engine, inputs)?;
            let second_field = format!("{field}.generators[1]");
            let mut stop = None;
            let sets = product(
                &field,
                &firsts,
                |set| {
                    // The second generator may use the first's parameters.
                    let templated = templated(second, &set.values, engine, &second_field)?;
                    generate(&second_field, &templated, engine, inputs).map_err(|s| {
                        let error = match &s {
                            Stop::Invalid(error) => error.clone(),
                            Stop::Read(_) => invalid(&second_field, "a repository to read"),
                        };
                        stop = Some(s);
                        error
                    })
                },
                join,
            );
            match (sets, stop) {
                (_, Some(stop)) => return Err(stop),
                (sets, None) => sets?,
            }
        }
        (.., Some(merge)) => {
            if merge.generators.len() < 2 {
                return Err(invalid(&format!("{field}.generators"), "at least two generators").into());
            }
            let mut sets = generate(&format!("{field}.generators[0]"), &merge.generators[0], engine, inputs)?;
            for (index, other) in merge.generators.iter().enumerate().skip(1) {
                let others = generate(&format!("{field}.generators[{index}]"), other, engine, inputs)?;
                sets = merged(&field, &merge.merge_keys, sets, &others, join)?;
            }
            sets
        }
        _ => unreachable!("exactly one generator is set"),
    };
    match selector {
        Some(selector) => filter(&format!("{field}.selector"), selector, sets),
        None => Ok(sets),
    }
}

/// The generator kinds, each with whether it is set.
fn kinds(generator: &ApplicationSetGenerator) -> [(&'static str, bool); 5] {
    [
        ("list", generator.list.is_some()),
        ("clusters", generator.clusters.is_some()),
        ("git", generator.git.is_some()),
        ("matrix", generator.matrix.is_some()),
        ("merge", generator.merge.is_some()),
    ]
}

/// A field bosun does not honour yet, by name.
pub(crate) fn unsupported(field: &str, why: &str) -> Stop {
    Stop::Invalid(invalid(
        field,
        format!("bosun does not honour this yet: {why} (docs/argo-applicationset.md lists what it does)"),
    ))
}

/// The two generators of a matrix.
fn two<'a>(field: &str, matrix: &'a Combination) -> Result<[&'a ApplicationSetGenerator; 2], Stop> {
    match matrix.generators.as_slice() {
        [a, b] => Ok([a, b]),
        _ => Err(invalid(&format!("{field}.generators"), "exactly two generators").into()),
    }
}

/// A generator with every string templated with `params`.
fn templated(
    generator: &ApplicationSetGenerator,
    params: &Params,
    engine: &Engine,
    field: &str,
) -> Result<ApplicationSetGenerator, GenerateError> {
    let mut value = serde_json::to_value(generator).unwrap_or_default();
    render_strings(&mut value, field, true, &mut |text| engine.render(text, params))?;
    serde_json::from_value(value).map_err(|e| invalid(field, e.to_string()))
}

/// The sets whose parameters (flattened, as text) the selector matches.
fn filter(field: &str, selector: &Selector, sets: Vec<ParamSet>) -> Result<Vec<ParamSet>, Stop> {
    let selector = label_selector(selector);
    let mut kept = Vec::new();
    for set in sets {
        let mut flat = Params::new();
        for (key, value) in &set.values {
            flatten(key, value, &mut flat);
        }
        let labels = flat.into_iter().map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string())).collect();
        if selects(&selector, &labels).map_err(|m| invalid(field, m))? {
            kept.push(set);
        }
    }
    Ok(kept)
}

/// Argo CD's selector as the shared one.
pub(crate) fn label_selector(selector: &Selector) -> LabelSelector {
    LabelSelector {
        match_labels: selector.match_labels.clone(),
        match_expressions: selector
            .match_expressions
            .iter()
            .map(|e| Requirement { key: e.key.clone(), operator: e.operator.clone(), values: e.values.clone() })
            .collect(),
    }
}

/// `list`: an element per set; flat parameters must be text (`values` an object of text),
/// as Argo CD's.
fn list_sets(field: &str, list: &ListGenerator, engine: &Engine) -> Result<Vec<ParamSet>, Stop> {
    let mut elements = list.elements.clone();
    if let Some(text) = list.elements_yaml.as_deref().filter(|t| !t.trim().is_empty()) {
        match bosun_helm::yaml::parse_object(text) {
            Ok(Value::Array(items)) => elements.extend(items),
            Ok(_) => return Err(invalid(&format!("{field}.elementsYaml"), "not a YAML list").into()),
            Err(e) => return Err(invalid(&format!("{field}.elementsYaml"), e.to_string()).into()),
        }
    }
    let mut sets = Vec::new();
    for (index, element) in elements.into_iter().enumerate() {
        let at = format!("{field}.elements[{index}]");
        let Value::Object(object) = element else { return Err(invalid(&at, "an object").into()) };
        if engine.nested() {
            sets.push(ParamSet::of(object.into_iter().collect()));
            continue;
        }
        let mut params = Params::new();
        for (key, value) in object {
            match (key.as_str(), value) {
                ("values", Value::Object(values)) => {
                    for (inner, value) in values {
                        let Value::String(_) = value else {
                            return Err(invalid(&format!("{at}.values.{inner}"), "a string").into());
                        };
                        params.insert(format!("values.{inner}"), value);
                    }
                }
                (_, value @ Value::String(_)) => {
                    params.insert(key, value);
                }
                _ => return Err(invalid(&format!("{at}.{key}"), "a string (nested values need goTemplate)").into()),
            }
        }
        sets.push(ParamSet::of(params));
    }
    Ok(sets)
}

/// `clusters`: the matching cluster Secrets, and `in-cluster` when no selector is set and no
/// Secret names the local cluster.
fn cluster_sets(
    field: &str,
    generator: &ClusterGenerator,
    engine: &Engine,
    clusters: &[ArgoCluster],
) -> Result<Vec<ParamSet>, Stop> {
    if generator.flat_list == Some(true) {
        return Err(unsupported(&format!("{field}.flatList"), "one set per cluster only"));
    }
    let selector = generator.selector.as_ref().map(label_selector).unwrap_or_default();
    let selecting = !selector.match_labels.is_empty() || !selector.match_expressions.is_empty();
    let mut chosen = Vec::new();
    for cluster in clusters {
        if selects(&selector, &cluster.labels).map_err(|m| invalid(&format!("{field}.selector"), m))? {
            chosen.push(cluster.clone());
        }
    }
    if !selecting && !clusters.iter().any(|c| c.server == IN_CLUSTER_SERVER) {
        let local =
            ArgoCluster { name: IN_CLUSTER_NAME.into(), server: IN_CLUSTER_SERVER.into(), ..Default::default() };
        chosen.push(local);
    }
    chosen
        .iter()
        .map(|cluster| {
            let mut params = cluster_params(cluster, engine.nested());
            add_values(&mut params, &generator.values, engine, &format!("{field}.values"))?;
            Ok(ParamSet::of(params))
        })
        .collect()
}

/// A cluster's parameters: `name`, `nameNormalized`, `server`, `project`, and its Secret's
/// labels and annotations under `metadata`.
fn cluster_params(cluster: &ArgoCluster, nested: bool) -> Params {
    let mut params = Params::from([
        ("name".to_string(), json!(cluster.name)),
        ("nameNormalized".to_string(), json!(normalized(&cluster.name))),
        ("server".to_string(), json!(cluster.server)),
        ("project".to_string(), json!(cluster.project)),
    ]);
    if nested {
        params.insert("metadata".into(), json!({"labels": cluster.labels, "annotations": cluster.annotations}));
    } else {
        for (key, value) in &cluster.labels {
            params.insert(format!("metadata.labels.{key}"), json!(value));
        }
        for (key, value) in &cluster.annotations {
            params.insert(format!("metadata.annotations.{key}"), json!(value));
        }
    }
    params
}

/// `values`, each templated with the set's parameters, as `values.<key>` (nested: `values`).
fn add_values(
    params: &mut Params,
    values: &BTreeMap<String, String>,
    engine: &Engine,
    field: &str,
) -> Result<(), GenerateError> {
    if values.is_empty() {
        return Ok(());
    }
    let mut rendered = Map::new();
    for (key, text) in values {
        let value = engine.render(text, params).map_err(|m| invalid(&format!("{field}.{key}"), m))?;
        rendered.insert(key.clone(), Value::String(value));
    }
    if engine.nested() {
        params.insert("values".into(), Value::Object(rendered));
    } else {
        params.extend(rendered.into_iter().map(|(k, v)| (format!("values.{k}"), v)));
    }
    Ok(())
}

/// `git`: the repository's directories, or a set per object of each file, matching the globs.
fn git_sets(
    field: &str,
    generator: &GitGenerator,
    engine: &Engine,
    trees: &BTreeMap<RepoKey, Tree>,
) -> Result<Vec<ParamSet>, Stop> {
    let key = (generator.repo_url.clone(), generator.revision.clone());
    let Some(tree) = trees.get(&key) else { return Err(Stop::Read(key)) };
    let (globs, name, entries) = match (generator.directories.is_empty(), generator.files.is_empty()) {
        (false, true) => (&generator.directories, "directories", &tree.directories),
        (true, false) => (&generator.files, "files", &tree.files),
        _ => return Err(invalid(field, "exactly one of directories, files").into()),
    };
    let split = |exclude: bool| -> Vec<(String, &str)> {
        globs
            .iter()
            .enumerate()
            .filter(|(_, g)| g.exclude == exclude)
            .map(|(i, g)| (format!("{field}.{name}[{i}].path"), g.path.as_str()))
            .collect()
    };
    let found = matching(entries, &split(false), &split(true), name == "files")?;
    let mut sets = Vec::new();
    for entry in found {
        let objects = match name {
            "files" => file_objects(&format!("{field}.files"), tree, entry)?,
            _ => vec![Map::new()],
        };
        let directory = match name {
            "files" => entry.rsplit_once('/').map_or("", |(dir, _)| dir),
            _ => entry.as_str(),
        };
        let file = (name == "files").then(|| entry.rsplit('/').next().unwrap_or(entry));
        for object in objects {
            let mut params = Params::new();
            if engine.nested() {
                params.extend(object);
            } else {
                for (key, value) in &object {
                    flatten(key, value, &mut params);
                }
            }
            path_params(&mut params, &generator.path_param_prefix, directory, file, engine.nested());
            add_values(&mut params, &generator.values, engine, &format!("{field}.values"))?;
            sets.push(ParamSet::of(params));
        }
    }
    Ok(sets)
}

/// The objects of a JSON or YAML file (a list gives one each).
fn file_objects(field: &str, tree: &Tree, file: &str) -> Result<Vec<Map<String, Value>>, GenerateError> {
    let text = std::fs::read_to_string(tree.root.join(file)).map_err(|e| invalid(field, format!("{file}: {e}")))?;
    let parsed = bosun_helm::yaml::parse_object(&text).map_err(|e| invalid(field, format!("{file}: {e}")))?;
    let items = match parsed {
        Value::Array(items) => items,
        other => vec![other],
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::Object(object) => Ok(object),
            _ => Err(invalid(field, format!("{file}: not an object"))),
        })
        .collect()
}

/// `path`, `path.basename`, `path.basenameNormalized`, `path[N]` (and `path.filename`,
/// `path.filenameNormalized` for a file), under `<prefix>.` when given; nested:
/// `path.{path, basename, basenameNormalized, filename, filenameNormalized, segments}`.
fn path_params(params: &mut Params, prefix: &str, directory: &str, file: Option<&str>, nested: bool) {
    let basename = directory.rsplit('/').next().unwrap_or(directory);
    let segments: Vec<&str> = directory.split('/').collect();
    if nested {
        let mut path = json!({
            "path": directory, "basename": basename, "basenameNormalized": normalized(basename), "segments": segments,
        });
        if let Some(file) = file {
            path["filename"] = json!(file);
            path["filenameNormalized"] = json!(normalized(file));
        }
        match prefix {
            "" => params.insert("path".into(), path),
            prefix => params.insert(prefix.into(), json!({"path": path})),
        };
        return;
    }
    let name = match prefix {
        "" => "path".to_string(),
        prefix => format!("{prefix}.path"),
    };
    params.insert(name.clone(), json!(directory));
    params.insert(format!("{name}.basename"), json!(basename));
    params.insert(format!("{name}.basenameNormalized"), json!(normalized(basename)));
    if let Some(file) = file {
        params.insert(format!("{name}.filename"), json!(file));
        params.insert(format!("{name}.filenameNormalized"), json!(normalized(file)));
    }
    for (index, segment) in segments.iter().enumerate() {
        params.insert(format!("{name}[{index}]"), json!(segment));
    }
}

#[cfg(test)]
mod tests;
