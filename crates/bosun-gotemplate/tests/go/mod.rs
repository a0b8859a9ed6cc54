//! Go's own tests of `text/template`, run against this engine. See README.md in this folder.

pub mod model;
pub mod tables;
