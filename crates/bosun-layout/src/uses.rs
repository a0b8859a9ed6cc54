//! `use` declarations flattened: `use a::{b::{c, d as e}, f::*}` is three imports.

use syn::{ItemUse, UseTree};

/// One name a `use` declaration brings in, or one glob.
pub(crate) struct Import {
    /// The full path: `a::b::c` (for a glob, the path before `*`).
    pub(crate) path: Vec<String>,
    /// The name it is known by in the module (`e` for `d as e`); `None` for a glob.
    pub(crate) name: Option<String>,
    /// The line of its last name.
    pub(crate) line: usize,
}

/// The imports of one `use` declaration; none for `use ::x` (an extern crate's).
pub(crate) fn flatten(declaration: &ItemUse) -> Vec<Import> {
    let mut imports = Vec::new();
    if declaration.leading_colon.is_none() {
        walk(&declaration.tree, &mut Vec::new(), &mut imports);
    }
    imports
}

fn walk(tree: &UseTree, prefix: &mut Vec<String>, imports: &mut Vec<Import>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            walk(&path.tree, prefix, imports);
            prefix.pop();
        }
        UseTree::Name(name) => push(prefix, &name.ident, None, imports),
        UseTree::Rename(rename) => push(prefix, &rename.ident, Some(rename.rename.to_string()), imports),
        UseTree::Glob(glob) => {
            imports.push(Import { path: prefix.clone(), name: None, line: glob.star_token.span.start().line })
        }
        UseTree::Group(group) => {
            for tree in &group.items {
                walk(tree, prefix, imports);
            }
        }
    }
}

/// `a::b::c` imports `c`; `a::b::{self}` imports `b`.
fn push(prefix: &[String], ident: &syn::Ident, rename: Option<String>, imports: &mut Vec<Import>) {
    let line = ident.span().start().line;
    let mut path = prefix.to_vec();
    if ident != "self" || prefix.is_empty() {
        path.push(ident.to_string());
    }
    let name = rename.or_else(|| path.last().cloned());
    imports.push(Import { path, name, line });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imports(source: &str) -> Vec<(String, Option<String>)> {
        let item: ItemUse = syn::parse_str(source).expect("a use declaration");
        flatten(&item).into_iter().map(|import| (import.path.join("::"), import.name)).collect()
    }

    #[test]
    fn nested_groups_are_flattened_to_the_full_paths() {
        assert_eq!(
            imports("use crate::a::{b::{self, c}, d as e, f::*};"),
            vec![
                ("crate::a::b".into(), Some("b".into())),
                ("crate::a::b::c".into(), Some("c".into())),
                ("crate::a::d".into(), Some("e".into())),
                ("crate::a::f".into(), None),
            ]
        );
    }

    #[test]
    fn super_paths_keep_their_start() {
        assert_eq!(imports("use super::super::x;"), vec![("super::super::x".into(), Some("x".into()))]);
    }
}
