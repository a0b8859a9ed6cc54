//! What an item's attributes say about it: test-only code, and a module's `#[path]`.

use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Item, Lit, Meta, Token};

/// Whether the item exists only in test builds: `#[cfg(test)]`, `#[cfg(all(test, …))]`,
/// `#[test]`, or a test attribute of another crate (`#[tokio::test]`).
///
/// Test code may use anything; it is not part of the layering, so it is left out of the
/// module graph (but its files are still part of the crate).
pub(crate) fn is_test_only(attributes: &[Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        let path = attribute.path();
        if path.segments.last().is_some_and(|segment| segment.ident == "test") {
            return true;
        }
        match &attribute.meta {
            Meta::List(list) if path.is_ident("cfg") => {
                list.parse_args::<Meta>().is_ok_and(|predicate| implies_test(&predicate))
            }
            _ => false,
        }
    })
}

/// `test`, or `all(…)` with a part that implies `test`.
fn implies_test(predicate: &Meta) -> bool {
    match predicate {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) if list.path.is_ident("all") => list
            .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .is_ok_and(|parts| parts.iter().any(implies_test)),
        _ => false,
    }
}

/// The file a `#[path = "…"]` attribute names.
pub(crate) fn path_attribute(attributes: &[Attribute]) -> Option<String> {
    attributes.iter().find_map(|attribute| match &attribute.meta {
        Meta::NameValue(pair) if pair.path.is_ident("path") => match &pair.value {
            Expr::Lit(literal) => match &literal.lit {
                Lit::Str(text) => Some(text.value()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    })
}

/// An item's attributes (none for verbatim items, which syn could not parse).
pub(crate) fn item_attributes(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(item) => &item.attrs,
        Item::Enum(item) => &item.attrs,
        Item::ExternCrate(item) => &item.attrs,
        Item::Fn(item) => &item.attrs,
        Item::ForeignMod(item) => &item.attrs,
        Item::Impl(item) => &item.attrs,
        Item::Macro(item) => &item.attrs,
        Item::Mod(item) => &item.attrs,
        Item::Static(item) => &item.attrs,
        Item::Struct(item) => &item.attrs,
        Item::Trait(item) => &item.attrs,
        Item::TraitAlias(item) => &item.attrs,
        Item::Type(item) => &item.attrs,
        Item::Union(item) => &item.attrs,
        Item::Use(item) => &item.attrs,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attributes(source: &str) -> Vec<Attribute> {
        syn::parse_str::<syn::ItemFn>(&format!("{source} fn f() {{}}")).expect("an item").attrs
    }

    #[test]
    fn test_configurations_and_test_attributes_are_test_only() {
        for source in
            ["#[cfg(test)]", "#[cfg(all(unix, test))]", "#[test]", "#[tokio::test(flavor = \"multi_thread\")]"]
        {
            assert!(is_test_only(&attributes(source)), "{source}");
        }
    }

    #[test]
    fn other_configurations_are_not_test_only() {
        for source in ["", "#[cfg(unix)]", "#[cfg(any(test, feature = \"testing\"))]", "#[cfg(not(test))]", "#[inline]"]
        {
            assert!(!is_test_only(&attributes(source)), "{source}");
        }
    }

    #[test]
    fn the_path_attribute_names_a_file() {
        assert_eq!(path_attribute(&attributes("#[path = \"other/x.rs\"]")).as_deref(), Some("other/x.rs"));
        assert_eq!(path_attribute(&attributes("#[inline]")), None);
    }
}
