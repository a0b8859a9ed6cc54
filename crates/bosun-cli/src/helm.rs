//! The flags of `render`, `diff`, `apply` and `dev` for Helm charts, spelt as Helm users type
//! them (`--release-name`, `-f`, `--set…`, `--kube-version`, `--api-versions`, `--skip-crds`,
//! `--include-tests`), and what they do to a package: they extend its `spec.render.helm`, and
//! are refused on a package that is not a chart.

use std::path::{Path, PathBuf};

use bosun::package::Package;

use bosun_api::package::{HelmSpec, RenderSpec};

/// Helm's flags.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Helm charts")]
pub struct HelmFlags {
    /// `.Release.Name` (default: the chart's directory name, or the package's name).
    #[arg(long, value_name = "NAME")]
    pub release_name: Option<String>,

    /// A values file, over the chart's `values.yaml` (repeatable; later files win).
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,

    /// A value (`image.tag=1.2`, `list[0].name=a`, `a\.b=c` for a dotted key; repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub set: Vec<String>,

    /// A value kept as a string (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub set_string: Vec<String>,

    /// A value read from a file (`key=path`; repeatable).
    #[arg(long, value_name = "KEY=PATH")]
    pub set_file: Vec<String>,

    /// A JSON value (`key=<JSON>`, or a JSON object merged at the top; repeatable).
    #[arg(long, value_name = "KEY=JSON")]
    pub set_json: Vec<String>,

    /// `.Capabilities.KubeVersion` when rendering without a cluster.
    #[arg(long, value_name = "VERSION")]
    pub kube_version: Option<String>,

    /// API versions for `.Capabilities.APIVersions` (repeatable or comma-separated).
    #[arg(long, value_name = "GROUP/VERSION", value_delimiter = ',')]
    pub api_versions: Vec<String>,

    /// Leave out the CRDs of the charts' `crds/` directories.
    #[arg(long)]
    pub skip_crds: bool,

    /// Keep the chart's test hooks (`helm.sh/hook: test`).
    #[arg(long, conflicts_with = "skip_tests")]
    pub include_tests: bool,

    /// Leave out the chart's test hooks (the default).
    #[arg(long)]
    pub skip_tests: bool,
}

impl HelmFlags {
    /// The flags given, as the user typed them (for messages).
    fn given(&self) -> Vec<&'static str> {
        [
            ("--release-name", self.release_name.is_some()),
            ("-f/--values", !self.values.is_empty()),
            ("--set", !self.set.is_empty()),
            ("--set-string", !self.set_string.is_empty()),
            ("--set-file", !self.set_file.is_empty()),
            ("--set-json", !self.set_json.is_empty()),
            ("--kube-version", self.kube_version.is_some()),
            ("--api-versions", !self.api_versions.is_empty()),
            ("--skip-crds", self.skip_crds),
            ("--include-tests", self.include_tests),
            ("--skip-tests", self.skip_tests),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }

    /// Why these flags cannot work without a package: `-f` is Helm's values, not kubectl's
    /// file.
    pub fn without_package(&self, command: &str) -> Option<String> {
        let file = self.values.first()?;
        Some(format!(
            "-f/--values gives Helm values and needs a chart (a DIR with Chart.yaml); to {command} a manifest file, pass it as DIR: bosun {command} {}",
            file.display()
        ))
    }

    /// Adds the flags to the package's `spec.render.helm`.
    ///
    /// # Errors
    /// Flags given for a package that is not a Helm chart.
    pub fn apply_to(&self, package: &mut Package, command: &str) -> Result<(), String> {
        let given = self.given();
        if given.is_empty() {
            return Ok(());
        }
        let Some(RenderSpec::Helm(spec)) = &mut package.spec.render else {
            let what = if given.len() == 1 {
                format!("{} is a Helm flag", given[0])
            } else {
                format!("{} are Helm flags", given.join(", "))
            };
            let mut message = format!("{what}, and {} is not a Helm chart (no Chart.yaml)", package.dir.display());
            if let Some(file) = self.values.first() {
                message.push_str(&format!(
                    "; to {command} a manifest file, pass it as DIR: bosun {command} {}",
                    file.display()
                ));
            }
            return Err(message);
        };
        self.extend(spec);
        Ok(())
    }

