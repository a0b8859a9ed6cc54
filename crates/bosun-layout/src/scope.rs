//! What each module defines and imports: the names paths are resolved against.

use std::collections::HashMap;

use syn::{Fields, Item, Visibility};

use crate::attributes::{is_test_only, item_attributes};
use crate::modules::{ModuleId, Tree};
use crate::uses::flatten;

/// Rust's namespaces: a module and a function may share a name, a module and a struct not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Namespace {
    Type,
    Value,
    Macro,
}

/// What a name stands for.
#[derive(Clone, Copy)]
pub(crate) enum Definition {
    Module(ModuleId),
    /// An item defined in that module.
    Item(ModuleId),
    /// Something of another crate (`extern crate x as y`).
    External,
}

/// A name, with its namespace and whether modules outside its own subtree may see it.
#[derive(Clone, Copy)]
pub(crate) struct Binding {
    pub(crate) namespace: Namespace,
    pub(crate) definition: Definition,
    pub(crate) public: bool,
}

/// A module-level `use`: one name (or a glob) and the path it stands for.
pub(crate) struct Import {
    pub(crate) path: Vec<String>,
    /// `None` for a glob.
    pub(crate) name: Option<String>,
    pub(crate) public: bool,
}

/// One module's names, test code left out.
#[derive(Default)]
pub(crate) struct Scope {
    pub(crate) definitions: HashMap<String, Vec<Binding>>,
    pub(crate) imports: Vec<Import>,
}

/// The scopes of every module of a tree, by module id.
pub(crate) fn scopes(tree: &Tree) -> Vec<Scope> {
    let mut scopes: Vec<Scope> = tree.modules.iter().map(|_| Scope::default()).collect();
    for (id, module) in tree.modules.iter().enumerate() {
        for (name, child) in &module.children {
            // Child modules' visibility is not kept; `pub mod` is what matters across the crate.
            scopes[id].define(name, Namespace::Type, Definition::Module(*child), true);
        }
        for item in &module.items {
            if is_test_only(item_attributes(item)) {
                continue;
            }
            match item {
                Item::Use(declaration) => {
                    let public = is_public(&declaration.vis);
                    for import in flatten(declaration) {
                        if import.name.as_deref() != Some("_") {
                            scopes[id].imports.push(Import { path: import.path, name: import.name, public });
                        }
                    }
                }
                Item::Macro(definition) if definition.mac.path.is_ident("macro_rules") => {
                    let Some(name) = &definition.ident else { continue };
                    let exported = definition.attrs.iter().any(|attribute| attribute.path().is_ident("macro_export"));
                    let scope = if exported { 0 } else { id };
                    scopes[scope].define(&name.to_string(), Namespace::Macro, Definition::Item(id), true);
                }
                Item::ExternCrate(declaration) => {
                    let name = declaration.rename.as_ref().map_or(&declaration.ident, |(_, rename)| rename);
                    let public = is_public(&declaration.vis);
                    scopes[id].define(&name.to_string(), Namespace::Type, Definition::External, public);
                }
                item => {
                    for (name, namespace, public) in names(item) {
                        scopes[id].define(&name, namespace, Definition::Item(id), public);
                    }
                }
            }
        }
    }
    scopes
}

impl Scope {
    fn define(&mut self, name: &str, namespace: Namespace, definition: Definition, public: bool) {
        self.definitions.entry(name.to_owned()).or_default().push(Binding { namespace, definition, public });
    }
}

/// The names an item defines, with their namespaces.
fn names(item: &Item) -> Vec<(String, Namespace, bool)> {
    let (ident, vis, namespaces): (_, _, &[Namespace]) = match item {
        Item::Const(item) => (&item.ident, &item.vis, &[Namespace::Value]),
        Item::Static(item) => (&item.ident, &item.vis, &[Namespace::Value]),
        Item::Fn(item) => (&item.sig.ident, &item.vis, &[Namespace::Value]),
        Item::Enum(item) => (&item.ident, &item.vis, &[Namespace::Type]),
        Item::Union(item) => (&item.ident, &item.vis, &[Namespace::Type]),
        Item::Trait(item) => (&item.ident, &item.vis, &[Namespace::Type]),
        Item::TraitAlias(item) => (&item.ident, &item.vis, &[Namespace::Type]),
        Item::Type(item) => (&item.ident, &item.vis, &[Namespace::Type]),
        Item::Struct(item) => match item.fields {
            // Tuple and unit structs are also their constructor.
            Fields::Named(_) => (&item.ident, &item.vis, &[Namespace::Type]),
            _ => (&item.ident, &item.vis, &[Namespace::Type, Namespace::Value]),
        },
        _ => return Vec::new(),
    };
    namespaces.iter().map(|namespace| (ident.to_string(), *namespace, is_public(vis))).collect()
}

/// `pub`, `pub(crate)`, `pub(super)`, `pub(in …)`: visible beyond the module's own subtree.
fn is_public(visibility: &Visibility) -> bool {
    !matches!(visibility, Visibility::Inherited)
}
