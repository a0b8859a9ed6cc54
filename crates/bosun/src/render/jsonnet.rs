//! The jsonnet renderer, in-process with jrsonnet. The configuration is `std.extVar('config')`
//! and `import 'generic-operator/config'` (as Locutus provides it); further inputs (an
//! operator's `related` and `finalizing`) are external variables too. What the program may
//! return is in [`super::output`]. A package without `main.jsonnet` (and naming no program) is
//! rendered as Argo CD renders a directory: every `*.jsonnet` file of it, each returning an
//! object or a list of objects, with the directory's YAML and JSON files.

use bosun_core::file::FileError;
use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
};

use jrsonnet_evaluator::{
    AsPathLike, FileImportResolver, IStr, ImportCallbackError, ImportResolver, SourcePath, SourceVirtual, State,
    apply_tla,
    manifest::JsonFormat,
    tla::TlaArg,
    trace::{CompactFormat, PathResolver, TraceFormat},
};
use jrsonnet_gcmodule::Acyclic;
use serde_json::Value;

use super::{
    Input, Manifests, RenderError,
    output::{self, Output},
    sandbox::{self, PackageFiles},
};
use bosun_api::package::{FilesSpec, JsonnetSpec};

/// The import path under which programs find their configuration (Locutus' name for it).
pub(crate) const CONFIG_IMPORT: &str = "generic-operator/config";

/// Evaluation runs on its own thread: jrsonnet keeps per-thread state, and deep programs want
/// more stack than a worker thread has.
pub(super) const EVALUATION_STACK: usize = 256 * 1024 * 1024;

/// Files from the package and its library paths, plus the virtual configuration import. In a
/// sandbox, only files beneath `root` (its canonical form), symbolic links followed.
#[derive(Acyclic)]
struct PackageImports {
    files: FileImportResolver,
    config: Vec<u8>,
    root: Option<PathBuf>,
}

