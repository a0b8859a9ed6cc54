//! Hooks in the `Package` controller: whether a run runs them, and what the status and
//! events say of the hooks a run ran.

use std::sync::Arc;

use kube::runtime::events::EventType;

use bosun::plan::hooks::Operation;
use bosun::render::Rendered;
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

impl super::PackageReconciler {
    /// The Package's last rendering: the one this process keeps, else its source fetched and
    /// rendered again (a restarted controller deleting a Package).
    pub(super) async fn last_rendering(
        &self,
        run: &Run<PackageResource>,
        target: &super::Target,
    ) -> Result<Arc<Rendered>, String> {
        let resource = run.object().clone();
        if let Some(cached) = self.rendered.lock().unwrap_or_else(|e| e.into_inner()).get(&super::key(&resource)) {
            return Ok(cached.rendered.clone());
        }
        let (snapshot, dir) =
            super::fetch::fetch(&self.fetcher, run.client(), &resource, false).await.map_err(|e| e.to_string())?;
        let package = super::fetch::assemble(&dir, &resource).map_err(|e| e.to_string())?;
        let keys = self.keys(run).await.map_err(|f| f.message)?;
        self.render(run, &package, &snapshot, target, keys).await.map_err(|f| f.message)
    }
}
