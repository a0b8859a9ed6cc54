//! `bosun render`: print a package's manifests (no cluster needed).

use crate::stdout::{out, outln};

use std::process::ExitCode;

use bosun::package::Package;

use bosun::plan::hooks::{Phase, Role, classify};
use bosun::render::{HookStyle, Rendered};
use serde_json::json;

use crate::source::{PackageLoadError, Source};

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

/// Arguments of `bosun render`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  bosun render examples/jsonnet --config prod.yaml\n  bosun render --files manifests --rollout rollout.yaml -o map\n  bosun render --jsonnet main.jsonnet -J vendor --config config.json\n  bosun render ./my-chart -f values-prod.yaml --set image.tag=1.2 -n shop"
)]
pub struct Args {
    #[command(flatten)]
    pub source: Source,

    /// Output format.
    #[arg(short, long, value_enum, default_value = "yaml")]
    pub output: Output,

    /// Print the plan (phases, waves, hooks, groups and steps, declared or default) instead of
    /// the manifests.
    #[arg(long)]
    pub show_plan: bool,

    /// Print a chart's NOTES.txt, rendered, instead of the manifests (what `helm install`
    /// prints after installing; nothing for a chart without notes).
    #[arg(long, conflicts_with = "show_plan")]
    pub notes: bool,
}

fn print_plan(package: &Package, rendered: &Rendered) -> Result<(), PackageLoadError> {
    let plan = bosun::plan::plan(rendered)?;
    let source =
        match (&rendered.rollout, plan.groups.iter().any(|g| g.phase != Phase::Sync || g.name.contains("wave"))) {
            (Some(_), _) => "declared rollout",
            (None, true) => "phases and waves",
            (None, false) => "default plan",
        };
    // How Helm's annotations were read matters only to a plan with hooks.
    let hooked = plan.groups.iter().any(|g| g.steps.iter().any(|s| s.hook.is_some()));
    let style = match (hooked, rendered.hooks) {
        (false, _) => "",
        (true, HookStyle::ArgoCd) => "; Helm hook annotations read as Argo CD maps them",
        (true, HookStyle::Helm) => "; Helm hooks run as Helm runs a release",
    };
    outln!("{}: {} group(s), {source}{style}", package.name, plan.groups.len());
    for (index, group) in plan.groups.iter().enumerate() {
        let mut notes = Vec::new();
        match group.phase {
            Phase::SyncFail => notes.push("only when the rollout fails".to_string()),
            Phase::PreDelete => notes.push("only when the package is deleted, before its objects".to_string()),
            Phase::PostDelete => notes.push("only when the package is deleted, after its objects".to_string()),
            _ => {}
        }
        if group.parallel {
            notes.push("steps in parallel".to_string());
        }
        if group.wait == bosun::plan::GroupWait::Always {
            notes.push("waits for health before the next group".to_string());
        }
        if let Some(timeout) = group.timeout {
            notes.push(format!("timeout {}", bosun_api::Interval(timeout)));
        }
        let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join(", ")) };
        outln!("{}. {}{notes}", index + 1, group.name);
        for step in &group.steps {
            let checks: usize = step.checks.iter().map(|c| c.field_comparisons.len()).sum();
            let checks = if checks > 0 { format!(" [{checks} success check(s)]") } else { String::new() };
            match step.hook {
                Some(on) if on.names().is_empty() => outln!("   Hooks (created, waited on until complete)"),
                Some(on) => outln!("   Hooks (created, waited on until complete; on {} only)", on.names().join(", ")),
                None => outln!("   {:?}{checks}", step.action),
            }
            for key in &step.keys {
                let Some(manifest) = rendered.manifests.get(key) else { continue };
                let mut rules = bosun::policy::reasons(&manifest.object);
                if step.hook.is_some()
                    && let Role::Hook(hook) = classify(&manifest.object, rendered.hooks).role
                {
                    rules.insert(0, format!("delete: {}", hook.delete.names().join(", ")));
                }
                let rules = if rules.is_empty() { String::new() } else { format!("  [{}]", rules.join("; ")) };
                outln!("     {}  ({key}){rules}", manifest.describe());
            }
        }
    }
    if !plan.left.is_empty() {
        outln!("not applied:");
        for (object, why) in &plan.left {
            outln!("   {object}: {why}");
        }
    }
    Ok(())
}

/// Runs `bosun render`.
pub async fn run(args: Args) -> ExitCode {
    let (package, rendered) = match args.source.render_with_warnings("render", None).await {
        Ok(result) => result,
        Err(message) => return crate::bad_input(message),
    };
    if args.show_plan {
        return match print_plan(&package, &rendered) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => crate::bad_input(error),
        };
    }
    if args.notes {
        if !rendered.notes.trim().is_empty() {
            outln!("{}", rendered.notes.trim_end());
        }
        return ExitCode::SUCCESS;
    }
    let text = match args.output {
        Output::Yaml => rendered.to_yaml(),
        Output::Json => format!("{:#}\n", rendered.manifests.to_list()),
        Output::Map => {
            let rollout = rendered.rollout.as_ref().map(|r| r.to_locutus(&package.name));
            format!("{:#}\n", json!({"objects": rendered.manifests.to_map(), "rollout": rollout}))
        }
    };
    out!("{text}");
    ExitCode::SUCCESS
}
