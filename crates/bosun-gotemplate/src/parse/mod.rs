//! The parser: Go's `text/template/parse`, with the same grammar, the same
//! node positions (error messages quote them) and the same error wording.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

mod node;

pub(crate) use node::{Branch, Command, Expr, ListNode, Node, Number, Pipe, Tree};

use crate::error::Error;
use crate::lex::{Item, ItemType, lex};
use crate::stack::grow_stack;
use crate::strconv::{parse_go_float, parse_go_int, quote, unquote, unquote_char};

/// The end of an item list: `{{end}}` or `{{else}}`.
enum ListEnd {
    End,
    Else,
}

impl fmt::Display for ListEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ListEnd::End => "{{end}}",
            ListEnd::Else => "{{else}}",
        })
    }
}

enum Parsed {
    Node(Node),
    End(ListEnd),
}

/// Whether a tree holds nothing but space and comments (Go's `IsEmptyTree`).
pub(crate) fn is_empty_tree(list: &ListNode) -> bool {
    list.nodes.iter().all(|node| match node {
        Node::Text(text) => text.trim_matches(|c: char| c.is_whitespace()).is_empty(),
        _ => false,
    })
}

type ParseResult<T> = Result<T, Error>;

/// Parses `text` as the template `name`; returns every tree it defines, `name`'s own included.
pub(crate) fn parse(
    name: &str,
    text: &str,
    delims: (&str, &str),
    has_function: &dyn Fn(&str) -> bool,
) -> ParseResult<HashMap<String, Tree>> {
    let items = lex(text, delims.0, delims.1, !has_function("break"), !has_function("continue"));
    let mut p = Parser {
        items,
        i: 0,
        last_read: 0,
        parse_name: Arc::from(name),
        text: Arc::from(text),
        has_function,
        vars: vec!["$".into()],
        range_depth: 0,
        stack_depth: 0,
        action_line: 0,
        trees: HashMap::new(),
    };
    let root = p.parse_top()?;
    p.add(name.to_string(), root)?;
    Ok(p.trees)
}

const MAX_STACK_DEPTH: usize = 10000;

struct Parser<'a> {
    items: Vec<Item>,
    i: usize,
    last_read: usize,
    parse_name: Arc<str>,
    text: Arc<str>,
    has_function: &'a dyn Fn(&str) -> bool,
    vars: Vec<String>,
    range_depth: usize,
    stack_depth: usize,
    action_line: usize,
    trees: HashMap<String, Tree>,
}

