//! A set of named templates sharing functions and options (Go's `*template.Template`), the
//! values templates work on, and their execution.
//!
//! These refer to each other as the files of Go's `text/template` package do: a set holds
//! functions, a function is a value, and a function receives a [`Context`] through which it
//! re-enters the set's execution (Helm's `include` and `tpl`). The children are ordered: `value`
//! (and `fmt`, which prints values) below `builtins`, below `exec`; this module holds the set
//! and the [`Context`] they share.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) mod builtins;
pub(crate) mod exec;
pub(crate) mod fmt;
pub(crate) mod value;

use crate::error::Error;
use crate::parse::{Tree, is_empty_tree, parse};
use crate::strconv::quote;
use exec::run;
use value::{Function, Value};

/// What a field lookup of a missing map key yields (Go's `missingkey` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MissingKey {
    /// No value: prints `<no value>`, and field chains through it go on quietly.
    #[default]
    Default,
    /// The zero value of the map's element type: `nil` for `map[string]interface{}`, so a
    /// field of it is the error `nil pointer evaluating interface {}.x`. Helm's default.
    Zero,
    /// An error: `map has no entry for key "x"`. Helm's `--strict`.
    Error,
}

/// Nesting allowed by default for template calls and nested executions: Helm's limit on
/// nested `include`s. Go's own limit is 100000; a runaway recursion that deep holds gigabytes of
/// stack before it fails, so the default here is lower ([`Template::set_max_depth`] raises it).
pub const DEFAULT_MAX_DEPTH: usize = 1000;

/// A set of named templates with their functions and options, as Go's `*template.Template`
/// (Helm parses every file of a chart into one set, so each file's `define`s are everyone's).
///
/// Cloning is cheap (the parsed trees and functions are shared) and a clone is independent:
/// parsing into it does not change the original, as Go's `Clone`.
#[derive(Clone)]
pub struct Template {
    name: Arc<str>,
    trees: Arc<HashMap<String, Arc<Tree>>>,
    funcs: Arc<HashMap<String, Function>>,
    missing_key: MissingKey,
    max_depth: usize,
    delims: (Arc<str>, Arc<str>),
}

impl Template {
    /// An empty set named `name`.
    pub fn new(name: impl Into<String>) -> Template {
        Template {
            name: Arc::from(name.into()),
            trees: Arc::default(),
            funcs: Arc::default(),
            missing_key: MissingKey::Default,
            max_depth: DEFAULT_MAX_DEPTH,
            delims: (Arc::from("{{"), Arc::from("}}")),
        }
    }

    /// Whether `other` is this very set (a handle to the same templates and functions, not an
    /// equal copy): what a host caching work per set (Helm's `tpl`) compares.
    pub fn same_set(&self, other: &Template) -> bool {
        Arc::ptr_eq(&self.trees, &other.trees) && Arc::ptr_eq(&self.funcs, &other.funcs) && self.name == other.name
    }

    /// The set's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds (or replaces) a function. Functions must be added before the templates that call
    /// them are parsed, as in Go. Like Go's `Funcs`, this panics when `name` is not an
    /// identifier (a letter or `_`, then letters, digits and `_`): that is a host bug.
    pub fn add_func(&mut self, name: &str, function: Function) -> &mut Template {
        let mut chars = name.chars();
        let valid = chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
            && chars.all(|c| c == '_' || c.is_alphanumeric());
        assert!(valid, "function name {name:?} is not a valid identifier");
        Arc::make_mut(&mut self.funcs).insert(name.to_string(), function);
        self
    }

    /// Adds (or replaces) several functions; see [`Template::add_func`].
    pub fn add_funcs(&mut self, functions: impl IntoIterator<Item = (String, Function)>) -> &mut Template {
        for (name, function) in functions {
            self.add_func(&name, function);
        }
        self
    }

    /// The function of that name, if the host added one (builtins are not listed here).
    pub fn func(&self, name: &str) -> Option<&Function> {
        self.funcs.get(name)
    }

    /// Sets an option the way Go's `Option` spells it: `missingkey=default|invalid|zero|error`.
    pub fn option(&mut self, option: &str) -> Result<&mut Template, Error> {
        self.missing_key = match option.split_once('=') {
            Some(("missingkey", "default" | "invalid")) => MissingKey::Default,
            Some(("missingkey", "zero")) => MissingKey::Zero,
            Some(("missingkey", "error")) => MissingKey::Error,
            _ if option.is_empty() => return Err(Error::Option("empty option string".into())),
            _ => return Err(Error::Option(format!("unrecognized option: {option}"))),
        };
        Ok(self)
    }

    /// Sets what a missing map key yields.
    pub fn set_missing_key(&mut self, missing_key: MissingKey) -> &mut Template {
        self.missing_key = missing_key;
        self
    }

    /// What a missing map key yields.
    pub fn missing_key(&self) -> MissingKey {
        self.missing_key
    }

