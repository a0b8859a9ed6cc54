//! The sprig function library (Masterminds/sprig v3), as Helm ships it.

use crate::value::Function;

/// Sprig's functions as Helm registers them (`sprig.TxtFuncMap()` without `env` and `expandenv`).
pub fn functions() -> Vec<(String, Function)> {
    Vec::new()
}
