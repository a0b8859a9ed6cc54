//! `bosun render`: print a package's manifests (no cluster needed).

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use bosun::{
    config,
    package::{Origin, PACKAGE_MARKERS, Package, PackageError, RenderSpec, is_marked_package},
    render::{self, Rendered, Scopes},
};
use serde_json::json;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// A YAML stream, one document per object, each with a `# Source:` comment.
    Yaml,
    /// A `v1` `List` in JSON.
    Json,
    /// The Locutus render-only form: `{"objects": {key: object}, "rollout": …}`.
    Map,
}

/// Where the manifests come from: a package directory, or Locutus-style flags.
#[derive(Debug, Clone, clap::Args)]
pub struct Source {
    /// Package directory (with a bosun.yaml, a kustomization.yaml, a main.jsonnet, or manifest
    /// files). Without it, the current directory when it has one of the first three.
    #[arg(value_name = "DIR", conflicts_with_all = ["files", "jsonnet"])]
    pub dir: Option<PathBuf>,

    /// Render every YAML/JSON file under DIR, keyed by path relative to DIR (Locutus `--renderer=file`).
    #[arg(long, value_name = "DIR", conflicts_with = "jsonnet")]
    pub files: Option<PathBuf>,

    /// A Locutus rollout file for `--files`.
    #[arg(long, value_name = "FILE", requires = "files")]
    pub rollout: Option<PathBuf>,

    /// Render this jsonnet program (Locutus `--renderer=jsonnet`).
    #[arg(long, value_name = "FILE")]
    pub jsonnet: Option<PathBuf>,

    /// Add a jsonnet library directory (repeatable; searched in order, then `vendor`).
    #[arg(short = 'J', long = "jpath", value_name = "DIR")]
    pub jpath: Vec<PathBuf>,

    /// Configuration file (JSON or YAML) for the renderer; repeatable, later files win key by key.
    #[arg(long = "config", value_name = "FILE")]
    pub config: Vec<PathBuf>,

    /// Namespace for namespaced objects that name none (default: the kubeconfig's), as
    /// `kubectl apply -n`; the package's inventory goes there too unless it names its own.
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

/// Arguments of `bosun render`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  bosun render examples/jsonnet --config prod.yaml\n  bosun render --files manifests --rollout rollout.yaml -o map\n  bosun render --jsonnet main.jsonnet -J vendor --config config.json"
)]
pub struct Args {
    #[command(flatten)]
    pub source: Source,

    /// Output format.
    #[arg(short, long, value_enum, default_value = "yaml")]
    pub output: Output,

    /// Print the plan (groups and steps, declared or default) instead of the manifests.
    #[arg(long)]
    pub show_plan: bool,
}

/// Why a package could not be loaded or rendered (all bad input: exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The flags do not name a package.
    #[error("{0}")]
    Arguments(String),
    /// The package directory or its `bosun.yaml`.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// The configuration files.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// The renderer or its output.
    #[error(transparent)]
    Render(#[from] render::RenderError),
    /// The rollout cannot be planned.
    #[error(transparent)]
    Plan(#[from] bosun::plan::PlanError),
    /// `spec.suspend: true` for a command that writes.
    #[error("{file}: spec.suspend is true: the package is suspended; set it to false (or remove it) to apply")]
    Suspended {
        /// The `bosun.yaml`.
        file: String,
    },
}

impl Source {
    /// The package these arguments describe.
    pub fn package(&self) -> Result<Package, SourceError> {
        let mut package = if let Some(dir) = &self.files {
            Package::from_files(dir, self.rollout.as_deref())
        } else if let Some(file) = &self.jsonnet {
            if !file.is_file() {
                return Err(SourceError::Arguments(format!("{}: no such jsonnet file", file.display())));
            }
            Package::from_jsonnet(file, &self.jpath)
        } else {
            let dir = match &self.dir {
                Some(dir) => dir.clone(),
                // The current directory only when it is clearly a package: rendering whatever
                // happens to be there (a repository with test fixtures) is never what was meant.
                None if is_marked_package(Path::new(".")) => PathBuf::from("."),
                None => {
                    return Err(SourceError::Arguments(format!(
                        "no package given: pass DIR, --files DIR or --jsonnet FILE (the current directory has none of {})",
                        PACKAGE_MARKERS.join(", ")
                    )));
                }
            };
            Package::load(&dir)?
        };
        if self.jsonnet.is_none() && !self.jpath.is_empty() {
            match &mut package.spec.render {
                Some(RenderSpec::Jsonnet(spec)) => spec.jpath.extend(
                    self.jpath
                        .iter()
                        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()).display().to_string()),
                ),
                _ => return Err(SourceError::Arguments("-J/--jpath only applies to jsonnet packages".into())),
            }
        }
        Ok(package)
    }

    /// The namespace for objects without one: `-n`, else the kubeconfig's.
    pub fn default_namespace<'a>(&'a self, kubeconfig: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(kubeconfig)
    }

    /// [`Source::render`], printing the rendering's warnings to stderr.
    pub async fn render_with_warnings(
        &self,
        cluster: Option<&kube::Client>,
    ) -> Result<(Package, Rendered), SourceError> {
        let rendered = self.render(cluster).await?;
        let package = &rendered.0;
        if let Origin::File(file) = &package.origin {
            for field in package.spec.controller_only_fields() {
                let hint = match field {
                    "interval" => "; for `bosun apply` pass --interval",
                    "suspend" => "; `bosun apply` and `bosun dev` refuse a suspended package",
                    _ => "",
                };
                eprintln!(
                    "warning: {}: spec.{field} is only acted on by the Package controller; this command ignores it{hint}",
                    file.display()
                );
            }
        }
        for warning in &rendered.1.warnings {
            eprintln!("warning: {warning}");
        }
        Ok(rendered)
    }

    /// Refuses a package whose `bosun.yaml` says `suspend: true` (for the commands that write).
    pub fn check_not_suspended(package: &Package) -> Result<(), SourceError> {
        match (&package.origin, package.spec.suspend) {
            (Origin::File(file), Some(true)) => Err(SourceError::Suspended { file: file.display().to_string() }),
            _ => Ok(()),
        }
    }

    /// Loads the package and its configuration and renders it. With a target namespace or `-n`,
    /// kinds unknown to bosun are looked up in `cluster` (the command's; `bosun render` has none
    /// and tries the kubeconfig's) when it is reachable.
    pub async fn render(&self, cluster: Option<&kube::Client>) -> Result<(Package, Rendered), SourceError> {
        let package = self.package()?;
        let config = config::load(&package.spec.config, &package.dir, &self.config)?;
        let mut scopes = Scopes::builtin();
        if package.spec.target_namespace.is_some() || self.namespace.is_some() {
            scopes = cluster_scopes(scopes, cluster).await;
        }
        let for_render = package.clone();
        let namespace = self.namespace.clone();
        let rendered = tokio::task::spawn_blocking(move || {
            let mut rendered = render::render(&for_render, &config, &scopes)?;
            if let Some(namespace) = namespace {
                rendered.default_namespace(&namespace, &scopes);
            }
            Ok::<_, render::RenderError>(rendered)
        })
        .await
        .map_err(|e| SourceError::Arguments(format!("rendering stopped: {e}")))??;
        Ok((package, rendered))
    }
}