    /// Sets how deeply template calls and nested executions may nest (default
    /// [`DEFAULT_MAX_DEPTH`]). Deep nesting is safe on any thread: the engine grows its stack on
    /// the heap as it goes.
    pub fn set_max_depth(&mut self, depth: usize) -> &mut Template {
        self.max_depth = depth;
        self
    }

    /// How deeply template calls may nest.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Sets the action delimiters for later parses (empty strings mean `{{` and `}}`).
    pub fn delims(&mut self, left: &str, right: &str) -> &mut Template {
        let pick = |d: &str, default: &str| Arc::from(if d.is_empty() { default } else { d });
        self.delims = (pick(left, "{{"), pick(right, "}}"));
        self
    }

    /// Parses `text` as the template `name` and adds it, with every template it `define`s, to
    /// the set (Go's `t.New(name).Parse(text)`). A later definition of a name replaces an
    /// earlier one, except that an empty body never replaces a non-empty one.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<&mut Template, Error> {
        let funcs = &self.funcs;
        let has_function = |f: &str| funcs.contains_key(f) || builtins::builtin(f).is_some();
        let parsed = parse(name, text, (&self.delims.0, &self.delims.1), &has_function)?;
        let trees = Arc::make_mut(&mut self.trees);
        for (tree_name, tree) in parsed {
            if trees.contains_key(&tree_name) && is_empty_tree(&tree.root) {
                continue;
            }
            trees.insert(tree_name, Arc::new(tree));
        }
        Ok(self)
    }

    /// Whether the set has a template of that name (Go's `Lookup(name) != nil`).
    pub fn has_template(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }

    /// The names of the set's templates, sorted.
    pub fn template_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.trees.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// The parse tree of a template as Go's `Tree.Root.String()` prints it (text nodes quoted),
    /// for debugging and for comparing parses with Go's.
    pub fn parse_tree(&self, name: &str) -> Option<String> {
        self.trees.get(name).map(|tree| tree.root.to_string())
    }

    pub(crate) fn tree(&self, name: &str) -> Option<Arc<Tree>> {
        self.trees.get(name).cloned()
    }

    /// Executes the named template with `data` as dot, appending its output to `out`. On an
    /// error `out` holds what was written before it, as in Go.
    pub fn execute(&self, name: &str, data: &Value, out: &mut String) -> Result<(), Error> {
        if name == &*self.name && !self.has_template(name) {
            let message = format!("template: {name}: {} is an incomplete or empty template", quote(name, false));
            return Err(Error::Exec { template: name.to_string(), message, trace: None });
        }
        run(self, name, data, &mut Shared::default(), out)
    }

    /// Executes the named template and returns its output.
    pub fn render(&self, name: &str, data: &Value) -> Result<String, Error> {
        let mut out = String::new();
        self.execute(name, data, &mut out)?;
        Ok(out)
    }
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Template").field("name", &self.name).field("templates", &self.template_names()).finish()
    }
}

/// State shared by one execution and every execution nested in it (Helm's `include`, `tpl`).
#[derive(Default)]
pub(crate) struct Shared {
    depth: usize,
    locals: HashMap<TypeId, Box<dyn Any + Send>>,
}

/// What a function sees of the execution that called it: the template set, and a way back in.
///
/// Helm's `include` is `ctx.execute_template(name, &data)`; its `tpl` clones
/// [`Context::template`], parses the string into the clone and runs
/// [`Context::execute_in`] on it, so the string sees every `define` of the chart.
pub struct Context<'a> {
    template: &'a Template,
    shared: &'a mut Shared,
}

impl<'a> Context<'a> {
    /// The template set being executed.
    pub fn template(&self) -> &'a Template {
        self.template
    }

    /// Executes the named template of the current set with `data` as dot and returns its output.
    pub fn execute_template(&mut self, name: &str, data: &Value) -> Result<String, Error> {
        let template = self.template;
        self.execute_in(template, name, data)
    }

    /// Executes the named template of another set (a clone with more templates parsed into it,
    /// for Helm's `tpl`) within this execution: nesting depth and [`Context::local`] state carry
    /// over.
    pub fn execute_in(&mut self, template: &Template, name: &str, data: &Value) -> Result<String, Error> {
        let mut out = String::new();
        run(template, name, data, self.shared, &mut out)?;
        Ok(out)
    }

    /// How deeply template calls and nested executions are nested here.
    pub fn depth(&self) -> usize {
        self.shared.depth
    }

    /// Per-execution state of type `T` for the host's functions (created with `T::default()` on
    /// first use, dropped when the outermost execution ends), for example Helm's count of
    /// nested `include`s by name.
    pub fn local<T: Default + Send + 'static>(&mut self) -> &mut T {
        let slot = self.shared.locals.entry(TypeId::of::<T>()).or_insert_with(|| Box::new(T::default()));
        match slot.downcast_mut::<T>() {
            Some(t) => t,
            None => unreachable!("locals are keyed by their TypeId"),
        }
    }
}
