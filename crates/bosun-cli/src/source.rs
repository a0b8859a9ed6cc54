//! The flags that name a package (`DIR`, or Locutus' `--files`/`--jsonnet`), shared by
//! `render`, `diff` and `apply`, and what every command does with a package before using it:
//! load it, render it through the library pipeline, print its warnings.

use std::path::{Path, PathBuf};

use bosun::decrypt::Keys;

use bosun::package::{Origin, PACKAGE_MARKERS, Package, PackageError, is_marked_package};

use bosun_api::package::RenderSpec;

use bosun::pipeline::{self, PipelineError, RenderOptions};

use bosun::render::Rendered;

use crate::helm::HelmFlags;

/// Where the manifests come from: a package directory, or Locutus-style flags.
#[derive(Debug, Clone, clap::Args)]
pub struct Source {
    /// Package directory (with a bosun.yaml, a Helm chart's Chart.yaml, a kustomization.yaml, a
    /// main.jsonnet, or manifest files), or one manifest file. Without it, the current
    /// directory when it has one of the first four.
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

    /// Decrypt SOPS-encrypted manifests with the age keys in FILE (as `age-keygen` writes them;
    /// repeatable). Without it, an encrypted manifest is an error.
    #[arg(long = "decrypt-key", value_name = "FILE", env = "SOPS_AGE_KEY_FILE")]
    pub decrypt_keys: Vec<PathBuf>,

    #[command(flatten)]
    pub helm: HelmFlags,

    #[command(flatten)]
    pub jsonnet_inputs: JsonnetInputs,
}

/// The cluster a command renders for, and its namespace for objects without one (`-n`, else
/// the kubeconfig's).
#[derive(Clone, Copy)]
pub struct Cluster<'a> {
    /// The client.
    pub client: &'a kube::Client,
    /// The namespace.
    pub namespace: &'a str,
}

/// Inputs of jsonnet programs, as the `jsonnet` command (and Argo CD's Application) gives them.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JsonnetInputs {
    /// A top-level argument of jsonnet programs, as a string: NAME=VALUE (repeatable).
    #[arg(long = "tla-str", value_name = "NAME=VALUE")]
    pub tla_str: Vec<String>,

    /// A top-level argument of jsonnet programs, as jsonnet code: NAME=CODE (repeatable).
    #[arg(long = "tla-code", value_name = "NAME=CODE")]
    pub tla_code: Vec<String>,

    /// An external variable (`std.extVar`) of jsonnet programs, as a string: NAME=VALUE
    /// (repeatable).
    #[arg(long = "ext-str", value_name = "NAME=VALUE")]
    pub ext_str: Vec<String>,

    /// An external variable of jsonnet programs, as jsonnet code: NAME=CODE (repeatable).
    #[arg(long = "ext-code", value_name = "NAME=CODE")]
    pub ext_code: Vec<String>,
}

impl JsonnetInputs {
    /// Adds the inputs to a jsonnet package's spec (over the values its `bosun.yaml` gives);
    /// an error for any other package.
    pub fn add_to(&self, package: &mut Package) -> Result<(), PackageLoadError> {
        let given = [
            ("--tla-str", &self.tla_str),
            ("--tla-code", &self.tla_code),
            ("--ext-str", &self.ext_str),
            ("--ext-code", &self.ext_code),
        ];
        let Some((flag, _)) = given.iter().find(|(_, values)| !values.is_empty()) else { return Ok(()) };
        let RenderSpec::Jsonnet(mut spec) = package.renderer() else {
            return Err(PackageLoadError::Arguments(format!(
                "{flag} only applies to jsonnet packages; {} renders otherwise",
                package.dir.display()
            )));
        };
        let pairs = |flag: &str, values: &[String]| -> Result<Vec<(String, String)>, PackageLoadError> {
            values
                .iter()
                .map(|pair| match pair.split_once('=') {
                    Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
                    _ => Err(PackageLoadError::Arguments(format!("{flag} {pair}: give NAME=VALUE"))),
                })
                .collect()
        };
        for (name, value) in pairs("--tla-str", &self.tla_str)? {
            spec.tla_code.remove(&name);
            spec.tlas.insert(name, serde_json::Value::String(value));
        }
        for (name, code) in pairs("--tla-code", &self.tla_code)? {
            spec.tlas.remove(&name);
            spec.tla_code.insert(name, code);
        }
        for (name, value) in pairs("--ext-str", &self.ext_str)? {
            spec.ext_code.remove(&name);
            spec.ext_vars.insert(name, serde_json::Value::String(value));
        }
        for (name, code) in pairs("--ext-code", &self.ext_code)? {
            spec.ext_vars.remove(&name);
            spec.ext_code.insert(name, code);
        }
        package.spec.render = Some(RenderSpec::Jsonnet(spec));
        Ok(())
    }
}