/// Adds the scopes of a reachable cluster; without one, the built-ins are enough.
async fn cluster_scopes(builtin: Scopes, cluster: Option<&kube::Client>) -> Scopes {
    let attempt = async {
        let client = match cluster {
            Some(client) => client.clone(),
            None => kube::Client::try_from(kube::Config::infer().await.ok()?).ok()?,
        };
        builtin.clone().with_cluster(client).await.ok()
    };
    match tokio::time::timeout(Duration::from_secs(3), attempt).await {
        Ok(Some(scopes)) => scopes,
        _ => builtin,
    }
}

fn print_plan(package: &Package, rendered: &Rendered) -> Result<(), SourceError> {
    let plan = bosun::plan::plan(&rendered.manifests, rendered.rollout.as_ref())?;
    let source = if rendered.rollout.is_some() { "declared rollout" } else { "default plan" };
    println!("{}: {} group(s), {source}", package.name, plan.groups.len());
    for (index, group) in plan.groups.iter().enumerate() {
        let mut notes = Vec::new();
        if group.parallel {
            notes.push("steps in parallel".to_string());
        }
        if group.wait == bosun::plan::GroupWait::Always {
            notes.push("waits for health before the next group".to_string());
        }
        if let Some(timeout) = group.timeout {
            notes.push(format!("timeout {}", bosun::package::Interval(timeout)));
        }
        let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join(", ")) };
        println!("{}. {}{notes}", index + 1, group.name);
        for step in &group.steps {
            let checks: usize = step.checks.iter().map(|c| c.field_comparisons.len()).sum();
            let checks = if checks > 0 { format!(" [{checks} success check(s)]") } else { String::new() };
            println!("   {:?}{checks}", step.action);
            for key in &step.keys {
                let object = rendered.manifests.get(key).map(|m| m.describe()).unwrap_or_default();
                println!("     {object}  ({key})");
            }
        }
    }
    Ok(())
}

/// Runs `bosun render`.
pub async fn run(args: Args) -> ExitCode {
    let (package, rendered) = match args.source.render_with_warnings(None).await {
        Ok(result) => result,
        Err(message) => return crate::bad_input(message),
    };
    if args.show_plan {
        return match print_plan(&package, &rendered) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => crate::bad_input(error),
        };
    }
    let text = match args.output {
        Output::Yaml => rendered.manifests.to_yaml(),
        Output::Json => format!("{:#}\n", rendered.manifests.to_list()),
        Output::Map => {
            let rollout = rendered.rollout.as_ref().map(|r| r.to_locutus(&package.name));
            format!("{:#}\n", json!({"objects": rendered.manifests.to_map(), "rollout": rollout}))
        }
    };
    print!("{text}");
    ExitCode::SUCCESS
}
