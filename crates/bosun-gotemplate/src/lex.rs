//! The lexer: Go's `text/template/parse/lex.go` state machine, run to completion up front
//! (Go runs it in a goroutine beside the parser; the tokens are the same).

use std::fmt;

use crate::strconv::quote;

/// Kinds of tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ItemType {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords.
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

impl ItemType {
    fn is_keyword(self) -> bool {
        self as u8 >= ItemType::Block as u8
    }
}

/// A token: its kind, byte offset, text (the message for errors) and line.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub typ: ItemType,
    pub pos: usize,
    pub val: String,
    pub line: usize,
}

impl fmt::Display for Item {
    /// Go's `item.String()`, used in "unexpected …" messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.typ {
            ItemType::Eof => f.write_str("EOF"),
            ItemType::Error => f.write_str(&self.val),
            t if t.is_keyword() => write!(f, "<{}>", self.val),
            _ if self.val.chars().count() > 10 => {
                let head: String = self.val.chars().take(10).collect();
                write!(f, "{}...", quote(&head, false))
            }
            _ => f.write_str(&quote(&self.val, false)),
        }
    }
}

const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";

pub(crate) fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

pub(crate) fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn has_left_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(b[1] as char)
}

fn has_right_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(b[0] as char) && b[1] == b'-'
}

/// "U+0026 '&'", Go's `%#U`.
pub(crate) fn unicode_name(c: char) -> String {
    format!("U+{:04X} '{}'", c as u32, c)
}

enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    InsideAction,
    Space,
    Identifier,
    Field,
    Variable,
    Char,
    Number,
    Quote,
    RawQuote,
}

struct Lexer<'a> {
    input: &'a str,
    left: &'a str,
    right: &'a str,
    pos: usize,
    start: usize,
    paren_depth: i32,
    break_ok: bool,
    continue_ok: bool,
    newlines: Vec<usize>,
    items: Vec<Item>,
}

/// Lexes `input` to the end or the first error (an [`ItemType::Error`] token ends the list).
pub(crate) fn lex(input: &str, left: &str, right: &str, break_ok: bool, continue_ok: bool) -> Vec<Item> {
    let mut l = Lexer {
        input,
        left,
        right,
        pos: 0,
        start: 0,
        paren_depth: 0,
        break_ok,
        continue_ok,
        newlines: input.match_indices('\n').map(|(i, _)| i).collect(),
        items: Vec::new(),
    };
    let mut state = Some(State::Text);
    while let Some(s) = state {
        state = l.step(s);
    }
    l.items
}

