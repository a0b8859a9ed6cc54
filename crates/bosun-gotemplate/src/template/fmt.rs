//! Go's `fmt` printing (`Sprint`, `Sprintln`, `Sprintf`) over [`Value`]s: what `{{ . }}`,
//! `print` and `printf` write.

use super::value::{TemplateObject, Type, Value};
use crate::strconv::*;

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.type_name(), sprint(std::slice::from_ref(self)))
    }
}

impl std::fmt::Display for Value {
    /// Go's `%v`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&sprint(std::slice::from_ref(self)))
    }
}

#[derive(Clone, Copy, Default)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

struct Printer {
    buf: String,
    f: Flags,
}

/// Go's `fmt.Sprint`.
pub fn sprint(args: &[Value]) -> String {
    let mut p = Printer { buf: String::new(), f: Flags::default() };
    let mut prev_string = false;
    for (i, arg) in args.iter().enumerate() {
        let is_string = matches!(arg, Value::String(_));
        if i > 0 && !is_string && !prev_string {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v', 0);
        prev_string = is_string;
    }
    p.buf
}

/// Go's `fmt.Sprintln`.
pub fn sprintln(args: &[Value]) -> String {
    let mut p = Printer { buf: String::new(), f: Flags::default() };
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v', 0);
    }
    p.buf.push('\n');
    p.buf
}

const TOO_LARGE: usize = 1_000_000;

fn parse_num(format: &[u8], mut i: usize, end: usize) -> (Option<usize>, usize) {
    let start = i;
    let mut n: usize = 0;
    while i < end && format[i].is_ascii_digit() {
        n = n * 10 + usize::from(format[i] - b'0');
        if n > TOO_LARGE {
            return (None, end);
        }
        i += 1;
    }
    if i == start { (None, i) } else { (Some(n), i) }
}

fn int_from_arg(args: &[Value], arg_num: usize) -> (Option<i64>, usize) {
    let Some(arg) = args.get(arg_num) else {
        return (None, arg_num);
    };
    let n = match arg {
        Value::Int(i, _) => Some(*i),
        Value::Uint(u, _) => i64::try_from(*u).ok(),
        _ => None,
    };
    (n.filter(|n| n.unsigned_abs() <= TOO_LARGE as u64), arg_num + 1)
}

