//! Stack for deep nesting: templates nest as deeply as their authors like (Go's stacks grow),
//! so recursive walks over trees and executions grow theirs on the heap when needed.

/// Runs `f` with at least a comfortable amount of stack, growing it on the heap when the thread's
/// own is nearly used up.
pub(crate) fn grow_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(256 * 1024, 2 * 1024 * 1024, f)
}