impl Parser<'_> {
    fn next(&mut self) -> Item {
        let idx = self.i.min(self.items.len() - 1);
        self.i = idx + 1;
        self.last_read = self.last_read.max(idx);
        self.items[idx].clone()
    }

    fn backup(&mut self) {
        self.i -= 1;
    }

    fn peek(&mut self) -> Item {
        let item = self.next();
        self.backup();
        item
    }

    fn next_non_space(&mut self) -> Item {
        loop {
            let item = self.next();
            if item.typ != ItemType::Space {
                return item;
            }
        }
    }

    fn peek_non_space(&mut self) -> Item {
        let item = self.next_non_space();
        self.backup();
        item
    }

    fn errorf<T>(&self, message: impl fmt::Display) -> ParseResult<T> {
        let line = self.items[self.last_read].line;
        let (file, reason) = (self.parse_name.to_string(), message.to_string());
        Err(Error::Parse { message: format!("template: {file}:{line}: {reason}"), file, line, reason })
    }

    fn unexpected<T>(&self, token: &Item, context: &str) -> ParseResult<T> {
        if token.typ == ItemType::Error {
            let mut extra = String::new();
            if self.action_line != 0 && self.action_line != token.line {
                extra = format!(" in action started at {}:{}", self.parse_name, self.action_line);
                if token.val.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.errorf(format!("{token}{extra}"));
        }
        self.errorf(format!("unexpected {token} in {context}"))
    }

    fn expect(&mut self, expected: ItemType, context: &str) -> ParseResult<Item> {
        let token = self.next_non_space();
        if token.typ != expected {
            return self.unexpected(&token, context);
        }
        Ok(token)
    }

    fn add(&mut self, name: String, root: ListNode) -> ParseResult<()> {
        match self.trees.get(&name) {
            Some(existing) if !is_empty_tree(&existing.root) => {
                if !is_empty_tree(&root) {
                    return self.errorf(format!("template: multiple definition of template {}", quote(&name, false)));
                }
            }
            _ => {
                let tree = Tree { parse_name: self.parse_name.clone(), text: self.text.clone(), root };
                self.trees.insert(name, tree);
            }
        }
        Ok(())
    }

    fn parse_top(&mut self) -> ParseResult<ListNode> {
        let mut root = ListNode::default();
        while self.peek().typ != ItemType::Eof {
            if self.peek().typ == ItemType::LeftDelim {
                let delim_at = self.i;
                self.next();
                if self.next_non_space().typ == ItemType::Define {
                    self.nested_tree(Self::parse_definition)?;
                    continue;
                }
                self.i = delim_at;
            }
            match self.text_or_action()? {
                Parsed::Node(node) => root.nodes.push(node),
                Parsed::End(end) => return self.errorf(format!("unexpected {end}")),
            }
        }
        Ok(root)
    }

    /// Runs `f` as Go runs a new `Tree` on the same lexer: its own variables and range depth.
    fn nested_tree<T>(&mut self, f: impl FnOnce(&mut Self) -> ParseResult<T>) -> ParseResult<T> {
        let vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let range_depth = std::mem::replace(&mut self.range_depth, 0);
        let result = f(self);
        self.vars = vars;
        self.range_depth = range_depth;
        result
    }

    fn parse_definition(&mut self) -> ParseResult<()> {
        const CONTEXT: &str = "define clause";
        let token = self.next_non_space();
        if !matches!(token.typ, ItemType::String | ItemType::RawString) {
            return self.unexpected(&token, CONTEXT);
        }
        let name = self.unquote(&token.val)?;
        self.expect(ItemType::RightDelim, CONTEXT)?;
        let (root, end) = self.item_list()?;
        if !matches!(end, ListEnd::End) {
            return self.errorf(format!("unexpected {end} in {CONTEXT}"));
        }
        self.add(name, root)
    }

    fn item_list(&mut self) -> ParseResult<(ListNode, ListEnd)> {
        grow_stack(|| self.item_list_inner())
    }

    fn item_list_inner(&mut self) -> ParseResult<(ListNode, ListEnd)> {
        let mut list = ListNode::default();
        while self.peek_non_space().typ != ItemType::Eof {
            match self.text_or_action()? {
                Parsed::Node(node) => list.nodes.push(node),
                Parsed::End(end) => return Ok((list, end)),
            }
        }
        self.errorf("unexpected EOF")
    }

    fn text_or_action(&mut self) -> ParseResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Text => Ok(Parsed::Node(Node::Text(token.val))),
            ItemType::LeftDelim => {
                self.action_line = token.line;
                let result = self.action();
                self.action_line = 0;
                result
            }
            _ => self.unexpected(&token, "input"),
        }
    }

    fn action(&mut self) -> ParseResult<Parsed> {
        let token = self.next_non_space();
        let node = match token.typ {
            ItemType::Block => self.block_control()?,
            ItemType::Break | ItemType::Continue => {
                let context = format!("{{{{{}}}}}", token.val);
                let next = self.next_non_space();
                if next.typ != ItemType::RightDelim {
                    return self.unexpected(&next, &context);
                }
                if self.range_depth == 0 {
                    return self.errorf(format!("{context} outside {{{{range}}}}"));
                }
                if token.typ == ItemType::Break { Node::Break } else { Node::Continue }
            }
            ItemType::Else => {
                let peek = self.peek_non_space();
                if !matches!(peek.typ, ItemType::If | ItemType::With) {
                    self.expect(ItemType::RightDelim, "else")?;
                }
                return Ok(Parsed::End(ListEnd::Else));
            }
            ItemType::End => {
                self.expect(ItemType::RightDelim, "end")?;
                return Ok(Parsed::End(ListEnd::End));
            }
            ItemType::If => Node::If(self.parse_control("if")?),
            ItemType::Range => Node::Range(self.parse_control("range")?),
            ItemType::With => Node::With(self.parse_control("with")?),
            ItemType::Template => self.template_control()?,
            _ => {
                self.backup();
                Node::Action(self.pipeline("command", ItemType::RightDelim)?)
            }
        };
        Ok(Parsed::Node(node))
    }

    fn parse_control(&mut self, context: &str) -> ParseResult<Branch> {
        let vars = self.vars.len();
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let listed = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, end) = listed?;
        let else_list = match end {
            ListEnd::End => None,
            ListEnd::Else => {
                // `{{else if …}}` and `{{else with …}}` nest a new if/with whose {{end}} ends both.
                let peek = self.peek().typ;
                if (context == "if" && peek == ItemType::If) || (context == "with" && peek == ItemType::With) {
                    self.next();
                    let nested = self.parse_control(context)?;
                    let node = if context == "if" { Node::If(nested) } else { Node::With(nested) };
                    Some(ListNode { nodes: vec![node] })
                } else {
                    let (else_list, end) = self.item_list()?;
                    if !matches!(end, ListEnd::End) {
                        return self.errorf(format!("expected end; found {end}"));
                    }
                    Some(else_list)
                }
            }
        };
        self.vars.truncate(vars);
        Ok(Branch { pipe, list, else_list })
    }

    fn block_control(&mut self) -> ParseResult<Node> {
        const CONTEXT: &str = "block clause";
        let token = self.next_non_space();
        let name = self.template_name(&token, CONTEXT)?;
        let pipe = self.pipeline(CONTEXT, ItemType::RightDelim)?;
        let (root, end) = self.nested_tree(Self::item_list)?;
        if !matches!(end, ListEnd::End) {
            return self.errorf(format!("unexpected {end} in {CONTEXT}"));
        }
        self.add(name.clone(), root)?;
        Ok(Node::Template { pos: token.pos, name, pipe: Some(pipe) })
    }

    fn template_control(&mut self) -> ParseResult<Node> {
        const CONTEXT: &str = "template clause";
        let token = self.next_non_space();
        let name = self.template_name(&token, CONTEXT)?;
        let mut pipe = None;
        if self.next_non_space().typ != ItemType::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(CONTEXT, ItemType::RightDelim)?);
        }
        Ok(Node::Template { pos: token.pos, name, pipe })
    }

    fn template_name(&mut self, token: &Item, context: &str) -> ParseResult<String> {
        match token.typ {
            ItemType::String | ItemType::RawString => self.unquote(&token.val),
            _ => self.unexpected(token, context),
        }
    }

    fn pipeline(&mut self, context: &str, end: ItemType) -> ParseResult<Pipe> {
        grow_stack(|| self.pipeline_inner(context, end))
    }

    fn pipeline_inner(&mut self, context: &str, end: ItemType) -> ParseResult<Pipe> {
        let token = self.peek_non_space();
        let mut pipe = Pipe { pos: token.pos, is_assign: false, decl: Vec::new(), cmds: Vec::new() };
        // Declarations or assignments first.
        loop {
            let v = self.peek_non_space();
            if v.typ != ItemType::Variable {
                break;
            }
            let at_variable = self.i;
            self.next();
            let after_variable = self.peek();
            let next = self.peek_non_space();
            match next.typ {
                ItemType::Assign | ItemType::Declare => {
                    pipe.is_assign = next.typ == ItemType::Assign;
                    self.next_non_space();
                    pipe.decl.push(v.val.clone());
                    self.vars.push(v.val);
                }
                ItemType::Char if next.val == "," => {
                    self.next_non_space();
                    pipe.decl.push(v.val.clone());
                    self.vars.push(v.val);
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().typ {
                            ItemType::Variable | ItemType::RightDelim | ItemType::RightParen => continue,
                            _ => return self.errorf("range can only initialize variables"),
                        }
                    }
                    return self.errorf(format!("too many declarations in {context}"));
                }
                _ => {
                    let _ = after_variable;
                    self.i = at_variable;
                }
            }
            break;
        }
        loop {
            let token = self.next_non_space();
            match token.typ {
                t if t == end => {
                    self.check_pipeline(&pipe, context)?;
                    return Ok(pipe);
                }
                ItemType::Bool
                | ItemType::CharConstant
                | ItemType::Complex
                | ItemType::Dot
                | ItemType::Field
                | ItemType::Identifier
                | ItemType::Number
                | ItemType::Nil
                | ItemType::RawString
                | ItemType::String
                | ItemType::Variable
                | ItemType::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return self.unexpected(&token, context),
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str) -> ParseResult<()> {
        if pipe.cmds.is_empty() {
            return self.errorf(format!("missing value for {context}"));
        }
        for (i, cmd) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                cmd.args[0],
                Expr::Bool { .. } | Expr::Dot { .. } | Expr::Nil { .. } | Expr::Number { .. } | Expr::String { .. }
            ) {
                return self.errorf(format!("non executable command in pipeline stage {}", i + 1));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> ParseResult<Command> {
        let mut cmd = Command { pos: self.peek_non_space().pos, args: Vec::new() };
        loop {
            self.peek_non_space();
            if let Some(operand) = self.operand()? {
                cmd.args.push(operand);
            }
            let token = self.next();
            match token.typ {
                ItemType::Space => continue,
                ItemType::RightDelim | ItemType::RightParen => self.backup(),
                ItemType::Pipe => {}
                _ => return self.unexpected(&token, "operand"),
            }
            break;
        }
        if cmd.args.is_empty() {
            return self.errorf("empty command");
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> ParseResult<Option<Expr>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().typ != ItemType::Field {
            return Ok(Some(node));
        }
        let pos = self.peek().pos;
        let mut fields = Vec::new();
        while self.peek().typ == ItemType::Field {
            fields.push(self.next().val[1..].to_string());
        }
        Ok(Some(match node {
            Expr::Field { mut idents, .. } => {
                idents.extend(fields);
                Expr::Field { pos, idents }
            }
            Expr::Variable { mut idents, .. } => {
                idents.extend(fields);
                Expr::Variable { pos, idents }
            }
            Expr::Bool { .. } | Expr::String { .. } | Expr::Number { .. } | Expr::Nil { .. } | Expr::Dot { .. } => {
                return self.errorf(format!("unexpected . after term {}", quote(&node.to_string(), false)));
            }
            other => Expr::Chain { pos, node: Box::new(other), fields },
        }))
    }

    fn term(&mut self) -> ParseResult<Option<Expr>> {
        let token = self.next_non_space();
        let pos = token.pos;
        Ok(Some(match token.typ {
            ItemType::Identifier => {
                if !(self.has_function)(&token.val) {
                    return self.errorf(format!("function {} not defined", quote(&token.val, false)));
                }
                Expr::Identifier { pos, name: token.val }
            }
            ItemType::Dot => Expr::Dot { pos },
            ItemType::Nil => Expr::Nil { pos },
            ItemType::Variable => {
                if !self.vars.contains(&token.val) {
                    return self.errorf(format!("undefined variable {}", quote(&token.val, false)));
                }
                Expr::Variable { pos, idents: vec![token.val] }
            }
            ItemType::Field => Expr::Field { pos, idents: vec![token.val[1..].to_string()] },
            ItemType::Bool => Expr::Bool { pos, value: token.val == "true" },
            ItemType::CharConstant | ItemType::Complex | ItemType::Number => {
                match parse_number(&token.val, token.typ) {
                    Ok(number) => Expr::Number { pos, number: Box::new(number) },
                    Err(message) => return self.errorf(message),
                }
            }
            ItemType::LeftParen => {
                if self.stack_depth >= MAX_STACK_DEPTH {
                    return self.errorf("max expression depth exceeded");
                }
                self.stack_depth += 1;
                let pipe = self.pipeline("parenthesized pipeline", ItemType::RightParen);
                self.stack_depth -= 1;
                Expr::Pipe(Box::new(pipe?))
            }
            ItemType::String | ItemType::RawString => {
                let value = Arc::from(self.unquote(&token.val)?);
                Expr::String { pos, quoted: token.val, value }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }

    fn unquote(&self, quoted: &str) -> ParseResult<String> {
        match unquote(quoted) {
            Some(s) => Ok(s),
            None => self.errorf("invalid syntax"),
        }
    }
}

/// Go's `newNumber`: every reading (int, uint, float, complex) the text allows.
fn parse_number(text: &str, typ: ItemType) -> Result<Number, String> {
    let mut n = Number { text: text.to_string(), ..Number::default() };
    match typ {
        ItemType::CharConstant => {
            let (decoded, tail) = unquote_char(&text[1..], b'\'').ok_or_else(|| "invalid syntax".to_string())?;
            if tail != "'" {
                return Err(format!("malformed character constant: {text}"));
            }
            let v = decoded.value();
            n.is_int = true;
            n.int = i64::from(v);
            n.is_uint = true;
            n.uint = u64::from(v);
            n.is_float = true;
            n.float = f64::from(v);
            return Ok(n);
        }
        ItemType::Complex => {
            let split = text
                .char_indices()
                .skip(1)
                .filter(|&(i, c)| {
                    (c == '+' || c == '-') && !matches!(text.as_bytes()[i - 1], b'e' | b'E' | b'p' | b'P')
                })
                .map(|(i, _)| i)
                .last()
                .ok_or_else(|| format!("expected complex: {text}"))?;
            let re = parse_go_float(&text[..split]).ok_or_else(|| format!("expected complex: {text}"))?;
            let im = parse_go_float(&text[split..text.len() - 1]).ok_or_else(|| format!("expected complex: {text}"))?;
            n.is_complex = true;
            n.complex = (re, im);
            n.simplify_complex();
            return Ok(n);
        }
        _ => {}
    }
    if let Some(imag) = text.strip_suffix('i')
        && let Some(f) = parse_go_float(imag)
    {
        n.is_complex = true;
        n.complex = (0.0, f);
        n.simplify_complex();
        return Ok(n);
    }
    let parsed = parse_go_int(text);
    if let Some((false, u)) = parsed {
        n.is_uint = !text.starts_with('+');
        n.uint = u;
    }
    if let Some((negative, magnitude)) = parsed {
        let value = if negative { 0i64.checked_sub_unsigned(magnitude) } else { i64::try_from(magnitude).ok() };
        if let Some(i) = value {
            n.is_int = true;
            n.int = i;
            if i == 0 {
                n.is_uint = true;
                n.uint = 0;
            }
        }
    }
    if n.is_int {
        n.is_float = true;
        n.float = n.int as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float = n.uint as f64;
    } else if let Some(f) = parse_go_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {}", quote(text, false)));
        }
        n.is_float = true;
        n.float = f;
        if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 {
            n.is_int = true;
            n.int = f as i64;
        }
        if f.fract() == 0.0 && f >= 0.0 && f < u64::MAX as f64 {
            n.is_uint = true;
            n.uint = f as u64;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!("illegal number syntax: {}", quote(text, false)));
    }
    Ok(n)
}

impl Number {
    fn simplify_complex(&mut self) {
        self.is_float = self.complex.1 == 0.0;
        if self.is_float {
            let f = self.complex.0;
            self.float = f;
            self.is_int = f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64;
            if self.is_int {
                self.int = f as i64;
            }
            self.is_uint = f.fract() == 0.0 && f >= 0.0 && f < u64::MAX as f64;
            if self.is_uint {
                self.uint = f as u64;
            }
        }
    }
}
