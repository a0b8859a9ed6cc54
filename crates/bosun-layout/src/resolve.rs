//! Paths resolved to the modules they name, within one crate: `crate::`, `self::`, `super::`,
//! names in scope, re-exports (`pub use`) and globs followed to where an item is defined.

use crate::modules::{ModuleId, Tree};
use crate::scope::{Binding, Definition, Namespace, Scope};

/// Resolves paths against the scopes of one tree.
pub(crate) struct Resolver<'a> {
    pub(crate) tree: &'a Tree,
    pub(crate) scopes: &'a [Scope],
}

impl Resolver<'_> {
    /// The modules a path written in `module` depends on: every module it looks a name up in
    /// (`crate::a::b::X` looks in `a` and `a::b`), and the modules defining what it names,
    /// through re-exports and globs. Empty for paths into other crates.
    pub(crate) fn modules(&self, path: &[String], module: ModuleId) -> Vec<ModuleId> {
        let (bindings, mut modules) = self.walk(path, module, &mut Vec::new());
        for binding in bindings {
            match binding.definition {
                Definition::Module(id) | Definition::Item(id) => modules.push(id),
                Definition::External => {}
            }
        }
        modules.sort_unstable();
        modules.dedup();
        modules
    }

    /// What `path` stands for in `module`, and the modules its later segments were looked up in.
    fn walk(
        &self,
        path: &[String],
        module: ModuleId,
        visiting: &mut Vec<(ModuleId, String)>,
    ) -> (Vec<Binding>, Vec<ModuleId>) {
        let Some(first) = path.first() else { return (Vec::new(), Vec::new()) };
        let (mut current, mut rest) = match first.as_str() {
            "crate" => (vec![module_binding(0)], &path[1..]),
            "self" => (vec![module_binding(module)], &path[1..]),
            "super" => {
                let supers = path.iter().take_while(|segment| *segment == "super").count();
                let mut ancestor = Some(module);
                for _ in 0..supers {
                    ancestor = ancestor.and_then(|id| self.tree.modules[id].parent);
                }
                let Some(ancestor) = ancestor else { return (Vec::new(), Vec::new()) };
                (vec![module_binding(ancestor)], &path[supers..])
            }
            "Self" => return (Vec::new(), Vec::new()),
            name => (self.lookup(module, name, module, visiting), &path[1..]),
        };
        let mut through = Vec::new();
        while let Some((segment, later)) = rest.split_first() {
            let modules: Vec<ModuleId> = current
                .iter()
                .filter_map(|binding| match binding.definition {
                    Definition::Module(id) => Some(id),
                    _ => None,
                })
                .collect();
            if modules.is_empty() {
                // A type's associated item or an enum's variant: the type is what is named.
                current.retain(|binding| binding.namespace == Namespace::Type);
                break;
            }
            through.extend(&modules);
            current = modules.iter().flat_map(|id| self.lookup(*id, segment, module, visiting)).collect();
            rest = later;
        }
        (current, through)
    }

    /// The bindings of `name` in `module` as `from` sees them: the module's own items and
    /// imports, then (in the namespaces those leave free) what its globs bring in.
    fn lookup(
        &self,
        module: ModuleId,
        name: &str,
        from: ModuleId,
        visiting: &mut Vec<(ModuleId, String)>,
    ) -> Vec<Binding> {
        if visiting.iter().any(|(id, seen)| *id == module && seen == name) {
            return Vec::new();
        }
        visiting.push((module, name.to_owned()));
        let scope = &self.scopes[module];
        let visible = |public: bool| public || self.tree.is_ancestor_or_self(module, from);
        let mut found: Vec<Binding> = scope
            .definitions
            .get(name)
            .into_iter()
            .flatten()
            .filter(|binding| visible(binding.public))
            .copied()
            .collect();
        for import in &scope.imports {
            if import.name.as_deref() == Some(name) && visible(import.public) {
                let (bindings, _) = self.walk(&import.path, module, visiting);
                found.extend(bindings.into_iter().map(|binding| Binding { public: import.public, ..binding }));
            }
        }
        let taken: Vec<Namespace> = found.iter().map(|binding| binding.namespace).collect();
        for glob in scope.imports.iter().filter(|import| import.name.is_none() && visible(import.public)) {
            let (sources, _) = self.walk(&glob.path, module, visiting);
            for source in sources {
                let Definition::Module(source) = source.definition else { continue };
                let bindings = self.lookup(source, name, module, visiting);
                found.extend(
                    bindings
                        .into_iter()
                        .filter(|binding| !taken.contains(&binding.namespace))
                        .map(|binding| Binding { public: glob.public, ..binding }),
                );
            }
        }
        visiting.pop();
        found
    }
}

fn module_binding(id: ModuleId) -> Binding {
    Binding { namespace: Namespace::Type, definition: Definition::Module(id), public: true }
}
