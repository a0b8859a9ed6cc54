//! The paths a module's code writes: every `use` (nested groups flattened), every path in its
//! expressions, types, patterns and macro calls; test-only items left out.

use std::collections::HashSet;

use proc_macro2::{TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Expr, ImplItem, Item, Token};

use crate::attributes::{is_test_only, item_attributes};
use crate::uses::flatten;

/// A path as written, and where.
pub(crate) struct Reference {
    pub(crate) path: Vec<String>,
    pub(crate) line: usize,
}

/// The references of a module's items; its inline and file modules are not visited (they are
/// modules of their own).
pub(crate) fn references(items: &[Item]) -> Vec<Reference> {
    let mut collector = Collector { references: Vec::new(), locals: Vec::new() };
    for item in items {
        collector.visit_item(item);
    }
    collector.references
}

struct Collector {
    references: Vec<Reference>,
    /// The names bound by patterns in the functions being visited, innermost last: a
    /// one-segment path naming one of them is a variable, not an item.
    locals: Vec<HashSet<String>>,
}

impl Collector {
    fn push(&mut self, path: Vec<String>, line: usize) {
        if !path.is_empty() {
            self.references.push(Reference { path, line });
        }
    }

    fn in_function(&mut self, visit: impl FnOnce(&mut Self), bindings: impl FnOnce(&mut Bindings)) {
        let mut names = Bindings(HashSet::new());
        bindings(&mut names);
        self.locals.push(names.0);
        visit(self);
        self.locals.pop();
    }

    fn is_local(&self, name: &str) -> bool {
        self.locals.iter().any(|names| names.contains(name))
    }

    /// A macro call's arguments: visited as expressions when they parse as a comma-separated
    /// list of them (`format!`, `vec!`, `assert_eq!`), otherwise read for `a::b` paths.
    fn macro_body(&mut self, mac: &syn::Macro) {
        match mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            Ok(arguments) => arguments.iter().for_each(|argument| self.visit_expr(argument)),
            Err(_) => self.scan(mac.tokens.clone()),
        }
    }

    /// Paths of two segments or more in a token stream (`$crate::x::y` counts as `crate::x::y`).
    fn scan(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut index = 0;
        while index < tokens.len() {
            if let TokenTree::Group(group) = &tokens[index] {
                self.scan(group.stream());
                index += 1;
                continue;
            }
            let previous = index.checked_sub(1).map(|before| &tokens[before]);
            let TokenTree::Ident(first) = &tokens[index] else {
                index += 1;
                continue;
            };
            let after_dollar = matches!(previous, Some(TokenTree::Punct(punct)) if punct.as_char() == '$');
            let after_dot = matches!(previous, Some(TokenTree::Punct(punct)) if punct.as_char() == '.');
            if after_dot || (after_dollar && first != "crate") {
                index += 1;
                continue;
            }
            let mut path = vec![first.to_string()];
            let mut next = index + 1;
            while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(segment))) =
                (tokens.get(next), tokens.get(next + 1), tokens.get(next + 2))
            {
                if a.as_char() != ':' || b.as_char() != ':' {
                    break;
                }
                path.push(segment.to_string());
                next += 3;
            }
            if path.len() > 1 {
                self.push(path, first.span().start().line);
            }
            index = next.max(index + 1);
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast Item) {
        if is_test_only(item_attributes(item)) {
            return;
        }
        match item {
            Item::Mod(_) => {}
            Item::Use(declaration) => {
                for import in flatten(declaration) {
                    self.push(import.path, import.line);
                }
            }
            Item::Macro(definition) if definition.ident.is_some() => self.scan(definition.mac.tokens.clone()),
            Item::Fn(function) => self.in_function(
                |collector| visit::visit_item_fn(collector, function),
                |names| names.visit_item_fn(function),
            ),
            item => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let attributes = match item {
            ImplItem::Const(item) => &item.attrs,
            ImplItem::Fn(item) => &item.attrs,
            ImplItem::Type(item) => &item.attrs,
            ImplItem::Macro(item) => &item.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !is_test_only(attributes) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        self.in_function(
            |collector| visit::visit_impl_item_fn(collector, function),
            |names| names.visit_impl_item_fn(function),
        )
    }

    fn visit_trait_item_fn(&mut self, function: &'ast syn::TraitItemFn) {
        self.in_function(
            |collector| visit::visit_trait_item_fn(collector, function),
            |names| names.visit_trait_item_fn(function),
        )
    }

    fn visit_expr_path(&mut self, expression: &'ast syn::ExprPath) {
        let variable = expression.qself.is_none()
            && expression.path.leading_colon.is_none()
            && expression.path.segments.len() == 1
            && self.is_local(&expression.path.segments[0].ident.to_string());
        if !variable {
            visit::visit_expr_path(self, expression);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let line = path.segments.first().map_or(0, |segment| segment.ident.span().start().line);
            self.push(path.segments.iter().map(|segment| segment.ident.to_string()).collect(), line);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.macro_body(mac);
    }

    // Attributes (`#[derive(…)]`, `#[serde(…)]`) and `pub(in …)` name no dependency.
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
}

/// The names patterns bind in a function (parameters, `let`, closures, `match` arms).
struct Bindings(HashSet<String>);

impl<'ast> Visit<'ast> for Bindings {
    fn visit_pat_ident(&mut self, pattern: &'ast syn::PatIdent) {
        self.0.insert(pattern.ident.to_string());
        visit::visit_pat_ident(self, pattern);
    }

    fn visit_item(&mut self, _: &'ast Item) {}
}
