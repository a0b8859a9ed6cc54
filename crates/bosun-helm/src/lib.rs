//! Helm charts without the `helm` binary: loading, values, dependencies, template execution
//! and `helm template`'s output.
//!
//! bosun renders Helm charts in-process so that a chart becomes a package like any other
//! (planned, dry-run, applied, health-checked, pruned). This crate loads charts (directories
//! and `.tgz` archives), reads and coalesces values exactly as Helm does (values files,
//! `--set` and its siblings, globals, `null` deleting defaults), validates them against
//! `values.schema.json`, resolves dependencies (conditions, tags, aliases, `import-values`),
//! reads repository indexes, builds what templates see (`.Release`, `.Chart`, `.Capabilities`,
//! `.Files`, `.Template`), executes the templates with Go's text/template and sprig
//! ([`bosun_gotemplate`]) plus Helm's own functions, and assembles the output into ordered
//! manifests and hooks as `helm template` prints them.
//!
//! Everything here is synchronous and reads no network and no cluster: files are read only by
//! the chart loader, from the path it is given, and `lookup` asks the caller ([`engine::Lookup`]).
//! The only bosun crate it uses is the template engine.
//!
//! The modules, in the order a render uses them:
//!
//! - [`load`]: a [`chart::Chart`] from a directory or archive (`ignore` for
//!   `.helmignore`, [`chart`] for `Chart.yaml` and lock files).
//! - [`values`]: values files and `strvals` (`--set…`) merged in Helm's order, coalesced
//!   with chart defaults. Numbers: see `golang` (`f64` = Go `float64`, `i64` = `int64`).
//! - [`render::prepare`]: the install checks, [`dependencies`] processing, coalescing,
//!   `schema` validation, then each template with its [`render::Scope`] in Helm's parse
//!   order ([`release`] for `.Release` and `.Capabilities`, `files` for `.Files`).
//! - [`engine`]: the templates executed (`engine::execute`) and assembled
//!   ([`engine::render`]).
//! - [`manifest`]: rendered text to [`manifest::RenderedChart`] (manifests in install order, hooks,
//!   CRDs, notes) and `helm template`'s output.
//! - The engine's YAML, JSON and TOML: [`yaml::to_yaml`], `yaml::from_yaml`,
//!   `yaml::from_yaml_array`, `golang::to_json`, `golang::from_json`,
//!   `golang::from_json_array`, `toml::to_toml`, `golang::sprint` (Go's `%v`).
//! - [`repo`]: `index.yaml`, its versions read by `bosun-semver` (Masterminds' rules).
//! - [`storage`]: releases as Helm's storage records them (`sh.helm.release.v1.<name>.v<n>`
//!   Secrets), so that Helm and Flux read what bosun installed and the other way round.
//!
//! The whole of `helm template`, from a chart directory to its printed output:
//!
//! ```no_run
//! use bosun_helm::{engine, load, manifest, release, render, values};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let chart = load::load(std::path::Path::new("mychart"))?;
//! let sources = values::ValueSources { set: vec!["image.tag=1.2".into()], ..Default::default() };
//! let user_values = sources.merge(&|path: &str| std::fs::read_to_string(path).map_err(|e| e.to_string()))?;
//! let release = release::ReleaseOptions::template_defaults();
//! let prepared = render::prepare(chart, &user_values, &release, &release::Capabilities::helm_defaults(&[]))?;
//! let result = engine::render(&prepared, &engine::EngineOptions::default(), manifest::AssembleOptions::default())?;
//! print!("{}", manifest::print(&result, manifest::PrintOptions::default()));
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]
// What the public modules below export is the crate's interface; the rest is its own.
#![deny(unreachable_pub)]

pub mod chart;
pub mod dependencies;
pub mod engine;
mod golang;
mod ignore;
pub mod load;
pub mod storage;
mod strvals;
pub mod values;
pub mod yaml;

// The errors of modules that stay the crate's own, named where the public errors carry them.
pub use ignore::IgnoreError;
pub use schema::SchemaError;
pub use strvals::StrvalsError;

/// Chart fixtures the unit tests write into temporary directories.
#[cfg(test)]
mod test_files {
    use std::path::Path;

    /// Writes `files` (path, content) below `dir`.
    pub(crate) fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, content) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }
}
mod files;
pub mod manifest;
pub mod release;
pub mod render;
pub mod repo;
mod schema;
mod toml;