impl Lexer<'_> {
    /// 1 + the number of newlines before `pos`.
    fn line_at(&self, pos: usize) -> usize {
        1 + self.newlines.partition_point(|&n| n < pos)
    }

    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn next(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
        }
    }

    fn emit(&mut self, typ: ItemType) {
        let val = self.input[self.start..self.pos].to_string();
        self.items.push(Item { typ, pos: self.start, val, line: self.line_at(self.start) });
        self.start = self.pos;
    }

    fn ignore(&mut self) {
        self.start = self.pos;
    }

    fn error(&mut self, message: String) -> Option<State> {
        self.items.push(Item { typ: ItemType::Error, pos: self.start, val: message, line: self.line_at(self.start) });
        None
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(c) if valid.contains(c) => {
                self.pos += c.len_utf8();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = self.rest();
        if has_right_trim_marker(rest) && rest[2..].starts_with(self.right) {
            return (true, true);
        }
        (rest.starts_with(self.right), false)
    }

    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if is_space(c) || matches!(c, '.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(c) => self.right.starts_with(c),
        }
    }

    fn step(&mut self, state: State) -> Option<State> {
        match state {
            State::Text => self.lex_text(),
            State::LeftDelim => self.lex_left_delim(),
            State::Comment => self.lex_comment(),
            State::RightDelim => self.lex_right_delim(),
            State::InsideAction => self.lex_inside_action(),
            State::Space => self.lex_space(),
            State::Identifier => self.lex_identifier(),
            State::Field => self.lex_field_or_variable(ItemType::Field),
            State::Variable => {
                if self.at_terminator() {
                    self.emit(ItemType::Variable);
                    return Some(State::InsideAction);
                }
                self.lex_field_or_variable(ItemType::Variable)
            }
            State::Char => self.lex_quoted('\'', ItemType::CharConstant, "unterminated character constant"),
            State::Number => self.lex_number(),
            State::Quote => self.lex_quoted('"', ItemType::String, "unterminated quoted string"),
            State::RawQuote => self.lex_raw_quote(),
        }
    }

    fn lex_text(&mut self) -> Option<State> {
        if let Some(x) = self.rest().find(self.left) {
            if x > 0 {
                self.pos += x;
                let delim_end = self.pos + self.left.len();
                let trim = if has_left_trim_marker(&self.input[delim_end..]) {
                    let text = &self.input[self.start..self.pos];
                    text.len() - text.trim_end_matches(is_space).len()
                } else {
                    0
                };
                self.pos -= trim;
                if self.pos > self.start {
                    self.emit(ItemType::Text);
                }
                self.pos += trim;
                self.ignore();
            }
            return Some(State::LeftDelim);
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.emit(ItemType::Text);
        }
        self.emit(ItemType::Eof);
        None
    }

    fn lex_left_delim(&mut self) -> Option<State> {
        self.pos += self.left.len();
        let trim = has_left_trim_marker(self.rest());
        let after = if trim { 2 } else { 0 };
        if self.input[self.pos + after..].starts_with(LEFT_COMMENT) {
            self.pos += after;
            self.ignore();
            return Some(State::Comment);
        }
        self.emit(ItemType::LeftDelim);
        self.pos += after;
        self.ignore();
        self.paren_depth = 0;
        Some(State::InsideAction)
    }

    fn lex_comment(&mut self) -> Option<State> {
        self.pos += LEFT_COMMENT.len();
        let Some(x) = self.rest().find(RIGHT_COMMENT) else {
            return self.error("unclosed comment".into());
        };
        self.pos += x + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.error("comment ends before closing delimiter".into());
        }
        if trim {
            self.pos += 2;
        }
        self.pos += self.right.len();
        if trim {
            let rest = self.rest();
            self.pos += rest.len() - rest.trim_start_matches(is_space).len();
        }
        self.ignore();
        Some(State::Text)
    }

    fn lex_right_delim(&mut self) -> Option<State> {
        let (_, trim) = self.at_right_delim();
        if trim {
            self.pos += 2;
            self.ignore();
        }
        self.pos += self.right.len();
        self.emit(ItemType::RightDelim);
        if trim {
            let rest = self.rest();
            self.pos += rest.len() - rest.trim_start_matches(is_space).len();
            self.ignore();
        }
        Some(State::Text)
    }

    fn lex_inside_action(&mut self) -> Option<State> {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return Some(State::RightDelim);
            }
            return self.error("unclosed left paren".into());
        }
        let c = self.next();
        match c {
            None => return self.error("unclosed action".into()),
            Some(c) if is_space(c) => {
                self.backup(Some(c));
                return Some(State::Space);
            }
            Some('=') => self.emit(ItemType::Assign),
            Some(':') => {
                if self.next() != Some('=') {
                    return self.error("expected :=".into());
                }
                self.emit(ItemType::Declare);
            }
            Some('|') => self.emit(ItemType::Pipe),
            Some('"') => return Some(State::Quote),
            Some('`') => return Some(State::RawQuote),
            Some('$') => return Some(State::Variable),
            Some('\'') => return Some(State::Char),
            Some('.') if !self.peek().is_some_and(|c| c.is_ascii_digit()) => return Some(State::Field),
            Some(c @ ('.' | '+' | '-' | '0'..='9')) => {
                self.backup(Some(c));
                return Some(State::Number);
            }
            Some(c) if is_alphanumeric(c) => {
                self.backup(Some(c));
                return Some(State::Identifier);
            }
            Some('(') => {
                self.emit(ItemType::LeftParen);
                self.paren_depth += 1;
            }
            Some(')') => {
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.error("unexpected right paren".into());
                }
                self.emit(ItemType::RightParen);
            }
            Some(c) if c.is_ascii() && !c.is_ascii_control() => self.emit(ItemType::Char),
            Some(c) => return self.error(format!("unrecognized character in action: {}", unicode_name(c))),
        }
        Some(State::InsideAction)
    }

    fn lex_space(&mut self) -> Option<State> {
        let mut spaces = 0;
        while self.peek().is_some_and(is_space) {
            self.next();
            spaces += 1;
        }
        // A trim-marked closing delimiter has a minus after a space: leave that space to it.
        let last = &self.input[self.pos - 1..];
        if has_right_trim_marker(last) && last[2..].starts_with(self.right) {
            self.pos -= 1;
            if spaces == 1 {
                return Some(State::RightDelim);
            }
        }
        self.emit(ItemType::Space);
        Some(State::InsideAction)
    }

    /// Scans alphanumerics up to a terminator; the error for a bad character after them.
    fn scan_word(&mut self) -> Result<(), String> {
        let mut c = self.next();
        while c.is_some_and(is_alphanumeric) {
            c = self.next();
        }
        self.backup(c);
        if !self.at_terminator() {
            return Err(format!("bad character {}", unicode_name(c.unwrap_or('\0'))));
        }
        Ok(())
    }

    fn lex_identifier(&mut self) -> Option<State> {
        if let Err(message) = self.scan_word() {
            return self.error(message);
        }
        let typ = match &self.input[self.start..self.pos] {
            "block" => ItemType::Block,
            "break" if self.break_ok => ItemType::Break,
            "continue" if self.continue_ok => ItemType::Continue,
            "define" => ItemType::Define,
            "else" => ItemType::Else,
            "end" => ItemType::End,
            "if" => ItemType::If,
            "range" => ItemType::Range,
            "nil" => ItemType::Nil,
            "template" => ItemType::Template,
            "with" => ItemType::With,
            "true" | "false" => ItemType::Bool,
            _ => ItemType::Identifier,
        };
        self.emit(typ);
        Some(State::InsideAction)
    }

    fn lex_field_or_variable(&mut self, typ: ItemType) -> Option<State> {
        if self.at_terminator() {
            self.emit(if typ == ItemType::Variable { ItemType::Variable } else { ItemType::Dot });
            return Some(State::InsideAction);
        }
        if let Err(message) = self.scan_word() {
            return self.error(message);
        }
        self.emit(typ);
        Some(State::InsideAction)
    }

    /// Scans a quoted char or string up to `close`, the opening quote already read.
    fn lex_quoted(&mut self, close: char, typ: ItemType, unterminated: &str) -> Option<State> {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    None | Some('\n') => return self.error(unterminated.into()),
                    Some(_) => {}
                },
                None | Some('\n') => return self.error(unterminated.into()),
                Some(c) if c == close => break,
                Some(_) => {}
            }
        }
        self.emit(typ);
        Some(State::InsideAction)
    }

    fn lex_number(&mut self) -> Option<State> {
        if !self.scan_number() {
            return self.error(format!("bad number syntax: {}", quote(&self.input[self.start..self.pos], false)));
        }
        if matches!(self.peek(), Some('+' | '-')) {
            // Complex: 1+2i. No spaces, must end in 'i'.
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                return self.error(format!("bad number syntax: {}", quote(&self.input[self.start..self.pos], false)));
            }
            self.emit(ItemType::Complex);
        } else {
            self.emit(ItemType::Number);
        }
        Some(State::InsideAction)
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if self.peek().is_some_and(is_alphanumeric) {
            self.next();
            return false;
        }
        true
    }

    fn lex_raw_quote(&mut self) -> Option<State> {
        loop {
            match self.next() {
                None => return self.error("unterminated raw quoted string".into()),
                Some('`') => break,
                Some(_) => {}
            }
        }
        self.emit(ItemType::RawString);
        Some(State::InsideAction)
    }
}
