//! The parse tree's nodes and how they print: Go's `text/template/parse/node.go` (error
//! messages quote nodes in Go's form).

use std::fmt;
use std::sync::Arc;

use crate::stack::grow_stack;
use crate::strconv::quote;

/// One parsed template: a `{{define}}`d one or a whole file.
#[derive(Debug)]
pub(crate) struct Tree {
    /// The name of the file it was parsed from (Go's `ParseName`), for error locations.
    pub parse_name: Arc<str>,
    /// The whole text it was parsed from, for error locations.
    pub text: Arc<str>,
    pub root: ListNode,
}

impl Tree {
    /// Go's `ErrorContext` location of a byte offset: (line from 1, byte in the line from 0).
    pub fn line_column(&self, pos: usize) -> (usize, usize) {
        let before = &self.text[..pos.min(self.text.len())];
        match before.rfind('\n') {
            Some(nl) => (1 + before.matches('\n').count(), pos - nl - 1),
            None => (1, pos),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct ListNode {
    pub nodes: Vec<Node>,
}

#[derive(Debug)]
pub(crate) enum Node {
    Text(String),
    Action(Pipe),
    If(Branch),
    With(Branch),
    Range(Branch),
    Template { pos: usize, name: String, pipe: Option<Pipe> },
    Break,
    Continue,
}

/// The shared shape of `if`, `with` and `range`.
#[derive(Debug)]
pub(crate) struct Branch {
    pub pipe: Pipe,
    pub list: ListNode,
    pub else_list: Option<ListNode>,
}

#[derive(Debug)]
pub(crate) struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    pub decl: Vec<String>,
    pub cmds: Vec<Command>,
}

#[derive(Debug)]
pub(crate) struct Command {
    pub pos: usize,
    pub args: Vec<Expr>,
}

#[derive(Debug)]
pub(crate) enum Expr {
    /// `.A.B`: the identifiers without dots.
    Field {
        pos: usize,
        idents: Vec<String>,
    },
    /// `$x.A.B`: the variable name first.
    Variable {
        pos: usize,
        idents: Vec<String>,
    },
    /// `(pipe).A.B` or `fn.A`.
    Chain {
        pos: usize,
        node: Box<Expr>,
        fields: Vec<String>,
    },
    Identifier {
        pos: usize,
        name: String,
    },
    Dot {
        pos: usize,
    },
    Nil {
        pos: usize,
    },
    Bool {
        pos: usize,
        value: bool,
    },
    Number {
        pos: usize,
        number: Box<Number>,
    },
    /// A string constant: its source form (for messages) and its value, built once.
    String {
        pos: usize,
        quoted: String,
        value: Arc<str>,
    },
    Pipe(Box<Pipe>),
}

impl Expr {
    pub fn pos(&self) -> usize {
        match self {
            Expr::Field { pos, .. }
            | Expr::Variable { pos, .. }
            | Expr::Chain { pos, .. }
            | Expr::Identifier { pos, .. }
            | Expr::Dot { pos }
            | Expr::Nil { pos }
            | Expr::Bool { pos, .. }
            | Expr::Number { pos, .. }
            | Expr::String { pos, .. } => *pos,
            Expr::Pipe(pipe) => pipe.pos,
        }
    }
}

/// A number constant with every interpretation its text allows, as Go's `NumberNode`.
#[derive(Debug, Default)]
pub(crate) struct Number {
    pub text: String,
    pub is_int: bool,
    pub is_uint: bool,
    pub is_float: bool,
    pub is_complex: bool,
    pub int: i64,
    pub uint: u64,
    pub float: f64,
    pub complex: (f64, f64),
}

// Nested lists and pipes are dropped with stack to spare: a tree may nest thousands deep.

impl Drop for ListNode {
    fn drop(&mut self) {
        let nodes = std::mem::take(&mut self.nodes);
        grow_stack(move || drop(nodes));
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let cmds = std::mem::take(&mut self.cmds);
        grow_stack(move || drop(cmds));
    }
}

// String forms of nodes, as Go's `String()` methods: error messages quote them.

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        grow_stack(|| self.write_to(f))
    }
}

impl Pipe {
    fn write_to(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            write!(f, "{} {} ", self.decl.join(", "), if self.is_assign { "=" } else { ":=" })?;
        }
        for (i, cmd) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{cmd}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            match arg {
                Expr::Pipe(pipe) => write!(f, "({pipe})")?,
                other => write!(f, "{other}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Field { idents, .. } => idents.iter().try_for_each(|id| write!(f, ".{id}")),
            Expr::Variable { idents, .. } => f.write_str(&idents.join(".")),
            Expr::Chain { node, fields, .. } => {
                match &**node {
                    Expr::Pipe(pipe) => write!(f, "({pipe})")?,
                    other => write!(f, "{other}")?,
                }
                fields.iter().try_for_each(|field| write!(f, ".{field}"))
            }
            Expr::Identifier { name, .. } => f.write_str(name),
            Expr::Dot { .. } => f.write_str("."),
            Expr::Nil { .. } => f.write_str("nil"),
            Expr::Bool { value, .. } => write!(f, "{value}"),
            Expr::Number { number, .. } => f.write_str(&number.text),
            Expr::String { quoted, .. } => f.write_str(quoted),
            Expr::Pipe(pipe) => write!(f, "{pipe}"),
        }
    }
}

impl fmt::Display for ListNode {
    /// Go's `ListNode.String()` with text shown quoted (Go's tests set `textFormat = "%q"`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        grow_stack(|| self.nodes.iter().try_for_each(|node| write!(f, "{node}")))
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let branch = |f: &mut fmt::Formatter<'_>, name: &str, b: &Branch| {
            write!(f, "{{{{{name} {}}}}}{}", b.pipe, b.list)?;
            if let Some(else_list) = &b.else_list {
                write!(f, "{{{{else}}}}{else_list}")?;
            }
            f.write_str("{{end}}")
        };
        match self {
            Node::Text(text) => f.write_str(&quote(text, false)),
            Node::Action(pipe) => write!(f, "{{{{{pipe}}}}}"),
            Node::If(b) => branch(f, "if", b),
            Node::With(b) => branch(f, "with", b),
            Node::Range(b) => branch(f, "range", b),
            Node::Template { name, pipe: None, .. } => write!(f, "{{{{template {}}}}}", quote(name, false)),
            Node::Template { name, pipe: Some(pipe), .. } => {
                write!(f, "{{{{template {} {pipe}}}}}", quote(name, false))
            }
            Node::Break => f.write_str("{{break}}"),
            Node::Continue => f.write_str("{{continue}}"),
        }
    }
}
