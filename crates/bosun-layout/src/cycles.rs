//! Import cycles between the modules of a crate.
//!
//! A reference from module `x` to module `y` makes the two siblings under their lowest common
//! ancestor depend on each other in that direction (`a::b::c` using `a::d::e` makes `a::b`
//! depend on `a::d`). A parent using its child, or a child its parent's items, is structure,
//! not a cycle, and is not counted. Siblings depending on each other, directly or around a
//! loop, are a cycle.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;

use crate::modules::Tree;
use crate::references::references;
use crate::resolve::Resolver;
use crate::scope::scopes;

/// A module, by its names from the crate root.
pub(crate) type Node = Vec<String>;

/// Where a dependency is written: a file, a line and the path there.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Place {
    pub(crate) file: PathBuf,
    pub(crate) line: usize,
    pub(crate) path: String,
}

/// Dependencies between sibling modules, with the places that make them.
pub(crate) type Edges = BTreeMap<Node, BTreeMap<Node, BTreeSet<Place>>>;

/// The dependencies between sibling modules of a tree, test code left out.
pub(crate) fn dependencies(tree: &Tree) -> Edges {
    let scopes = scopes(tree);
    let resolver = Resolver { tree, scopes: &scopes };
    let mut edges = Edges::new();
    for (id, module) in tree.modules.iter().enumerate() {
        for reference in references(&module.items) {
            for target in resolver.modules(&reference.path, id) {
                let (from, to) = (&module.path, &tree.modules[target].path);
                let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
                if common == from.len() || common == to.len() {
                    continue; // the same module, an ancestor or a descendant
                }
                let place = Place { file: module.file.clone(), line: reference.line, path: reference.path.join("::") };
                edges
                    .entry(from[..=common].to_vec())
                    .or_default()
                    .entry(to[..=common].to_vec())
                    .or_default()
                    .insert(place);
            }
        }
    }
    edges
}

/// One cycle for each group of modules that depend on each other (a strongly connected
/// component): the shortest one through the group's first module, as the list of its modules
/// with the first repeated at the end.
pub(crate) fn cycles(edges: &Edges) -> Vec<Vec<Node>> {
    components(edges)
        .into_iter()
        .filter(|component| component.len() > 1)
        .filter_map(|component| shortest_cycle(edges, &component))
        .collect()
}

/// Tarjan's strongly connected components.
fn components(edges: &Edges) -> Vec<BTreeSet<Node>> {
    struct State<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a Node, usize>,
        low: BTreeMap<&'a Node, usize>,
        stack: Vec<&'a Node>,
        on_stack: BTreeSet<&'a Node>,
        found: Vec<BTreeSet<Node>>,
    }

    fn connect<'a>(state: &mut State<'a>, node: &'a Node) {
        let index = state.index.len();
        state.index.insert(node, index);
        state.low.insert(node, index);
        state.stack.push(node);
        state.on_stack.insert(node);
        for next in state.edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            if !state.index.contains_key(next) {
                connect(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = BTreeSet::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(member);
                component.insert(member.clone());
                if member == node {
                    break;
                }
            }
            state.found.push(component);
        }
    }

    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node) {
            connect(&mut state, node);
        }
    }
    state.found.sort();
    state.found
}

/// Breadth-first from the component's first module back to it, within the component.
fn shortest_cycle(edges: &Edges, component: &BTreeSet<Node>) -> Option<Vec<Node>> {
    let start = component.first()?;
    let mut came_from: BTreeMap<&Node, &Node> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys).filter(|next| component.contains(*next)) {
            if next == start {
                let mut cycle = vec![start.clone(), node.clone()];
                let mut current = node;
                while let Some(previous) = came_from.get(current) {
                    cycle.push((*previous).clone());
                    current = previous;
                }
                cycle.reverse();
                return Some(cycle);
            }
            if !came_from.contains_key(next) {
                came_from.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dependencies between siblings of a crate written as one file, as `a → b` lines.
    fn edges(source: &str) -> Vec<String> {
        let edges = dependencies(&Tree::parse(source));
        let mut found = Vec::new();
        for (from, targets) in &edges {
            for to in targets.keys() {
                found.push(format!("{} → {}", from.join("::"), to.join("::")));
            }
        }
        found
    }

    fn cycle(source: &str) -> Vec<String> {
        cycles(&dependencies(&Tree::parse(source))).into_iter().flatten().map(|node| node.join("::")).collect()
    }

    #[test]
    fn a_parent_and_its_children_using_each_other_is_no_dependency_between_siblings() {
        let source = "pub use a::A; const N: u8 = 1; mod a { pub struct A; fn f() -> u8 { crate::N + super::N } }";
        assert_eq!(edges(source), Vec::<String>::new());
    }

    #[test]
    fn nested_use_groups_name_every_module_in_them() {
        let source =
            "mod a { use crate::{b::{c::C}, d::D}; } mod b { pub mod c { pub struct C; } } mod d { pub struct D; }";
        assert_eq!(edges(source), ["a → b", "a → d"]);
    }

    #[test]
    fn a_name_is_followed_through_re_exports_and_globs_to_the_module_defining_it() {
        let source = "
            mod p {
                pub use self::x::*;
                pub mod x { pub struct X; }
                pub mod y { use super::*; pub fn f(_: X) {} }
            }";
        assert_eq!(edges(source), ["p::y → p::x"]);
    }

    #[test]
    fn siblings_using_each_other_through_their_parent_are_a_cycle() {
        let source = "
            mod p {
                pub use self::x::X;
                pub use self::y::Y;
                mod x { pub struct X(super::Y); }
                mod y { pub struct Y; pub fn f(_: &super::X) {} }
            }";
        assert_eq!(cycle(source), ["p::x", "p::y", "p::x"]);
    }

    #[test]
    fn a_cycle_around_three_modules_is_found_whole() {
        let source = "
            mod a { pub fn f() { crate::b::g() } }
            mod b { pub fn g() { crate::c::h() } }
            mod c { pub fn h() { crate::a::f() } }";
        assert_eq!(cycle(source), ["a", "b", "c", "a"]);
    }

    #[test]
    fn paths_inside_macro_calls_and_macro_definitions_count() {
        let source = "
            mod a { pub fn f() -> String { format!(\"{}\", crate::b::g()) } }
            mod b { pub fn g() -> u8 { 1 } }
            mod c { macro_rules! m { () => { $crate::d::h() }; } }
            mod d { pub fn h() {} }";
        assert_eq!(edges(source), ["a → b", "c → d"]);
    }

    #[test]
    fn a_local_variable_named_as_an_item_in_scope_is_not_a_dependency() {
        let source = "
            mod a { pub fn count() -> u8 { 1 } }
            mod b { use crate::*; pub fn f(count: u8) -> u8 { count } }
            pub use a::count;";
        assert_eq!(edges(source), Vec::<String>::new());
    }

    #[test]
    fn test_only_code_is_left_out() {
        let source = "
            mod a { pub fn f() {} #[cfg(test)] fn t() { crate::b::g() } #[test] fn u() { crate::b::g() } }
            mod b { pub fn g() { crate::a::f() } }";
        assert_eq!(edges(source), ["b → a"]);
    }
}
