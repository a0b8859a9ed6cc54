//! Helm charts without the `helm` binary: everything about a chart except executing its
//! templates.
//!
//! bosun renders Helm charts in-process so that a chart becomes a package like any other
//! (planned, dry-run, applied, health-checked, pruned). This crate loads charts (directories
//! and `.tgz` archives), reads and coalesces values exactly as Helm does (values files,
//! `--set` and its siblings, globals, `null` deleting defaults), validates them against
//! `values.schema.json`, resolves dependencies (conditions, tags, aliases, `import-values`),
//! reads repository indexes, builds what templates see (`.Release`, `.Chart`, `.Capabilities`,
//! `.Files`, `.Template`), prints YAML and JSON as Helm's functions do, and assembles rendered
//! text into ordered manifests and hooks as `helm template` prints them. A template engine
//! (Go's text/template) is a separate crate; the two meet in the caller.
//!
//! Everything here is pure and synchronous: no network, no cluster, no other bosun crate.
//! Files are read only by the chart loader, from the path it is given.

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
