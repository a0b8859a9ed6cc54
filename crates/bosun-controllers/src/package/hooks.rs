//! Hooks in the `Package` controller: whether a run runs them, and what the status and
//! events say of the hooks a run ran.

use kube::runtime::events::EventType;

use bosun::plan::hooks::Operation;
use bosun::report::{HookResult, Report};
use bosun_api::package::{PackageResource, PackageStatus};
use bosun_kit::Run;

/// Whether a run runs hooks, and as what operation (`None`: install or upgrade, as the
/// inventory says).
#[derive(Debug, Clone, Copy)]
pub(super) struct Hooks {
    pub(super) run: bool,
    pub(super) operation: Option<Operation>,
}

/// Puts the hooks a run ran into the status, and tells of them in one event (a warning when
/// one failed).
pub(super) async fn publish_hooks(
    run: &mut Run<PackageResource>,
    status: &mut PackageStatus,
    report: &Report,
    action: &str,
) {
    let hooks = report.hook_statuses();
    if hooks.is_empty() {
        return;
    }
    let lines: Vec<String> = report
        .changes
        .iter()
        .filter_map(|change| Some(format!("{}: {}", change.object, change.hook.as_ref()?.describe())))
        .collect();
    let failed = hooks.iter().any(|hook| hook.result == HookResult::Failed.word());
    let (kind, reason) = if failed { (EventType::Warning, "HookFailed") } else { (EventType::Normal, "Hooks") };
    status.hooks = hooks;
    run.publish(kind, reason, &lines.join("\n"), action).await;
}
