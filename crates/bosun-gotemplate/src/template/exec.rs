//! Execution: Go's `text/template/exec.go`, walking the parse tree with the same evaluation
//! order, the same argument checks and the same error wording.

use std::fmt;

use super::builtins;
use super::value::{Field, Function, Type, Value, assignable, indirect};
use super::{Context, MissingKey, Shared, Template};
use crate::error::{Error, Trace};
use crate::parse::{Branch, Command, Expr, ListNode, Node, Number, Pipe, Tree};
use crate::stack::grow_stack;
use crate::strconv::quote;

/// Runs the named template of `template` with `data`, appending to `out`.
pub(crate) fn run(
    template: &Template,
    name: &str,
    data: &Value,
    shared: &mut Shared,
    out: &mut String,
) -> Result<(), Error> {
    let Some(tree) = template.tree(name) else {
        return Err(Error::NoTemplate { name: name.to_string(), set: template.name().to_string() });
    };
    // Go's reflect.ValueOf(nil) is the invalid value.
    let dot = if matches!(data, Value::Nil) { Value::Missing } else { data.clone() };
    if shared.depth >= template.max_depth() {
        let message = format!("template: {name}: exceeded maximum template depth ({})", template.max_depth());
        return Err(Error::Exec { template: name.to_string(), message, trace: None });
    }
    shared.depth += 1;
    let mut state =
        State { set: template, tree: &tree, name, vars: vec![("$", dot.clone())], at: At::Nothing, shared, out };
    let result = state.walk_list(&dot, &tree.root);
    state.shared.depth -= 1;
    match result {
        Ok(()) => Ok(()),
        Err(Flow::Error(e)) => Err(e),
        // The parser allows break and continue only inside range, which consumes them.
        Err(Flow::Break | Flow::Continue) => Ok(()),
    }
}

/// Control flow out of a walk: an error, or `{{break}}`/`{{continue}}` looking for its range.
enum Flow {
    Break,
    Continue,
    Error(Error),
}

impl From<Error> for Flow {
    fn from(e: Error) -> Flow {
        Flow::Error(e)
    }
}

