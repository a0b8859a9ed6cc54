//! Go's `text/template`, exactly, and the sprig function library: the template engine bosun
//! renders Helm charts with, in-process.
//!
//! No Rust crate reproduces Go's engine faithfully: `gtmpl` 0.7 has no `break`/`continue`, no
//! variable assignment and no `missingkey` option, and its functions (`fn(&[Value])`) cannot
//! re-enter the engine as Helm's `include` and `tpl` must; the `sprig` crate has about seventy
//! of sprig's string helpers. So this crate is a port, by hand, of the behaviour of Go's
//! `text/template` (lexer, parser, executor, predefined functions), of the parts of `fmt` that
//! templates print through, and of Masterminds/sprig v3 as Helm ships it. Conformance is
//! measured on a table derived from Go's own `exec_test.go` (see `CONFORMANCE.md`).
//!
//! # Using it
//!
//! ```
//! use bosun_gotemplate::{Template, Value};
//!
//! let mut t = Template::new("chart");
//! t.option("missingkey=zero").unwrap();
//! t.parse("_helpers.tpl", r#"{{define "name"}}{{printf "%.5s" .name}}{{end}}"#).unwrap();
//! t.parse("cm.yaml", r#"name: {{template "name" .}} port: {{.port}}"#).unwrap();
//! let values = Value::from(serde_json::json!({"name": "frontend", "port": 8080}));
//! assert_eq!(t.render("cm.yaml", &values).unwrap(), "name: front port: 8080");
//! ```
//!
//! A host adds functions with Go's signatures ([`Function::new`], [`Function::variadic`]) so the
//! engine checks and converts their arguments as Go does. A function receives a [`Context`]
//! through which it can re-enter the engine: Helm's `include` is
//! `ctx.execute_template(name, &data)`, its `tpl` clones [`Context::template`], parses the
//! string into the clone and runs [`Context::execute_in`]; [`Context::local`] keeps state for
//! one execution (Helm's count of nested includes).
//!
//! # Dependencies
//!
//! This crate depends on no bosun crate, so anything may use it. It uses `thiserror`,
//! `serde_json` (values from and to JSON) and `stacker` (templates nest as deeply as in Go without
//! overflowing a thread's stack), and for sprig `regex`, `jiff` (dates), `sha1`/`sha2`/`hmac`,
//! `base64`, `rand`, `uuid`, `scrypt` and `aes`; nothing else.

#![warn(missing_docs)]

mod error;
mod lex;
mod parse;
pub mod sprig;
mod stack;
mod strconv;
mod template;

pub use error::{Error, FuncError, Trace};
pub use strconv::{format_float, quote, write_json_string};
pub use template::fmt::{sprint, sprintf, sprintln};
pub use template::value::{
    Field, Function, IntKind, JsonNumbers, List, Map, NativeFn, TemplateObject, Type, UintKind, Value,
};
pub use template::{Context, DEFAULT_MAX_DEPTH, MissingKey, Template};
