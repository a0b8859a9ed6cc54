//! Helm charts without the `helm` binary: everything about a chart except executing its
//! templates.
//!
//! bosun renders Helm charts in-process so that a chart becomes a package like any other
//! (planned, dry-run, applied, health-checked, pruned). This crate loads charts (directories
//! and `.tgz` archives), reads and coalesces values exactly as Helm does (values files,
//! `--set` and its siblings, globals, `null` deleting defaults), validates them against
//! `values.schema.json`, resolves dependencies (conditions, tags, aliases, `import-values`),
//! reads repository indexes, builds what templates see (`.Release`, `.Chart`, `.Capabilities`,
//! `.Files`, `.Template`), prints YAML, JSON and TOML as Helm's functions do, and assembles
//! rendered text into ordered manifests and hooks as `helm template` prints them. A template
//! engine (Go's text/template) is a separate crate; the two meet in the caller.
//!
//! Everything here is pure and synchronous: no network, no cluster, and no other bosun crate
//! (only the workspace's general-purpose dependencies). Files are read only by the chart
//! loader, from the path it is given.
//!
//! The modules, in the order a render uses them:
//!
//! - [`load`]: a [`chart::Chart`] from a directory or archive ([`ignore`] for
//!   `.helmignore`, [`chart`] for `Chart.yaml` and lock files).
//! - [`values`]: values files and [`strvals`] (`--set…`) merged in Helm's order, coalesced
//!   with chart defaults. Numbers: see [`golang`] (`f64` = Go `float64`, `i64` = `int64`).
//! - [`render::prepare`]: the install checks, [`dependencies`] processing, coalescing,
//!   [`schema`] validation, then each template with its [`render::Scope`] in Helm's parse
//!   order ([`release`] for `.Release` and `.Capabilities`, [`files`] for `.Files`).
//! - [`manifest`]: rendered text to [`manifest::Rendered`] (manifests in install order, hooks,
//!   CRDs, notes) and `helm template`'s output.
//! - Functions for the engine: [`yaml::to_yaml`], [`yaml::from_yaml`],
//!   [`yaml::from_yaml_array`], [`golang::to_json`], [`golang::from_json`],
//!   [`golang::from_json_array`], [`toml::to_toml`], [`golang::sprint`] (Go's `%v`).
//! - [`repo`]: `index.yaml` and version constraints ([`semver`], Masterminds' rules).
//!
//! How the joining step uses it (the engine's API is the other crate's; Helm's engine also
//! removes `<no value>` from each output and parses all templates into one set so that
//! `include` and `template` see every `define`):
//!
//! ```no_run
//! use bosun_helm::{load, manifest, release, render, values};
//! use std::collections::BTreeMap;
//!
//! # struct Engine;
//! # impl Engine {
//! #     fn parse(&mut self, _name: &str, _text: &str) -> Result<(), String> { Ok(()) }
//! #     fn execute(&self, _name: &str, _data: &serde_json::Value, _files: &bosun_helm::files::Files) -> Result<String, String> { Ok(String::new()) }
//! # }
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let mut engine = Engine;
//! let chart = load::load(std::path::Path::new("mychart"))?;
//! let sources = values::ValueSources { set: vec!["image.tag=1.2".into()], ..Default::default() };
//! let user_values = sources.merge(&|path: &str| std::fs::read_to_string(path).map_err(|e| e.to_string()))?;
//! let release = release::ReleaseOptions::template_defaults();
//! let prepared = render::prepare(chart, &user_values, &release, &release::Capabilities::helm_defaults(&[]))?;
//! for template in &prepared.templates {
//!     engine.parse(&template.name, &template.text)?;
//! }
//! let mut rendered = BTreeMap::new();
//! for template in prepared.templates.iter().filter(|t| !t.partial) {
//!     let files = &prepared.scopes[template.scope].files;
//!     let text = engine.execute(&template.name, &prepared.data(template), files)?;
//!     rendered.insert(template.name.clone(), text.replace("<no value>", ""));
//! }
//! let result = manifest::assemble(&prepared.chart, &rendered, manifest::AssembleOptions::default())?;
//! print!("{}", manifest::print(&result, manifest::PrintOptions::default()));
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod chart;
pub mod dependencies;
pub mod golang;
pub mod ignore;
pub mod load;
pub mod pattern;
pub mod semver;
pub mod strvals;
pub mod values;
pub mod yaml;

/// Chart fixtures the unit tests write into temporary directories.
#[cfg(test)]
mod test_files {
    use std::path::Path;

    /// Writes `files` (path, content) below `dir`.
    pub fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, content) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }
}
pub mod files;
pub mod manifest;
pub mod release;
pub mod render;
pub mod repo;
pub mod schema;
pub mod toml;