/// The node an error is reported at (Go's `s.at(node)`).
#[derive(Clone, Copy)]
enum At<'t> {
    Nothing,
    Expr(&'t Expr),
    Command(&'t Command),
    Pipe(&'t Pipe),
    Action(&'t Pipe),
    Template { pos: usize, name: &'t str, pipe: Option<&'t Pipe> },
}

impl At<'_> {
    fn pos(&self) -> usize {
        match self {
            At::Nothing => 0,
            At::Expr(e) => e.pos(),
            At::Command(c) => c.pos,
            At::Pipe(p) | At::Action(p) => p.pos,
            At::Template { pos, .. } => *pos,
        }
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Nothing => Ok(()),
            At::Expr(e) => write!(f, "{e}"),
            At::Command(c) => write!(f, "{c}"),
            At::Pipe(p) => write!(f, "{p}"),
            At::Action(p) => write!(f, "{{{{{p}}}}}"),
            At::Template { name, pipe: None, .. } => write!(f, "{{{{template {}}}}}", quote(name, false)),
            At::Template { name, pipe: Some(p), .. } => write!(f, "{{{{template {} {p}}}}}", quote(name, false)),
        }
    }
}

struct State<'t, 's> {
    set: &'t Template,
    tree: &'t Tree,
    name: &'t str,
    vars: Vec<(&'t str, Value)>,
    at: At<'t>,
    shared: &'s mut Shared,
    out: &'s mut String,
}

type EvalResult<T = Value> = Result<T, Error>;

impl<'t> State<'t, '_> {
    fn error(&self, message: impl fmt::Display) -> Error {
        self.error_caused(message.to_string(), None)
    }

    /// An error at the current node; `cause` is the nested execution's error that made a
    /// function fail, when there is one (`reason` is then the call's own words).
    fn error_caused(&self, reason: String, cause: Option<Box<Error>>) -> Error {
        let at = self.at;
        if matches!(at, At::Nothing) {
            let message = format!("template: {}: {reason}", self.name);
            return Error::Exec { template: self.name.to_string(), message, trace: None };
        }
        let (line, column) = self.tree.line_column(at.pos());
        let file = self.tree.parse_name.to_string();
        let full_reason = match &cause {
            Some(cause) => format!("{reason}{cause}"),
            None => reason.clone(),
        };
        let message =
            format!("template: {file}:{line}:{column}: executing {} at <{at}>: {full_reason}", quote(self.name, false));
        let reason = if cause.is_some() { reason.trim_end_matches([':', ' ']).to_string() } else { reason };
        let trace = Trace { file, line, column, node: at.to_string(), reason, cause };
        Error::Exec { template: self.name.to_string(), message, trace: Some(Box::new(trace)) }
    }

    fn err<T>(&self, message: impl fmt::Display) -> EvalResult<T> {
        Err(self.error(message))
    }

    fn var_value(&self, name: &str) -> EvalResult {
        match self.vars.iter().rev().find(|(n, _)| *n == name) {
            Some((_, v)) => Ok(v.clone()),
            None => self.err(format!("undefined variable: {name}")),
        }
    }

    fn set_var(&mut self, name: &str, value: Value) -> EvalResult<()> {
        match self.vars.iter_mut().rev().find(|(n, _)| *n == name) {
            Some(slot) => {
                slot.1 = value;
                Ok(())
            }
            None => self.err(format!("undefined variable: {name}")),
        }
    }

    fn context(&mut self) -> Context<'_> {
        Context { template: self.set, shared: self.shared }
    }

    // Walking.

    fn walk_list(&mut self, dot: &Value, list: &'t ListNode) -> Result<(), Flow> {
        grow_stack(|| {
            for node in &list.nodes {
                self.walk(dot, node)?;
            }
            Ok(())
        })
    }

    fn walk(&mut self, dot: &Value, node: &'t Node) -> Result<(), Flow> {
        match node {
            Node::Text(text) => self.out.push_str(text),
            Node::Action(pipe) => {
                self.at = At::Action(pipe);
                let value = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.print_value(At::Action(pipe), &value)?;
                }
            }
            Node::If(branch) => self.walk_if_or_with(false, dot, branch)?,
            Node::With(branch) => self.walk_if_or_with(true, dot, branch)?,
            Node::Range(branch) => self.walk_range(dot, branch)?,
            Node::Template { pos, name, pipe } => self.walk_template(dot, *pos, name, pipe.as_ref())?,
            Node::Break => return Err(Flow::Break),
            Node::Continue => return Err(Flow::Continue),
        }
        Ok(())
    }

    fn walk_if_or_with(&mut self, with: bool, dot: &Value, branch: &'t Branch) -> Result<(), Flow> {
        let mark = self.vars.len();
        let result = (|| {
            let value = self.eval_pipeline(dot, &branch.pipe)?;
            if value.truth() {
                if with { self.walk_list(&value, &branch.list) } else { self.walk_list(dot, &branch.list) }
            } else if let Some(else_list) = &branch.else_list {
                self.walk_list(dot, else_list)
            } else {
                Ok(())
            }
        })();
        self.vars.truncate(mark);
        result
    }

    fn walk_range(&mut self, dot: &Value, r: &'t Branch) -> Result<(), Flow> {
        let mark = self.vars.len();
        let result = self.walk_range_inner(dot, r);
        self.vars.truncate(mark);
        match result {
            Err(Flow::Break) => Ok(()),
            other => other,
        }
    }

    fn walk_range_inner(&mut self, dot: &Value, r: &'t Branch) -> Result<(), Flow> {
        let (value, _) = indirect(&self.eval_pipeline(dot, &r.pipe)?);
        let mark = self.vars.len();
        let pairs: Vec<(Value, Value)> = match &value {
            Value::List(l) => l.items.iter().enumerate().map(|(i, v)| (Value::int(i as i64), v.clone())).collect(),
            Value::Map(m) => m.snapshot().into_iter().map(|(k, v)| (Value::from(k), v)).collect(),
            Value::Int(n, kind) => {
                self.check_range_int_vars(r, &value)?;
                (0..(*n).max(0)).map(|i| (Value::Missing, Value::Int(i, *kind))).collect()
            }
            Value::Uint(n, kind) => {
                self.check_range_int_vars(r, &value)?;
                (0..*n).map(|i| (Value::Missing, Value::Uint(i, *kind))).collect()
            }
            Value::Missing | Value::Nil => Vec::new(),
            Value::Object(o) => match o.entries() {
                Some(entries) => entries,
                None => return Err(self.error(format!("range can't iterate over {value}")).into()),
            },
            other => return Err(self.error(format!("range can't iterate over {other}")).into()),
        };
        if pairs.is_empty() {
            if let Some(else_list) = &r.else_list {
                self.walk_list(dot, else_list)?;
            }
            return Ok(());
        }
        for (index, elem) in pairs {
            self.range_vars(r, index, elem.clone())?;
            let result = self.walk_list(&elem, &r.list);
            self.vars.truncate(mark);
            match result {
                Ok(()) | Err(Flow::Continue) => {}
                Err(other) => return Err(other),
            }
        }
        Ok(())
    }

    fn check_range_int_vars(&self, r: &Branch, value: &Value) -> Result<(), Flow> {
        if r.pipe.decl.len() > 1 {
            return Err(self.error(format!("can't use {value} to iterate over more than one variable")).into());
        }
        Ok(())
    }

    /// Sets the range variables for one iteration, as Go's `oneIteration`.
    fn range_vars(&mut self, r: &'t Branch, index: Value, elem: Value) -> EvalResult<()> {
        let decl = &r.pipe.decl;
        if decl.is_empty() {
            return Ok(());
        }
        if r.pipe.is_assign {
            if decl.len() > 1 {
                self.set_var(&decl[0], index)?;
                self.set_var(&decl[1], elem)?;
            } else {
                self.set_var(&decl[0], elem)?;
            }
            return Ok(());
        }
        // The declared variables are the top of the stack: the element last.
        let n = self.vars.len();
        self.vars[n - 1].1 = elem;
        if decl.len() > 1 {
            self.vars[n - 2].1 = index;
        }
        Ok(())
    }

    fn walk_template(&mut self, dot: &Value, pos: usize, name: &'t str, pipe: Option<&'t Pipe>) -> Result<(), Flow> {
        self.at = At::Template { pos, name, pipe };
        let Some(tree) = self.set.tree(name) else {
            return Err(self.error(format!("template {} not defined", quote(name, false))).into());
        };
        if self.shared.depth >= self.set.max_depth() {
            return Err(self.error(format!("exceeded maximum template depth ({})", self.set.max_depth())).into());
        }
        let dot = match pipe {
            Some(pipe) => self.eval_pipeline(dot, pipe)?,
            None => Value::Missing,
        };
        self.shared.depth += 1;
        let mut nested = State {
            set: self.set,
            tree: &tree,
            name,
            vars: vec![("$", dot.clone())],
            at: At::Nothing,
            shared: self.shared,
            out: self.out,
        };
        let result = nested.walk_list(&dot, &tree.root);
        self.shared.depth -= 1;
        result
    }

    fn print_value(&mut self, at: At<'t>, value: &Value) -> EvalResult<()> {
        self.at = at;
        match value {
            Value::Missing | Value::Nil => self.out.push_str("<no value>"),
            Value::String(s) => self.out.push_str(s),
            Value::Func(f) => return self.err(format!("can't print {at} of type {}", f.type_name())),
            Value::Object(_) => {
                let (target, _) = indirect(value);
                self.out.push_str(&super::fmt::sprint(std::slice::from_ref(&target)));
            }
            other => self.out.push_str(&super::fmt::sprint(std::slice::from_ref(other))),
        }
        Ok(())
    }

    // Evaluation.

    fn eval_pipeline(&mut self, dot: &Value, pipe: &'t Pipe) -> EvalResult {
        grow_stack(|| self.eval_pipeline_inner(dot, pipe))
    }

    fn eval_pipeline_inner(&mut self, dot: &Value, pipe: &'t Pipe) -> EvalResult {
        self.at = At::Pipe(pipe);
        let mut value = None;
        for cmd in &pipe.cmds {
            let mut v = self.eval_command(dot, cmd, value.take())?;
            // A nil interface{} result is no value at all (Go digs into the interface).
            if matches!(v, Value::Nil) {
                v = Value::Missing;
            }
            value = Some(v);
        }
        let value = value.unwrap_or(Value::Missing);
        for name in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, value.clone())?;
            } else {
                self.vars.push((name, value.clone()));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Expr], final_: &Option<Value>) -> EvalResult<()> {
        if args.len() > 1 || final_.is_some() {
            return self.err(format!("can't give argument to non-function {}", args[0]));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Value, cmd: &'t Command, final_: Option<Value>) -> EvalResult {
        let first = &cmd.args[0];
        match first {
            Expr::Field { idents, .. } => {
                self.at = At::Expr(first);
                return self.eval_field_chain(dot, dot.clone(), first, idents, &cmd.args, final_);
            }
            Expr::Chain { .. } => return self.eval_chain(dot, first, &cmd.args, final_),
            Expr::Identifier { name, .. } => {
                return self.eval_function(dot, first, name, At::Command(cmd), &cmd.args, final_);
            }
            Expr::Pipe(pipe) => {
                self.not_a_function(&cmd.args, &final_)?;
                return self.eval_pipeline(dot, pipe);
            }
            Expr::Variable { .. } => return self.eval_variable(dot, first, &cmd.args, final_),
            _ => {}
        }
        self.at = At::Expr(first);
        self.not_a_function(&cmd.args, &final_)?;
        match first {
            Expr::Bool { value, .. } => Ok(Value::Bool(*value)),
            Expr::Dot { .. } => Ok(dot.clone()),
            Expr::Nil { .. } => self.err("nil is not a command"),
            Expr::Number { number, .. } => self.ideal_constant(first, number),
            Expr::String { value, .. } => Ok(Value::String(value.clone())),
            _ => self.err(format!("can't evaluate command {}", quote(&first.to_string(), false))),
        }
    }

    fn ideal_constant(&mut self, node: &'t Expr, n: &Number) -> EvalResult {
        self.at = At::Expr(node);
        let text = &n.text;
        let is_hex_int = text.len() > 2
            && text.starts_with('0')
            && matches!(text.as_bytes()[1], b'x' | b'X')
            && !text.contains(['p', 'P']);
        if n.is_complex {
            Ok(Value::Complex(n.complex.0, n.complex.1))
        } else if n.is_float && !is_hex_int && !text.starts_with('\'') && text.contains(['.', 'e', 'E', 'p', 'P']) {
            Ok(Value::Float(n.float))
        } else if n.is_int {
            Ok(Value::int(n.int))
        } else if n.is_uint {
            self.err(format!("{text} overflows int"))
        } else {
            Ok(Value::Missing)
        }
    }

    fn eval_chain(&mut self, dot: &Value, chain: &'t Expr, args: &'t [Expr], final_: Option<Value>) -> EvalResult {
        let Expr::Chain { node, fields, .. } = chain else { unreachable!("eval_chain on a chain") };
        self.at = At::Expr(chain);
        if matches!(**node, Expr::Nil { .. }) {
            return self.err(format!("indirection through explicit nil in {chain}"));
        }
        let receiver = self.eval_arg(dot, &Type::Reflect, node)?;
        self.eval_field_chain(dot, receiver, chain, fields, args, final_)
    }

    fn eval_variable(&mut self, dot: &Value, var: &'t Expr, args: &'t [Expr], final_: Option<Value>) -> EvalResult {
        let Expr::Variable { idents, .. } = var else { unreachable!("eval_variable on a variable") };
        self.at = At::Expr(var);
        let value = self.var_value(&idents[0])?;
        if idents.len() == 1 {
            self.not_a_function(args, &final_)?;
            return Ok(value);
        }
        self.eval_field_chain(dot, value, var, &idents[1..], args, final_)
    }

    fn eval_field_chain(
        &mut self,
        dot: &Value,
        mut receiver: Value,
        node: &'t Expr,
        idents: &'t [String],
        args: &'t [Expr],
        final_: Option<Value>,
    ) -> EvalResult {
        let n = idents.len();
        for ident in &idents[..n - 1] {
            receiver = self.eval_field(dot, ident, node, &[], None, receiver)?;
        }
        self.eval_field(dot, &idents[n - 1], node, args, final_, receiver)
    }

    fn eval_function(
        &mut self,
        dot: &Value,
        node: &'t Expr,
        name: &str,
        call_at: At<'t>,
        args: &'t [Expr],
        final_: Option<Value>,
    ) -> EvalResult {
        self.at = At::Expr(node);
        let (function, is_builtin) = match self.set.func(name) {
            Some(f) => (f.clone(), false),
            None => match builtins::builtin(name) {
                Some(f) => (f.clone(), true),
                None => return self.err(format!("{} is not a defined function", quote(name, false))),
            },
        };
        self.eval_call(dot, &function, is_builtin, call_at, name, args, final_)
    }

    fn eval_field(
        &mut self,
        dot: &Value,
        field: &str,
        node: &'t Expr,
        args: &'t [Expr],
        final_: Option<Value>,
        receiver: Value,
    ) -> EvalResult {
        if matches!(receiver, Value::Missing) {
            if self.set.missing_key() == MissingKey::Error {
                return self.err(format!("nil data; no entry for key {}", quote(field, false)));
            }
            return Ok(Value::Missing);
        }
        let typ = receiver.type_of();
        let (receiver, is_nil) = indirect(&receiver);
        if matches!(receiver, Value::Nil) {
            return self.err(format!("nil pointer evaluating {typ}.{field}"));
        }
        if let Value::Object(o) = &receiver
            && let Some(method) = o.method(field)
        {
            return self.eval_call(dot, &method, false, At::Expr(node), field, args, final_);
        }
        let has_args = args.len() > 1 || final_.is_some();
        match &receiver {
            Value::Object(o) if !is_nil => match o.field(field) {
                Field::Value(v) => {
                    if has_args {
                        return self.err(format!("{field} has arguments but cannot be invoked as function"));
                    }
                    return Ok(v);
                }
                Field::Unexported => return self.err(format!("{field} is an unexported field of struct type {typ}")),
                Field::NotFound => {}
            },
            Value::Object(o) if !matches!(o.field(field), Field::NotFound) => {
                return self.err(format!("nil pointer evaluating {typ}.{field}"));
            }
            Value::Map(m) => {
                if has_args {
                    return self.err(format!("{field} is not a method but has arguments"));
                }
                return match m.get(field) {
                    Some(v) => Ok(v),
                    None => match self.set.missing_key() {
                        MissingKey::Default => Ok(Value::Missing),
                        MissingKey::Zero => Ok(m.elem().zero()),
                        MissingKey::Error => self.err(format!("map has no entry for key {}", quote(field, false))),
                    },
                };
            }
            _ => {}
        }
        self.err(format!("can't evaluate field {field} in type {typ}"))
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_call(
        &mut self,
        dot: &Value,
        fun: &Function,
        is_builtin: bool,
        node: At<'t>,
        name: &str,
        args: &'t [Expr],
        final_: Option<Value>,
    ) -> EvalResult {
        let args = args.get(1..).unwrap_or(&[]);
        let params = fun.params();
        let num_in = args.len() + usize::from(final_.is_some());
        let num_fixed = if fun.variadic_type().is_some() { params.len() } else { args.len() };
        if fun.variadic_type().is_some() {
            if num_in < num_fixed {
                return self.err(format!(
                    "wrong number of args for {name}: want at least {} got {}",
                    params.len(),
                    args.len()
                ));
            }
        } else if num_in != params.len() {
            return self.err(format!("wrong number of args for {name}: want {} got {num_in}", params.len()));
        }

        // and/or evaluate their arguments only as far as needed.
        if is_builtin && (name == "and" || name == "or") {
            let mut v = Value::Missing;
            for arg in args {
                v = self.eval_arg(dot, &Type::Reflect, arg)?;
                if v.truth() == (name == "or") {
                    return Ok(v);
                }
            }
            if let Some(final_) = final_ {
                v = self.validate_type(final_, &Type::Reflect)?;
            }
            return Ok(v);
        }

        let mut argv = Vec::with_capacity(num_in);
        let mut i = 0;
        while i < num_fixed && i < args.len() {
            argv.push(self.eval_arg(dot, &params[i], &args[i])?);
            i += 1;
        }
        if let Some(variadic) = fun.variadic_type() {
            while i < args.len() {
                argv.push(self.eval_arg(dot, variadic, &args[i])?);
                i += 1;
            }
        }
        if let Some(final_) = final_ {
            let t = match fun.variadic_type() {
                Some(v) if num_in > num_fixed => v,
                _ => &params[num_in - 1],
            };
            argv.push(self.validate_type(final_, t)?);
        }
        if is_builtin && name == "call" {
            let callee =
                args.first().map_or_else(|| argv.first().map(Value::to_string).unwrap_or_default(), Expr::to_string);
            return match builtins::call(&mut self.context(), &callee, argv) {
                Ok(v) => Ok(v),
                Err(e) => {
                    self.at = node;
                    let (context, cause) = e.into_parts();
                    Err(self.error_caused(format!("error calling call: {context}"), cause))
                }
            };
        }
        match fun.call(&mut self.context(), argv) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.at = node;
                let (context, cause) = e.into_parts();
                Err(self.error_caused(format!("error calling {name}: {context}"), cause))
            }
        }
    }

    fn validate_type(&self, value: Value, typ: &Type) -> EvalResult {
        if matches!(value, Value::Missing) {
            if typ.can_be_nil() {
                return Ok(typ.zero());
            }
            return self.err(format!("invalid value; expected {typ}"));
        }
        if assignable(&value, typ) {
            return Ok(value);
        }
        // One dereference of a pointer, or taking the address of a struct field, may do.
        if let Value::Object(o) = &value
            && !o.is_pointer()
            && matches!(typ, Type::Named(name) if name.strip_prefix('*') == Some(&*o.type_name()))
        {
            return Ok(value);
        }
        if let Value::Object(o) = &value
            && o.is_pointer()
        {
            match o.deref() {
                Some(target) if assignable(&target, typ) => return Ok(target),
                None if o.type_name().strip_prefix('*') == Some(&typ.to_string()) => {
                    return self.err(format!("dereference of nil pointer of type {typ}"));
                }
                _ => {}
            }
        }
        self.err(format!("wrong type for value; expected {typ}; got {}", value.type_of()))
    }

    fn eval_arg(&mut self, dot: &Value, typ: &Type, n: &'t Expr) -> EvalResult {
        self.at = At::Expr(n);
        match n {
            Expr::Dot { .. } => return self.validate_type(dot.clone(), typ),
            Expr::Nil { .. } => {
                if typ.can_be_nil() {
                    return Ok(if *typ == Type::Reflect { Value::Missing } else { typ.zero() });
                }
                return self.err(format!("cannot assign nil to {typ}"));
            }
            Expr::Field { idents, .. } => {
                let v = self.eval_field_chain(dot, dot.clone(), n, idents, std::slice::from_ref(n), None)?;
                return self.validate_type(v, typ);
            }
            Expr::Variable { .. } => {
                let v = self.eval_variable(dot, n, &[], None)?;
                return self.validate_type(v, typ);
            }
            Expr::Pipe(pipe) => {
                let v = self.eval_pipeline(dot, pipe)?;
                return self.validate_type(v, typ);
            }
            Expr::Identifier { name, .. } => {
                let v = self.eval_function(dot, n, name, At::Expr(n), &[], None)?;
                return self.validate_type(v, typ);
            }
            Expr::Chain { .. } => {
                let v = self.eval_chain(dot, n, &[], None)?;
                return self.validate_type(v, typ);
            }
            _ => {}
        }
        match (typ, n) {
            (Type::Bool, Expr::Bool { value, .. }) => Ok(Value::Bool(*value)),
            (Type::Bool, _) => self.err(format!("expected bool; found {n}")),
            (Type::Complex128, Expr::Number { number, .. }) if number.is_complex => {
                Ok(Value::Complex(number.complex.0, number.complex.1))
            }
            (Type::Complex128, _) => self.err(format!("expected complex; found {n}")),
            (Type::Float64, Expr::Number { number, .. }) if number.is_float => Ok(Value::Float(number.float)),
            (Type::Float64, _) => self.err(format!("expected float; found {n}")),
            (Type::Int(k), Expr::Number { number, .. }) if number.is_int => Ok(Value::Int(number.int, *k)),
            (Type::Int(_), _) => self.err(format!("expected integer; found {n}")),
            (Type::Uint(k), Expr::Number { number, .. }) if number.is_uint => Ok(Value::Uint(number.uint, *k)),
            (Type::Uint(_), _) => self.err(format!("expected unsigned integer; found {n}")),
            (Type::String, Expr::String { value, .. }) => Ok(Value::String(value.clone())),
            (Type::String, _) => self.err(format!("expected string; found {n}")),
            (Type::Any | Type::Reflect, Expr::Bool { value, .. }) => Ok(Value::Bool(*value)),
            (Type::Any | Type::Reflect, Expr::Number { number, .. }) => self.ideal_constant(n, number),
            (Type::Any | Type::Reflect, Expr::String { value, .. }) => Ok(Value::String(value.clone())),
            _ => self.err(format!("can't handle {n} for arg of type {typ}")),
        }
    }
}