/// Go's `fmt.Sprintf`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer { buf: String::new(), f: Flags::default() };
    let fb = format.as_bytes();
    let end = fb.len();
    let mut arg_num = 0usize;
    let mut reordered = false;
    let mut i = 0;
    while i < end {
        let mut good_arg_num = true;
        let last = i;
        while i < end && fb[i] != b'%' {
            i += 1;
        }
        if i > last {
            p.buf.push_str(&format[last..i]);
        }
        if i >= end {
            break;
        }
        i += 1;
        p.f = Flags::default();
        while i < end {
            match fb[i] {
                b'#' => p.f.sharp = true,
                b'0' => p.f.zero = !p.f.minus,
                b'+' => p.f.plus = true,
                b'-' => {
                    p.f.minus = true;
                    p.f.zero = false;
                }
                b' ' => p.f.space = true,
                _ => break,
            }
            i += 1;
        }
        // An explicit argument index, [n].
        let mut arg_number = |arg_num: usize, i: usize, good: &mut bool| -> (usize, usize, bool) {
            if i >= end || fb[i] != b'[' {
                return (arg_num, i, false);
            }
            reordered = true;
            let close = fb[i..].iter().position(|&c| c == b']');
            let Some(close) = close.filter(|_| end - i >= 3) else {
                *good = false;
                return (arg_num, i + 1, false);
            };
            let (n, ni) = parse_num(fb, i + 1, i + close);
            match n {
                Some(n) if ni == i + close && n >= 1 && n - 1 < args.len() => (n - 1, i + close + 1, true),
                Some(_) if ni == i + close => {
                    *good = false;
                    (arg_num, i + close + 1, true)
                }
                _ => {
                    *good = false;
                    (arg_num, i + close + 1, false)
                }
            }
        };
        let (a, ni, mut after_index) = arg_number(arg_num, i, &mut good_arg_num);
        arg_num = a;
        i = ni;
        // Width.
        if i < end && fb[i] == b'*' {
            i += 1;
            let (n, a) = int_from_arg(args, arg_num);
            arg_num = a;
            match n {
                Some(n) if n < 0 => {
                    p.f.wid = Some(n.unsigned_abs() as usize);
                    p.f.minus = true;
                    p.f.zero = false;
                }
                Some(n) => p.f.wid = Some(n as usize),
                None => p.buf.push_str("%!(BADWIDTH)"),
            }
            after_index = false;
        } else {
            let (w, ni) = parse_num(fb, i, end);
            p.f.wid = w;
            i = ni;
            if after_index && w.is_some() {
                good_arg_num = false;
            }
        }
        // Precision.
        if i + 1 < end && fb[i] == b'.' {
            i += 1;
            if after_index {
                good_arg_num = false;
            }
            let (a, ni, ai) = arg_number(arg_num, i, &mut good_arg_num);
            arg_num = a;
            i = ni;
            after_index = ai;
            if i < end && fb[i] == b'*' {
                i += 1;
                let (n, a) = int_from_arg(args, arg_num);
                arg_num = a;
                match n {
                    Some(n) if n >= 0 => p.f.prec = Some(n as usize),
                    Some(_) => p.f.prec = None,
                    None => {
                        p.f.prec = None;
                        p.buf.push_str("%!(BADPREC)");
                    }
                }
                after_index = false;
            } else {
                let (n, ni) = parse_num(fb, i, end);
                p.f.prec = Some(n.unwrap_or(0));
                i = ni;
            }
        }
        if !after_index {
            let (a, ni, _) = arg_number(arg_num, i, &mut good_arg_num);
            arg_num = a;
            i = ni;
        }
        if i >= end {
            p.buf.push_str("%!(NOVERB)");
            break;
        }
        let verb = format[i..].chars().next().unwrap_or('?');
        i += verb.len_utf8();
        if verb == '%' {
            p.buf.push('%');
        } else if !good_arg_num {
            p.buf.push_str(&format!("%!{verb}(BADINDEX)"));
        } else if arg_num >= args.len() {
            p.buf.push_str(&format!("%!{verb}(MISSING)"));
        } else {
            if verb == 'v' {
                p.f.sharp_v = p.f.sharp;
                p.f.sharp = false;
                p.f.plus = false;
            }
            p.print_arg(&args[arg_num], verb, 0);
            arg_num += 1;
        }
    }
    if !reordered && arg_num < args.len() {
        p.f = Flags::default();
        p.buf.push_str("%!(EXTRA ");
        for (i, arg) in args[arg_num..].iter().enumerate() {
            if i > 0 {
                p.buf.push_str(", ");
            }
            if arg.is_nil() {
                p.buf.push_str("<nil>");
            } else {
                p.buf.push_str(&arg.type_name());
                p.buf.push('=');
                p.print_arg(arg, 'v', 0);
            }
        }
        p.buf.push(')');
    }
    p.buf
}

impl Printer {
    fn write_padding(&mut self, n: usize) {
        let c = if self.f.zero { '0' } else { ' ' };
        self.buf.extend(std::iter::repeat_n(c, n));
    }

    fn pad(&mut self, s: &str) {
        let Some(wid) = self.f.wid else {
            self.buf.push_str(s);
            return;
        };
        let width = wid.saturating_sub(s.chars().count());
        if self.f.minus {
            self.buf.push_str(s);
            self.buf.extend(std::iter::repeat_n(' ', width));
        } else {
            self.write_padding(width);
            self.buf.push_str(s);
        }
    }

    fn bad_verb(&mut self, verb: char, arg: &Value) {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        if arg.is_nil() {
            self.buf.push_str("<nil>");
        } else {
            self.buf.push_str(&arg.type_name());
            self.buf.push('=');
            self.print_arg(arg, 'v', 0);
        }
        self.buf.push(')');
    }