/// Why a package could not be loaded or rendered (all bad input: exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum PackageLoadError {
    /// The flags do not name a package.
    #[error("{0}")]
    Arguments(String),
    /// The package directory or its `bosun.yaml`.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// Configuration or rendering.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// The rollout cannot be planned.
    #[error(transparent)]
    Plan(#[from] bosun::plan::PlanError),
    /// A `--decrypt-key` file.
    #[error(transparent)]
    Keys(#[from] bosun::decrypt::DecryptError),
    /// `spec.suspend: true` for a command that writes.
    #[error("{file}: spec.suspend is true: the package is suspended; set it to false (or remove it) to apply")]
    Suspended {
        /// The `bosun.yaml`.
        file: String,
    },
}

impl Source {
    /// The package these arguments describe; `command` names the command in messages.
    pub fn package(&self, command: &str) -> Result<Package, PackageLoadError> {
        let mut package = if let Some(dir) = &self.files {
            Package::from_files(dir, self.rollout.as_deref())
        } else if let Some(file) = &self.jsonnet {
            if !file.is_file() {
                return Err(PackageLoadError::Arguments(format!("{}: no such jsonnet file", file.display())));
            }
            Package::from_jsonnet(file, &self.jpath)
        } else {
            let dir = match &self.dir {
                Some(dir) => dir.clone(),
                // The current directory only when it is clearly a package: rendering whatever
                // happens to be there (a repository with test fixtures) is never what was meant.
                None if is_marked_package(Path::new(".")) => PathBuf::from("."),
                None => {
                    if let Some(message) = self.helm.without_package(command) {
                        return Err(PackageLoadError::Arguments(message));
                    }
                    return Err(PackageLoadError::Arguments(format!(
                        "no package given: pass DIR, --files DIR or --jsonnet FILE (the current directory has none of {})",
                        PACKAGE_MARKERS.join(", ")
                    )));
                }
            };
            if dir.is_file() { Package::from_file(&dir) } else { Package::load(&dir)? }
        };
        self.helm.apply_to(&mut package, command).map_err(PackageLoadError::Arguments)?;
        if self.jsonnet.is_none() && !self.jpath.is_empty() {
            match &mut package.spec.render {
                Some(RenderSpec::Jsonnet(spec)) => spec.jpath.extend(
                    self.jpath
                        .iter()
                        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()).display().to_string()),
                ),
                _ => return Err(PackageLoadError::Arguments("-J/--jpath only applies to jsonnet packages".into())),
            }
        }
        self.jsonnet_inputs.add_to(&mut package)?;
        Ok(package)
    }

    /// The age keys of the `--decrypt-key` files, if any.
    fn keys(&self) -> Result<Option<Keys>, PackageLoadError> {
        let mut all: Option<Keys> = None;
        for file in &self.decrypt_keys {
            let origin = file.display().to_string();
            let text = std::fs::read_to_string(file).map_err(|e| {
                PackageLoadError::Arguments(format!("--decrypt-key {origin}: {}", bosun_core::cluster::root_cause(&e)))
            })?;
            let keys = Keys::parse(&text, &origin)?;
            match all.as_mut() {
                Some(all) => all.extend(keys),
                None => all = Some(keys),
            }
        }
        Ok(all)
    }

    /// The namespace for objects without one: `-n`, else the kubeconfig's.
    pub fn default_namespace<'a>(&'a self, kubeconfig: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(kubeconfig)
    }

    /// [`Source::render`], printing the rendering's warnings to stderr.
    pub async fn render_with_warnings(
        &self,
        command: &str,
        cluster: Option<&Cluster<'_>>,
    ) -> Result<(Package, Rendered), PackageLoadError> {
        let rendered = self.render(command, cluster).await?;
        print_warnings(&rendered.0, &rendered.1);
        Ok(rendered)
    }

    /// Loads the package and renders it ([`pipeline::render`]), for `cluster` when given (a
    /// Helm chart then renders as its release there). With a target namespace or `-n`, kinds
    /// unknown to bosun are looked up in the cluster (the command's; `bosun render` has none
    /// and tries the kubeconfig's) when it is reachable.
    pub async fn render(
        &self,
        command: &str,
        cluster: Option<&Cluster<'_>>,
    ) -> Result<(Package, Rendered), PackageLoadError> {
        let package = self.package(command)?;
        let helm_release = match cluster {
            Some(cluster) => pipeline::helm_release(cluster.client, &package, cluster.namespace).await?,
            None => None,
        };
        let options = RenderOptions {
            config_files: self.config.clone(),
            default_namespace: self.namespace.clone(),
            decryption: self.keys()?,
            helm_release,
            ..RenderOptions::default()
        };
        let cluster = cluster.map(|c| c.client);
        let inferred = match cluster {
            None if package.spec.target_namespace.is_some() || self.namespace.is_some() => inferred_client().await,
            _ => None,
        };
        let rendered = pipeline::render(&package, &options, cluster.or(inferred.as_ref())).await?;
        Ok((package, rendered))
    }
}

/// Prints what the user should know about a rendered package: the `bosun.yaml` fields this
/// command does not act on, and the renderer's warnings.
pub fn print_warnings(package: &Package, rendered: &Rendered) {
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
    for warning in &rendered.warnings {
        eprintln!("warning: {warning}");
    }
    // Hook, wave and per-object annotations that mean nothing (a planning error is reported
    // where the plan is made).
    if let Ok(plan) = bosun::plan::plan(rendered) {
        for warning in &plan.warnings {
            eprintln!("warning: {warning}");
        }
    }
}

/// Refuses a package whose `bosun.yaml` says `suspend: true` (for the commands that write).
pub fn check_not_suspended(package: &Package) -> Result<(), PackageLoadError> {
    match (&package.origin, package.spec.suspend) {
        (Origin::File(file), Some(true)) => Err(PackageLoadError::Suspended { file: file.display().to_string() }),
        _ => Ok(()),
    }
}

/// The kubeconfig's cluster, for `bosun render` to scope unknown kinds; none when there is no
/// kubeconfig (rendering needs no cluster).
async fn inferred_client() -> Option<kube::Client> {
    kube::Client::try_from(kube::Config::infer().await.ok()?).ok()
}
