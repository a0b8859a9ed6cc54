//! Writing YAML as Helm's `toYaml` does: `json.Marshal`, read back by go-yaml v2, written by
//! go-yaml v2's emitter (libyaml's). The emitter state below follows libyaml's: block
//! collections, sequences not indented under a mapping key, empty collections in flow style
//! (`{}`, `[]`), map keys in go-yaml's natural order, scalars quoted only when a reader would
//! take them for something else, long plain and quoted scalars folded at column 80.

use serde_json::{Map, Value};

use super::resolve::{Resolved, is_base60_float, resolve_plain};
use crate::golang::{FloatFormat, format_float, json_number};

/// go-yaml's preferred line width and indentation.
const BEST_WIDTH: usize = 80;
const BEST_INDENT: i64 = 2;
/// The longest key written as `key: value` (longer ones use `? key`).
const SIMPLE_KEY_MAX: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// What libyaml's `yaml_emitter_analyze_scalar` learns about a scalar.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn is_printable(c: char) -> bool {
    let c = c as u32;
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (0xA0..=0xD7FF).contains(&c)
        || ((0xE000..=0xFFFD).contains(&c) && c != 0xFEFF)
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = value.chars().collect();
    let (mut block_indicators, mut line_breaks, mut special_characters) = (false, false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) = (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    if value.starts_with("---") || value.starts_with("...") {
        block_indicators = true;
    }
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&next| is_blank(next));
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%' | '@' | '`' => {
                    block_indicators = true;
                }
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= i + 1 == chars.len();
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= i + 1 == chars.len();
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blank(c) || is_break(c) || c == '\0';
    }
    let mut analysis = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break || line_breaks || block_indicators {
        analysis.block_plain_allowed = false;
    }
    if trailing_space {
        analysis.block_allowed = false;
    }
    if break_space {
        analysis.block_plain_allowed = false;
        analysis.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        analysis.block_plain_allowed = false;
        analysis.single_quoted_allowed = false;
        analysis.block_allowed = false;
    }
    analysis
}

/// The style go-yaml's encoder asks for a string: plain unless a reader would resolve the
/// text to something else, a literal block for text with line breaks.
fn string_style(s: &str) -> Style {
    let can_use_plain = resolve_plain(s) == Resolved::Str && !is_base60_float(s);
    if s.contains('\n') {
        Style::Literal
    } else if can_use_plain {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

/// A number as `json.Marshal` writes it and go-yaml reads and writes it back: integral values
/// (floats included) print as integers, others in Go's `g` format (`1e+21`, `0.5`).
fn number_text(number: &serde_json::Number) -> String {
    let json = json_number(number);
    if let Ok(i) = json.parse::<i64>() {
        i.to_string()
    } else if let Ok(u) = json.parse::<u64>() {
        u.to_string()
    } else {
        json.parse::<f64>().map_or(json, |f| format_float(f, FloatFormat::General))
    }
}

/// go-yaml's `keyList.Less` for string keys: letters by code point, runs of digits by their
/// numeric value (`a2` before `a10`), letters after non-letters.
fn key_less(a: &str, b: &str) -> bool {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            // A zero after other digits is part of a number, not a leading zero.
            if ar[..i].iter().rev().take_while(|c| c.is_ascii_digit()).any(|&c| c != '0') {
                an = 1;
                bn = 1;
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

pub(crate) fn sorted_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort_by(|a, b| {
        if key_less(a, b) {
            std::cmp::Ordering::Less
        } else if key_less(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    keys
}

/// Where a node stands, as libyaml's emitter tracks it.
#[derive(Clone, Copy, Default)]
struct Context {
    mapping: bool,
    simple_key: bool,
}

struct Emitter {
    out: String,
    column: usize,
    indent: i64,
    indents: Vec<i64>,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn new() -> Self {
        Emitter { out: String::new(), column: 0, indent: -1, indents: Vec::new(), whitespace: true, indention: true }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn decrease_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, indicator: &str, need_whitespace: bool, is_whitespace: bool, is_indention: bool) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn node(&mut self, value: &Value, context: Context) {
        match value {
            Value::Object(map) if !map.is_empty() => self.mapping(map),
            Value::Array(items) if !items.is_empty() => self.sequence(items, context),
            Value::Object(_) => self.empty_flow("{", "}"),
            Value::Array(_) => self.empty_flow("[", "]"),
            Value::Null => self.scalar("null", Style::Plain, context),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, context),
            Value::Number(n) => self.scalar(&number_text(n), Style::Plain, context),
            Value::String(s) => self.scalar(s, string_style(s), context),
        }
    }

    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.decrease_indent();
        self.write_indicator(close, false, false, false);
    }

    fn mapping(&mut self, map: &Map<String, Value>) {
        self.increase_indent(false, false);
        for key in sorted_keys(map) {
            self.write_indent();
            let style = string_style(key);
            let simple = !analyze(key).multiline && key.len() <= SIMPLE_KEY_MAX;
            if simple {
                self.scalar(key, style, Context { mapping: true, simple_key: true });
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(key, style, Context { mapping: true, simple_key: false });
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(&map[key.as_str()], Context { mapping: true, simple_key: false });
        }
        self.decrease_indent();
    }

    fn sequence(&mut self, items: &[Value], context: Context) {
        let indentless = context.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Context::default());
        }
        self.decrease_indent();
    }

    /// libyaml's `yaml_emitter_select_scalar_style`, then the writer of that style.
    fn scalar(&mut self, value: &str, requested: Style, context: Context) {
        let analysis = analyze(value);
        let mut style = requested;
        if context.simple_key && analysis.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!analysis.block_plain_allowed || (value.is_empty() && context.simple_key)) {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!analysis.block_allowed || context.simple_key) {
            style = Style::DoubleQuoted;
        }
        self.increase_indent(true, false);
        let allow_breaks = !context.simple_key;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.decrease_indent();
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        self.write_folded_text(value, allow_breaks, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        self.write_folded_text(value, allow_breaks, true);
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The text of a plain or single-quoted scalar: a space past the line width becomes a line
    /// break; a quoted scalar doubles its quotes and never breaks at its first or last byte.
    fn write_folded_text(&mut self, value: &str, allow_breaks: bool, quoted: bool) {
        let chars: Vec<char> = value.chars().collect();
        let last = value.len().saturating_sub(1);
        let (mut spaces, mut breaks) = (false, false);
        let mut byte = 0;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_is_space = chars.get(i + 1) == Some(&' ');
                let inside = !quoted || (byte > 0 && byte < last);
                if allow_breaks && !spaces && self.column > BEST_WIDTH && inside && !next_is_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if quoted && c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
            byte += c.len_utf8();
        }
    }

    fn write_double_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        // libyaml tests the value's first bytes for a BOM at every position.
        let starts_with_bom = value.starts_with('\u{feff}');
        let chars: Vec<char> = value.chars().collect();
        let last = value.len().saturating_sub(1);
        let mut spaces = false;
        let mut byte = 0;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || starts_with_bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    c => {
                        let code = c as u32;
                        let escaped = if code <= 0xFF {
                            format!("x{code:02X}")
                        } else if code <= 0xFFFF {
                            format!("u{code:04X}")
                        } else {
                            format!("U{code:08X}")
                        };
                        for e in escaped.chars() {
                            self.put(e);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && byte > 0 && byte < last {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
            byte += c.len_utf8();
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let chomp = match chars.as_slice() {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., before, _] if is_break(*before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in chars {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }

    /// The end of the document: a final line break unless the node ended one.
    fn finish(mut self) -> String {
        self.indent = -1;
        self.write_indent();
        self.out
    }
}

/// `yaml.Marshal` of sigs.k8s.io/yaml: the whole document, ending with a line break.
pub(crate) fn marshal(value: &Value) -> String {
    let mut emitter = Emitter::new();
    emitter.node(value, Context::default());
    emitter.finish()
}
