//! A field of a Flux object that bosun does not honour yet: refused by name (`Ready=False`,
//! `Stalled`), never silently ignored, so that an object is never reconciled as less than
//! it asks.

/// The reason of the `Ready=False` condition that names such a field.
pub(crate) const REASON: &str = "UnsupportedField";

/// A field bosun cannot honour yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: bosun does not honour this field yet (docs/flux.md lists what it does)")]
pub(crate) struct Unsupported {
    /// The field's path (`spec.patches`).
    pub(crate) field: String,
}

/// The first of `fields` (path, whether the object sets it) that is set, as an error.
pub(crate) fn refuse(fields: &[(&str, bool)]) -> Result<(), Unsupported> {
    match fields.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(Unsupported { field: (*field).to_string() }),
        None => Ok(()),
    }
}
