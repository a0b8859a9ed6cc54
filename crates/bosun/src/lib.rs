//! bosun: declarative Kubernetes automation. One module per pipeline stage (source, config,
//! render, plan, apply, health, inventory, report, trigger, observe, kit); the `bosun` command
//! and the controllers are thin callers of this library.