impl ImportResolver for PackageImports {
    fn resolve_from(&self, from: &SourcePath, path: &dyn AsPathLike) -> jrsonnet_evaluator::Result<SourcePath> {
        let named = path.as_path().as_ref().to_path_buf();
        if named == Path::new(CONFIG_IMPORT) {
            return Ok(SourcePath::new(SourceVirtual(CONFIG_IMPORT.into())));
        }
        let Some(root) = &self.root else { return self.files.resolve_from(from, path) };
        let outside = || {
            let message = format!("import {:?} is outside the package's source: imports must stay inside it", named);
            jrsonnet_evaluator::Error::from(ImportCallbackError(message))
        };
        // Refused before looking, so that the refusal says nothing of what exists outside.
        let from_dir = from.path().and_then(Path::parent).map(Path::to_path_buf);
        let base = from_dir.unwrap_or_else(|| root.clone());
        // The entrypoint is imported by its absolute path, inside the root.
        let (base, relative) = match named.strip_prefix(root) {
            Ok(inside) => (root.clone(), inside.to_path_buf()),
            Err(_) => (base, named.clone()),
        };
        if sandbox::lexically_beneath(root, &base, &relative).is_none() {
            return Err(outside());
        }
        let resolved = self.files.resolve_from(from, path)?;
        match resolved.path() {
            Some(file) if file.canonicalize().is_ok_and(|real| real.starts_with(root)) => Ok(resolved),
            Some(_) => Err(outside()),
            None => Ok(resolved),
        }
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

/// Evaluates the program `entry` to JSON text; errors come back with their jsonnet stack trace.
fn evaluate(program: &Program, config: &Value, extra: &BTreeMap<String, Value>) -> Result<String, String> {
    let Program { dir, spec, entry, library, root } = program;
    let config_json = config.to_string();
    let resolver = PackageImports {
        files: FileImportResolver::new(library.clone()),
        config: config_json.clone().into_bytes(),
        root: root.clone(),
    };
    let stdlib = jrsonnet_stdlib::ContextInitializer::new(PathResolver::Relative(dir.to_path_buf()));
    {
        let mut settings = stdlib.settings_mut();
        settings.ext_vars.insert("config".into(), TlaArg::InlineCode(config_json));
        for (name, value) in spec.ext_vars.iter().chain(extra) {
            settings.ext_vars.insert(name.as_str().into(), argument(value));
        }
        for (name, code) in &spec.ext_code {
            settings.ext_vars.insert(name.as_str().into(), TlaArg::InlineCode(code.clone()));
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
    let entrypoint = dir.join(entry);
    let value = state.import(entrypoint.as_path()).map_err(shown)?;
    // IStr is an interned string whose hash never changes; clippy cannot know that.
    #[allow(clippy::mutable_key_type)]
    let tlas: HashMap<IStr, TlaArg> = spec
        .tlas
        .iter()
        .map(|(k, v)| (k.as_str().into(), argument(v)))
        .chain(spec.tla_code.iter().map(|(k, code)| (k.as_str().into(), TlaArg::InlineCode(code.clone()))))
        .collect();
    let value = apply_tla(&tlas, value).map_err(shown)?;
    value.manifest(JsonFormat::minify()).map_err(shown)
}

/// A program to evaluate: its directory (canonical), spec, entrypoint (relative to the
/// directory), library paths, and the sandbox's root (canonical) if any.
struct Program {
    dir: PathBuf,
    spec: JsonnetSpec,
    entry: String,
    library: Vec<PathBuf>,
    root: Option<PathBuf>,
}

impl Program {
    /// The program `entry` of the package in `dir` (canonical), its library paths checked
    /// against the sandbox.
    fn new(dir: &Path, spec: &JsonnetSpec, entry: &str, input: &Input<'_>) -> Result<Program, RenderError> {
        let files = PackageFiles { dir, sandbox: input.sandbox };
        let mut library = Vec::new();
        for (index, path) in spec.jpath.iter().enumerate() {
            library.push(files.path(path, &format!("spec.render.jsonnet.jpath[{index}]"))?);
        }
        library.push(dir.join("vendor"));
        let root = input.sandbox.map(|s| s.root.canonicalize().unwrap_or_else(|_| s.root.clone()));
        Ok(Program { dir: dir.to_path_buf(), spec: spec.clone(), entry: entry.to_string(), library, root })
    }
}

/// Runs the program `entry` (relative to the package) with its inputs, to JSON.
fn run(
    package_dir: &Path,
    dir: &Path,
    spec: &JsonnetSpec,
    entry: &str,
    input: &Input<'_>,
) -> Result<Value, RenderError> {
    let failed = |trace: String| RenderError::Jsonnet { entrypoint: entry.to_string(), trace };
    let program = Program::new(dir, spec, entry, input)?;
    let (config, extra) = (input.config.clone(), input.extra.clone());
    let _watched = super::memory::watch(&package_dir.join(entry).display().to_string()).map_err(failed)?;
    let json = std::thread::Builder::new()
        .name("bosun-jsonnet".into())
        .stack_size(EVALUATION_STACK)
        .spawn(move || evaluate(&program, &config, &extra))
        .map_err(FileError::reading(package_dir.join(entry).display()))?
        .join()
        .map_err(|_| failed("the evaluator panicked".into()))?
        .map_err(failed)?;
    serde_json::from_str(&json).map_err(|e| RenderError::Output {
        origin: entry.to_string(),
        message: format!("invalid JSON from jsonnet: {e}"),
    })
}

/// Renders the jsonnet program of a package with its inputs (or, without one, every
/// `*.jsonnet` file of the package directory).
pub(crate) fn render(package_dir: &Path, spec: &JsonnetSpec, input: &Input<'_>) -> Result<Output, RenderError> {
    // Traces show paths relative to the package, which jrsonnet computes from a canonical base.
    let dir = package_dir.canonicalize().map_err(FileError::reading(package_dir.display()))?;
    let Some(entrypoint) = crate::package::jsonnet_program(spec, &dir) else {
        return render_directory(package_dir, &dir, spec, input);
    };
    let entry =
        PackageFiles { dir: &dir, sandbox: input.sandbox }.path(&entrypoint, "spec.render.jsonnet.entrypoint")?;
    if !entry.is_file() {
        return Err(FileError::missing(&entry, "the jsonnet entrypoint does not exist").into());
    }
    let output = run(package_dir, &dir, spec, &entrypoint, input)?;
    output::interpret(output, &entrypoint)
}

/// Every `*.jsonnet` file directly in the package directory (files in subdirectories, and
/// `*.libsonnet` files, are libraries), each keyed by its file name, after the directory's
/// YAML and JSON files.
fn render_directory(
    package_dir: &Path,
    dir: &Path,
    spec: &JsonnetSpec,
    input: &Input<'_>,
) -> Result<Output, RenderError> {
    let mut programs: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(super::read_dir_error(dir))? {
        let path = entry.map_err(super::read_dir_error(dir))?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.is_file() && name.ends_with(".jsonnet") && !name.starts_with('.') {
            programs.push(name);
        }
    }
    programs.sort();
    let files = FilesSpec { dir: ".".into(), rollout: None };
    let mut manifests = match super::files::render(package_dir, &files, input.sandbox) {
        Ok((manifests, _)) => manifests,
        Err(RenderError::NoManifests { .. }) => Manifests::default(),
        Err(error) => return Err(error),
    };
    for program in programs {
        let documents = match run(package_dir, dir, spec, &program, input)? {
            object if output::is_object(&object) => vec![object],
            Value::Array(items) if items.iter().all(output::is_object) => items,
            other => {
                return Err(RenderError::Output {
                    origin: program,
                    message: format!(
                        "the program returned {}; a jsonnet file of a directory returns an object or a list of objects",
                        output::type_name(&other)
                    ),
                });
            }
        };
        super::push_source(&mut manifests, &program, documents);
    }
    Ok(Output { manifests, ..Output::default() })
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