    fn print_arg(&mut self, arg: &Value, verb: char, depth: usize) {
        if arg.is_nil() {
            match verb {
                'T' | 'v' => self.pad("<nil>"),
                _ => self.bad_verb(verb, arg),
            }
            return;
        }
        if verb == 'T' {
            self.fmt_s(&arg.type_name());
            return;
        }
        match arg {
            Value::Missing | Value::Nil => {}
            Value::Bool(b) => match verb {
                't' | 'v' => self.pad(if *b { "true" } else { "false" }),
                _ => self.bad_verb(verb, arg),
            },
            Value::Int(i, _) => self.fmt_integer(i.unsigned_abs(), *i < 0, true, verb, arg),
            Value::Uint(u, _) if verb == 'v' && self.f.sharp_v => {
                // Go syntax writes unsigned integers in hex.
                let sharp = std::mem::replace(&mut self.f.sharp, true);
                self.fmt_integer(*u, false, false, 'x', arg);
                self.f.sharp = sharp;
            }
            Value::Uint(u, _) => self.fmt_integer(*u, false, false, verb, arg),
            Value::Float(f) => self.fmt_float_verb(*f, verb, arg),
            Value::Complex(re, im) => match verb {
                'v' | 'b' | 'g' | 'G' | 'x' | 'X' | 'f' | 'F' | 'e' | 'E' => {
                    // Go formats each part with the flags; the imaginary part always has a sign.
                    self.buf.push('(');
                    self.fmt_float_verb(*re, verb, arg);
                    let plus = std::mem::replace(&mut self.f.plus, true);
                    self.fmt_float_verb(*im, verb, arg);
                    self.f.plus = plus;
                    self.buf.push_str("i)");
                }
                _ => self.bad_verb(verb, arg),
            },
            Value::String(s) => self.fmt_string(s, verb, arg),
            Value::List(l) => {
                // Go syntax (`%#v`) is `[]T{a, b}`; otherwise `[a b]`.
                let (open, separator, close) = if self.f.sharp_v { ("{", ", ", "}") } else { ("[", " ", "]") };
                if self.f.sharp_v {
                    self.buf.push_str(&arg.type_name());
                }
                self.buf.push_str(open);
                for (i, item) in l.items.iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(separator);
                    }
                    self.print_element(item, &l.elem, verb, depth);
                }
                self.buf.push_str(close);
            }
            Value::Map(m) => {
                let (open, separator, close) = if self.f.sharp_v { ("{", ", ", "}") } else { ("[", " ", "]") };
                let name = if self.f.sharp_v { arg.type_name() } else { "map".to_string() };
                self.buf.push_str(&name);
                self.buf.push_str(open);
                for (i, (k, v)) in m.snapshot().iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(separator);
                    }
                    self.fmt_string(k, verb, &Value::from(k.as_str()));
                    self.buf.push(':');
                    self.print_element(v, m.elem(), verb, depth);
                }
                self.buf.push_str(close);
            }
            Value::Object(o) => self.print_object(&**o, verb, arg, depth),
            Value::Func(f) => {
                let s = format!("{f:?}");
                self.pad(&s);
            }
        }
    }

    /// An element of a slice or map: a nil `interface{}` element is `interface {}(nil)` in Go
    /// syntax.
    fn print_element(&mut self, item: &Value, elem: &Type, verb: char, depth: usize) {
        if self.f.sharp_v && item.is_nil() {
            self.buf.push_str(&format!("{elem}(nil)"));
        } else {
            self.print_arg(item, verb, depth + 1);
        }
    }

    fn print_object(&mut self, o: &dyn TemplateObject, verb: char, arg: &Value, depth: usize) {
        if matches!(verb, 'v' | 's' | 'x' | 'X' | 'q')
            && let Some(s) = o.string()
        {
            self.fmt_string(&s, verb, arg);
            return;
        }
        if o.is_pointer() {
            match o.deref() {
                None => self.pad("<nil>"),
                Some(target @ (Value::List(_) | Value::Map(_))) if depth == 0 => {
                    self.buf.push('&');
                    self.print_arg(&target, verb, depth + 1);
                }
                Some(target) => self.print_arg(&target, verb, depth + 1),
            }
            return;
        }
        let s = o.format();
        self.pad(&s);
    }

    fn fmt_s(&mut self, s: &str) {
        match self.f.prec {
            Some(p) => {
                let truncated: String = s.chars().take(p).collect();
                self.pad(&truncated);
            }
            None => self.pad(s),
        }
    }

    fn fmt_string(&mut self, s: &str, verb: char, arg: &Value) {
        match verb {
            'v' if self.f.sharp_v => self.fmt_q(s),
            'v' | 's' => self.fmt_s(s),
            'x' | 'X' => self.fmt_sx(s.as_bytes(), verb == 'X'),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(verb, arg),
        }
    }

    fn fmt_sx(&mut self, bytes: &[u8], upper: bool) {
        let n = self.f.prec.map_or(bytes.len(), |p| p.min(bytes.len()));
        let mut s = String::new();
        for (i, b) in bytes[..n].iter().enumerate() {
            if self.f.space && i > 0 {
                s.push(' ');
            }
            if self.f.sharp && (self.f.space || i == 0) {
                s.push_str(if upper { "0X" } else { "0x" });
            }
            if upper {
                s.push_str(&format!("{b:02X}"));
            } else {
                s.push_str(&format!("{b:02x}"));
            }
        }
        self.pad(&s);
    }

    fn fmt_q(&mut self, s: &str) {
        let truncated: String = match self.f.prec {
            Some(p) => s.chars().take(p).collect(),
            None => s.to_string(),
        };
        let q = if self.f.sharp && can_backquote(&truncated) {
            format!("`{truncated}`")
        } else {
            quote(&truncated, self.f.plus)
        };
        self.pad(&q);
    }

    fn fmt_integer(&mut self, magnitude: u64, negative: bool, signed: bool, verb: char, arg: &Value) {
        let (base, upper) = match verb {
            'v' | 'd' => (10, false),
            'b' => (2, false),
            'o' | 'O' => (8, false),
            'x' => (16, false),
            'X' => (16, true),
            'c' => {
                let c = rune_of(magnitude, negative);
                self.pad(&c.to_string());
                return;
            }
            'q' => {
                let q = quote_rune(rune_of(magnitude, negative), self.f.plus);
                self.pad(&q);
                return;
            }
            'U' => {
                let mut s = format!("U+{magnitude:04X}");
                if self.f.sharp && !negative {
                    let c = rune_of(magnitude, negative);
                    if is_print(c) {
                        s.push_str(&format!(" '{c}'"));
                    }
                }
                let zero = std::mem::replace(&mut self.f.zero, false);
                self.pad(&s);
                self.f.zero = zero;
                return;
            }
            _ => return self.bad_verb(verb, arg),
        };
        let _ = signed;
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && magnitude == 0 {
                let zero = std::mem::replace(&mut self.f.zero, false);
                self.write_padding(self.f.wid.unwrap_or(0));
                self.f.zero = zero;
                return;
            }
        } else if self.f.zero && !self.f.minus && self.f.wid.is_some() {
            prec = self.f.wid.unwrap_or(0);
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut digits = match base {
            2 => format!("{magnitude:b}"),
            8 => format!("{magnitude:o}"),
            16 if upper => format!("{magnitude:X}"),
            16 => format!("{magnitude:x}"),
            _ => magnitude.to_string(),
        };
        if digits.len() < prec {
            digits = format!("{}{}", "0".repeat(prec - digits.len()), digits);
        }
        let mut prefix = String::new();
        if self.f.sharp {
            match base {
                2 => prefix.push_str("0b"),
                8 if !digits.starts_with('0') => prefix.push('0'),
                16 => prefix.push_str(if upper { "0X" } else { "0x" }),
                _ => {}
            }
        }
        if verb == 'O' {
            prefix.insert_str(0, "0o");
        }
        if negative {
            prefix.insert(0, '-');
        } else if self.f.plus {
            prefix.insert(0, '+');
        } else if self.f.space {
            prefix.insert(0, ' ');
        }
        let zero = std::mem::replace(&mut self.f.zero, false);
        self.pad(&format!("{prefix}{digits}"));
        self.f.zero = zero;
    }

    fn fmt_float_verb(&mut self, f: f64, verb: char, arg: &Value) {
        let (verb, default_prec) = match verb {
            'v' => ('g', -1),
            'b' | 'g' | 'G' | 'x' | 'X' => (verb, -1),
            'f' | 'F' | 'e' | 'E' => (verb, 6),
            _ => return self.bad_verb(verb, arg),
        };
        let prec = self.f.prec.map_or(default_prec, |p| p as i32);
        let num = format_float(f, verb, prec);
        let (mut sign, mut body) = match num.strip_prefix('-') {
            Some(rest) => ('-', rest.to_string()),
            None => ('+', num.strip_prefix('+').unwrap_or(&num).to_string()),
        };
        if self.f.sharp && verb != 'b' && body != "Inf" && body != "NaN" {
            body = sharp_float(&body, verb, prec);
        }
        if self.f.space && sign == '+' && !self.f.plus {
            sign = ' ';
        }
        if body == "Inf" || body == "NaN" {
            let zero = std::mem::replace(&mut self.f.zero, false);
            let s = if body == "NaN" && !self.f.space && !self.f.plus { body } else { format!("{sign}{body}") };
            self.pad(&s);
            self.f.zero = zero;
            return;
        }
        if self.f.plus || sign != '+' {
            let len = body.chars().count() + 1;
            if self.f.zero && !self.f.minus && self.f.wid.is_some_and(|w| w > len) {
                self.buf.push(sign);
                self.write_padding(self.f.wid.unwrap_or(0) - len);
                self.buf.push_str(&body);
                return;
            }
            self.pad(&format!("{sign}{body}"));
            return;
        }
        self.pad(&body);
    }
}

fn rune_of(magnitude: u64, negative: bool) -> char {
    if negative {
        return '\u{FFFD}';
    }
    u32::try_from(magnitude).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}')
}
