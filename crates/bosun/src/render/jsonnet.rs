//! The jsonnet renderer, in-process with jrsonnet. The configuration is `std.extVar('config')`
//! and `import 'generic-operator/config'` (as Locutus provides it); further inputs (an
//! operator's `related` and `finalizing`) are external variables too. What the program may
//! return is in [`super::output`].

use bosun_core::file::FileError;
use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
};

use jrsonnet_evaluator::{
    AsPathLike, FileImportResolver, IStr, ImportResolver, SourcePath, SourceVirtual, State, apply_tla,
    manifest::JsonFormat,
    tla::TlaArg,
    trace::{CompactFormat, PathResolver, TraceFormat},
};
use jrsonnet_gcmodule::Acyclic;
use serde_json::Value;

use super::{
    Input, RenderError,
    output::{self, Output},
};
use crate::package::JsonnetSpec;

/// The import path under which programs find their configuration (Locutus' name for it).
pub const CONFIG_IMPORT: &str = "generic-operator/config";

/// Evaluation runs on its own thread: jrsonnet keeps per-thread state, and deep programs want
/// more stack than a worker thread has.
const EVALUATION_STACK: usize = 256 * 1024 * 1024;

/// Files from the package and its library paths, plus the virtual configuration import.
#[derive(Acyclic)]
struct PackageImports {
    files: FileImportResolver,
    config: Vec<u8>,
}

impl ImportResolver for PackageImports {
    fn resolve_from(&self, from: &SourcePath, path: &dyn AsPathLike) -> jrsonnet_evaluator::Result<SourcePath> {
        if path.as_path().as_ref() == Path::new(CONFIG_IMPORT) {
            return Ok(SourcePath::new(SourceVirtual(CONFIG_IMPORT.into())));
        }
        self.files.resolve_from(from, path)
    }

    fn load_file_contents(&self, resolved: &SourcePath) -> jrsonnet_evaluator::Result<Vec<u8>> {
        if resolved.downcast_ref::<SourceVirtual>().is_some_and(|v| &*v.0 == CONFIG_IMPORT) {
            return Ok(self.config.clone());
        }
        self.files.load_file_contents(resolved)
    }
}

fn argument(value: &Value) -> TlaArg {
    match value {
        Value::String(text) => TlaArg::String(text.as_str().into()),
        other => TlaArg::InlineCode(other.to_string()),
    }
}

/// `trace` with runs of the same line (a runaway recursion's frames) shown once with a count:
/// a stack overflow would otherwise print the same frame hundreds of times.
fn collapse_repeats(trace: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut lines = trace.lines().peekable();
    while let Some(line) = lines.next() {
        let mut repeats = 0;
        while lines.peek() == Some(&line) {
            lines.next();
            repeats += 1;
        }
        out.push(line.to_string());
        if repeats > 0 {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push(format!("{indent}… the line above {repeats} more times"));
        }
    }
    out.join("\n")
}

/// Evaluates the program to JSON text; errors come back with their jsonnet stack trace.
fn evaluate(dir: &Path, spec: &JsonnetSpec, config: &Value, extra: &BTreeMap<String, Value>) -> Result<String, String> {
    let mut library: Vec<PathBuf> = spec.jpath.iter().map(|p| dir.join(p)).collect();
    library.push(dir.join("vendor"));
    let config_json = config.to_string();
    let resolver = PackageImports { files: FileImportResolver::new(library), config: config_json.clone().into_bytes() };
    let stdlib = jrsonnet_stdlib::ContextInitializer::new(PathResolver::Relative(dir.to_path_buf()));
    {
        let mut settings = stdlib.settings_mut();
        settings.ext_vars.insert("config".into(), TlaArg::InlineCode(config_json));
        for (name, value) in spec.ext_vars.iter().chain(extra) {
            settings.ext_vars.insert(name.as_str().into(), argument(value));
        }
    }
    let mut builder = State::builder();
    builder.import_resolver(resolver).context_initializer(stdlib);
    let state = builder.build();
    let _entered = state.enter();
    let trace = CompactFormat { resolver: PathResolver::Relative(dir.to_path_buf()), max_trace: 20, padding: 4 };
    let shown = |error: jrsonnet_evaluator::Error| {
        collapse_repeats(&trace.format(&error).unwrap_or_else(|_| error.to_string()))
    };
    let entrypoint = dir.join(&spec.entrypoint);
    let value = state.import(entrypoint.as_path()).map_err(shown)?;
    // IStr is an interned string whose hash never changes; clippy cannot know that.
    #[allow(clippy::mutable_key_type)]
    let tlas: HashMap<IStr, TlaArg> = spec.tlas.iter().map(|(k, v)| (k.as_str().into(), argument(v))).collect();
    let value = apply_tla(&tlas, value).map_err(shown)?;
    value.manifest(JsonFormat::minify()).map_err(shown)
}

/// Renders the jsonnet program of a package with its inputs.
pub fn render(package_dir: &Path, spec: &JsonnetSpec, input: &Input<'_>) -> Result<Output, RenderError> {
    // Traces show paths relative to the package, which jrsonnet computes from a canonical base.
    let dir = package_dir.canonicalize().map_err(FileError::reading(package_dir.display()))?;
    let entry = dir.join(&spec.entrypoint);
    if !entry.is_file() {
        return Err(FileError::missing(&entry, "the jsonnet entrypoint does not exist").into());
    }
    let (spec_owned, config, extra) = (spec.clone(), input.config.clone(), input.extra.clone());
    let _watched = super::memory::watch(&package_dir.join(&spec.entrypoint).display().to_string())
        .map_err(|trace| RenderError::Jsonnet { entrypoint: spec.entrypoint.clone(), trace })?;
    let json = std::thread::Builder::new()
        .name("bosun-jsonnet".into())
        .stack_size(EVALUATION_STACK)
        .spawn(move || evaluate(&dir, &spec_owned, &config, &extra))
        .map_err(FileError::reading(entry.display()))?
        .join()
        .map_err(|_| RenderError::Jsonnet {
            entrypoint: spec.entrypoint.clone(),
            trace: "the evaluator panicked".into(),
        })?
        .map_err(|trace| RenderError::Jsonnet { entrypoint: spec.entrypoint.clone(), trace })?;
    let output: Value = serde_json::from_str(&json).map_err(|e| RenderError::Output {
        origin: spec.entrypoint.clone(),
        message: format!("invalid JSON from jsonnet: {e}"),
    })?;
    output::interpret(output, &spec.entrypoint)
}

#[cfg(test)]
mod tests {
    use super::collapse_repeats;

    #[test]
    fn repeated_trace_lines_are_counted_not_repeated() {
        for (trace, expected) in [
            ("a\nb", "a\nb"),
            (
                "err\n    f call\n    f call\n    f call\n    g",
                "err\n    f call\n    … the line above 2 more times\n    g",
            ),
            ("x\nx", "x\n… the line above 1 more times"),
            ("", ""),
        ] {
            assert_eq!(collapse_repeats(trace), expected, "{trace:?}");
        }
    }
}