    fn extend(&self, spec: &mut HelmSpec) {
        if let Some(name) = &self.release_name {
            spec.release_name = Some(name.clone());
        }
        spec.values_files.extend(self.values.iter().map(|file| absolute(file).display().to_string()));
        spec.set.extend(self.set.iter().cloned());
        spec.set_string.extend(self.set_string.iter().cloned());
        spec.set_file.extend(self.set_file.iter().map(|pairs| absolute_file_pairs(pairs)));
        spec.set_json.extend(self.set_json.iter().cloned());
        if let Some(version) = &self.kube_version {
            spec.kube_version = Some(version.clone());
        }
        spec.api_versions.extend(self.api_versions.iter().filter(|v| !v.is_empty()).cloned());
        spec.skip_crds |= self.skip_crds;
        if self.include_tests {
            spec.include_tests = true;
        }
        if self.skip_tests {
            spec.include_tests = false;
        }
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `--set-file key=path[,key=path]` with the paths made absolute: they are relative to the
/// working directory, and the renderer reads relative paths from the package.
fn absolute_file_pairs(pairs: &str) -> String {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in pairs.chars() {
        if c == ',' && !escaped {
            out.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    out.push(current);
    out.iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, path)) => format!("{key}={}", absolute(Path::new(path)).display()),
            None => pair.clone(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(dir: &Path) -> Package {
        Package::load(dir).expect("package")
    }

    #[test]
    fn flags_extend_the_charts_spec_in_helms_terms() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("Chart.yaml"), "apiVersion: v2\nname: web\nversion: 1.0.0\n").expect("write");
        let flags = HelmFlags {
            release_name: Some("prod".into()),
            values: vec!["a.yaml".into(), "/etc/b.yaml".into()],
            set: vec!["x=1".into()],
            set_file: vec!["cert=tls.crt,key=/keys/k".into()],
            api_versions: vec!["example.com/v1".into(), "".into()],
            include_tests: true,
            ..HelmFlags::default()
        };
        let mut chart = package(dir.path());
        flags.apply_to(&mut chart, "render").expect("a chart takes them");
        let Some(RenderSpec::Helm(spec)) = chart.spec.render else { panic!("helm") };
        let cwd = std::env::current_dir().expect("cwd");
        assert_eq!(spec.release_name.as_deref(), Some("prod"));
        assert_eq!(spec.values_files, [cwd.join("a.yaml").display().to_string(), "/etc/b.yaml".into()]);
        assert_eq!(spec.set, ["x=1"]);
        assert_eq!(spec.set_file, [format!("cert={},key=/keys/k", cwd.join("tls.crt").display())]);
        assert_eq!(spec.api_versions, ["example.com/v1"]);
        assert!(spec.include_tests);
    }

    #[test]
    fn flags_on_a_package_that_is_not_a_chart_are_refused_with_the_way_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
            .expect("write");
        let flags = HelmFlags { values: vec!["x.yaml".into()], ..HelmFlags::default() };
        let error = flags.apply_to(&mut package(dir.path()), "apply").expect_err("not a chart");
        assert_eq!(
            error,
            format!(
                "-f/--values is a Helm flag, and {} is not a Helm chart (no Chart.yaml); to apply a manifest file, pass it as DIR: bosun apply x.yaml",
                dir.path().display()
            )
        );
        let flags = HelmFlags { set: vec!["a=b".into()], skip_crds: true, ..HelmFlags::default() };
        let error = flags.apply_to(&mut package(dir.path()), "render").expect_err("not a chart");
        assert!(error.starts_with("--set, --skip-crds are Helm flags, and "), "{error}");
        assert!(HelmFlags::default().apply_to(&mut package(dir.path()), "render").is_ok());
    }
}
