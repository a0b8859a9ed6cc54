//! Go's `strconv` as templates need it: quoting and unquoting strings, formatting floats, and
//! reading Go's number syntax. The lexer, the parser and the printer all build on it.

/// Go's `strconv.Quote` (`ascii_only`: `strconv.QuoteToASCII`).
pub fn quote(s: &str, ascii_only: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_quoted_rune(&mut out, c, '"', ascii_only);
    }
    out.push('"');
    out
}

/// Go's `strconv.QuoteRune`.
pub fn quote_rune(c: char, ascii_only: bool) -> String {
    let mut out = String::from("'");
    push_quoted_rune(&mut out, c, '\'', ascii_only);
    out.push('\'');
    out
}

fn push_quoted_rune(out: &mut String, c: char, quote: char, ascii_only: bool) {
    if c == quote || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if (c.is_ascii() || !ascii_only) && is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0c' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x0b' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// Go's `unicode.IsPrint`, closely enough: graphic characters and the ASCII space.
pub(crate) fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E
        | 0x2060..=0x206F | 0xD800..=0xDFFF | 0xFDD0..=0xFDEF | 0xFEFF | 0xFFF9..=0xFFFB | 0xFFFE | 0xFFFF
        | 0xE000..=0xF8FF | 0xF0000..)
}

/// Go's `strconv.CanBackquote`.
pub(crate) fn can_backquote(s: &str) -> bool {
    s.chars().all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !(c < ' ' || c == '\x7f')))
}

/// A float's decimal digits (no leading or trailing zeros) and decimal point position:
/// the value is 0.DIGITS × 10^dp. Zero has no digits.
struct Decimal {
    digits: Vec<u8>,
    dp: i32,
}

impl Decimal {
    /// The shortest digits that read back as `f` (`f` finite, non-negative).
    fn shortest(f: f64) -> Decimal {
        Decimal::from_exp(&format!("{f:e}"))
    }

    /// `f` rounded to `n` significant digits (n ≥ 1).
    fn significant(f: f64, n: usize) -> Decimal {
        Decimal::from_exp(&format!("{:.*e}", n - 1, f))
    }

    fn from_exp(s: &str) -> Decimal {
        let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
        while digits.last() == Some(&b'0') {
            digits.pop();
        }
        if digits.is_empty() {
            return Decimal { digits, dp: 0 };
        }
        Decimal { digits, dp: exp + 1 }
    }

    fn digit(&self, i: i32) -> u8 {
        if i >= 0 && (i as usize) < self.digits.len() { self.digits[i as usize] } else { b'0' }
    }

    /// `d.ddde±xx` with `prec` digits after the point.
    fn fmt_e(&self, prec: i32, e: char) -> String {
        let mut s = String::new();
        s.push(self.digit(0) as char);
        if prec > 0 {
            s.push('.');
            for i in 1..=prec {
                s.push(self.digit(i) as char);
            }
        }
        let exp = if self.digits.is_empty() { 0 } else { self.dp - 1 };
        s.push(e);
        s.push(if exp < 0 { '-' } else { '+' });
        let exp = exp.abs();
        if exp < 10 {
            s.push('0');
        }
        s.push_str(&exp.to_string());
        s
    }

    /// `ddd.ddd` with `prec` digits after the point.
    fn fmt_f(&self, prec: i32) -> String {
        let mut s = String::new();
        if self.dp > 0 {
            for i in 0..self.dp {
                s.push(self.digit(i) as char);
            }
        } else {
            s.push('0');
        }
        if prec > 0 {
            s.push('.');
            for i in 1..=prec {
                s.push(self.digit(self.dp + i - 1) as char);
            }
        }
        s
    }
}

/// Go's `strconv.FormatFloat(f, verb, prec, 64)` for verbs e, E, f, F, g, G (prec -1: shortest).
pub fn format_float(f: f64, verb: char, prec: i32) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let a = f.abs();
    let body = match verb {
        'b' => format_binary(a),
        'x' | 'X' => format_hex(a, prec, verb),
        'e' | 'E' => {
            if prec < 0 {
                let d = Decimal::shortest(a);
                d.fmt_e(d.digits.len().max(1) as i32 - 1, verb)
            } else {
                Decimal::significant(a, prec as usize + 1).fmt_e(prec, verb)
            }
        }
        'f' | 'F' => {
            if prec < 0 {
                let d = Decimal::shortest(a);
                d.fmt_f((d.digits.len() as i32 - d.dp).max(0))
            } else {
                format!("{a:.*}", prec as usize)
            }
        }
        _ => {
            let e = if verb == 'G' { 'E' } else { 'e' };
            let shortest = prec < 0;
            let d = if shortest { Decimal::shortest(a) } else { Decimal::significant(a, prec.max(1) as usize) };
            let nd = d.digits.len() as i32;
            let mut prec = if shortest { nd } else { prec.max(1) };
            let mut eprec = prec;
            if eprec > nd && nd >= d.dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = d.dp - 1;
            if !d.digits.is_empty() && (exp < -4 || exp >= eprec) {
                if prec > nd {
                    prec = nd;
                }
                d.fmt_e(prec - 1, e)
            } else {
                if prec > d.dp {
                    prec = nd;
                }
                d.fmt_f((prec - d.dp).max(0))
            }
        }
    };
    format!("{sign}{body}")
}

/// The float's mantissa (with its implicit bit) and binary exponent, as Go's `strconv` splits it.
fn mantissa_exponent(a: f64) -> (u64, i32) {
    let bits = a.to_bits();
    let mut exp = ((bits >> 52) & 0x7ff) as i32;
    let mut mant = bits & ((1 << 52) - 1);
    if exp == 0 {
        exp = 1;
    } else {
        mant |= 1 << 52;
    }
    (mant, exp - 1023)
}

/// `%b`: decimal mantissa and binary exponent, `4503599627370496p-52`.
fn format_binary(a: f64) -> String {
    let (mant, exp) = mantissa_exponent(a);
    let exp = exp - 52;
    format!("{mant}p{}{exp}", if exp >= 0 { "+" } else { "" })
}

/// `%x`: hexadecimal mantissa and binary exponent, `0x1.8p+01`, rounded to `prec` hex digits.
fn format_hex(a: f64, prec: i32, verb: char) -> String {
    let (mut mant, mut exp) = mantissa_exponent(a);
    if mant == 0 {
        exp = 0;
    }
    // The leading 1 at bit 60.
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if (0..15).contains(&prec) {
        let shift = (prec * 4) as u32;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let digits: &[u8; 16] = if verb == 'X' { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let mut out = format!("0{verb}{}", (mant >> 60) & 1);
    mant <<= 4;
    if prec < 0 && mant != 0 {
        out.push('.');
        while mant != 0 {
            out.push(digits[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    } else if prec > 0 {
        out.push('.');
        for _ in 0..prec {
            out.push(digits[((mant >> 60) & 15) as usize] as char);
            mant <<= 4;
        }
    }
    out.push(if verb == 'X' { 'P' } else { 'p' });
    out.push(if exp < 0 { '-' } else { '+' });
    out.push_str(&format!("{:02}", exp.abs()));
    out
}

/// Go's `#` flag on floats: always a decimal point, and for `%g` (and `%x`) trailing zeros up
/// to the precision (6 when none was given).
pub(crate) fn sharp_float(body: &str, verb: char, prec: i32) -> String {
    let mut digits = if matches!(verb, 'v' | 'g' | 'G' | 'x') { if prec < 0 { 6 } else { prec } } else { 0 };
    let hex = matches!(verb, 'x' | 'X');
    let tail_at = body.find(|c: char| matches!(c, 'p' | 'P') || (!hex && matches!(c, 'e' | 'E')));
    let (num, tail) = body.split_at(tail_at.unwrap_or(body.len()));
    let mut num = num.to_string();
    let mut seen_nonzero = false;
    for c in num.chars().filter(|&c| c != '.') {
        if c != '0' {
            seen_nonzero = true;
        }
        if seen_nonzero {
            digits -= 1;
        }
    }
    if !num.contains('.') {
        if num == "0" {
            digits -= 1;
        }
        num.push('.');
    }
    for _ in 0..digits.max(0) {
        num.push('0');
    }
    num + tail
}

/// What `%v` prints for a `float64`.
pub fn format_float_v(f: f64) -> String {
    format_float(f, 'g', -1)
}

/// Go's `strconv.Unquote` for the three quote kinds; `None` for invalid syntax.
pub(crate) fn unquote(quoted: &str) -> Option<String> {
    let bytes = quoted.as_bytes();
    if bytes.len() < 2 || bytes[0] != bytes[bytes.len() - 1] {
        return None;
    }
    let inner = &quoted[1..quoted.len() - 1];
    match bytes[0] {
        b'`' => (!inner.contains('`')).then(|| inner.replace('\r', "")),
        b'"' => {
            let mut out = Vec::with_capacity(inner.len());
            let mut rest = inner;
            while !rest.is_empty() {
                let (decoded, tail) = unquote_char(rest, b'"')?;
                decoded.push_to(&mut out);
                rest = tail;
            }
            Some(String::from_utf8_lossy(&out).into_owned())
        }
        b'\'' => {
            let (decoded, tail) = unquote_char(inner, b'\'')?;
            if !tail.is_empty() {
                return None;
            }
            let mut out = Vec::new();
            decoded.push_to(&mut out);
            Some(String::from_utf8_lossy(&out).into_owned())
        }
        _ => None,
    }
}

/// One decoded character: a rune, or a raw byte from `\x` or octal escapes in strings.
pub(crate) enum Decoded {
    Rune(char),
    Byte(u8),
}

impl Decoded {
    fn push_to(self, out: &mut Vec<u8>) {
        match self {
            Decoded::Rune(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            Decoded::Byte(b) => out.push(b),
        }
    }

    pub fn value(&self) -> u32 {
        match self {
            Decoded::Rune(c) => *c as u32,
            Decoded::Byte(b) => u32::from(*b),
        }
    }
}

/// Go's `strconv.UnquoteChar`.
pub(crate) fn unquote_char(s: &str, quote: u8) -> Option<(Decoded, &str)> {
    let first = s.chars().next()?;
    if first as u32 == u32::from(quote) && (quote == b'\'' || quote == b'"') {
        return None;
    }
    if first != '\\' {
        return Some((Decoded::Rune(first), &s[first.len_utf8()..]));
    }
    let b = s.as_bytes();
    if b.len() <= 1 {
        return None;
    }
    let c = b[1];
    let rest = &s[2..];
    let simple = |ch: char| Some((Decoded::Rune(ch), rest));
    match c {
        b'a' => simple('\x07'),
        b'b' => simple('\x08'),
        b'f' => simple('\x0c'),
        b'n' => simple('\n'),
        b'r' => simple('\r'),
        b't' => simple('\t'),
        b'v' => simple('\x0b'),
        b'x' | b'u' | b'U' => {
            let n = match c {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let digits = rest.get(..n)?;
            let v = u32::from_str_radix(digits, 16).ok()?;
            if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
                return None;
            }
            let tail = &rest[n..];
            if c == b'x' {
                return Some((if v < 0x80 { Decoded::Rune(v as u8 as char) } else { Decoded::Byte(v as u8) }, tail));
            }
            Some((Decoded::Rune(char::from_u32(v)?), tail))
        }
        b'0'..=b'7' => {
            let digits = s.get(1..4)?;
            if !digits.bytes().all(|d| (b'0'..=b'7').contains(&d)) {
                return None;
            }
            let v = u32::from_str_radix(digits, 8).ok()?;
            if v > 255 {
                return None;
            }
            Some((if v < 0x80 { Decoded::Rune(v as u8 as char) } else { Decoded::Byte(v as u8) }, &s[4..]))
        }
        b'\\' => simple('\\'),
        b'\'' | b'"' if c == quote => simple(c as char),
        _ => None,
    }
}

/// Whether underscores in a number literal only separate digits, as Go's syntax demands.
fn underscores_ok(digits: &str, prefixed: bool) -> bool {
    if !digits.contains('_') {
        return true;
    }
    let b = digits.as_bytes();
    // A base prefix may be followed directly by an underscore ("0x_1"); otherwise an underscore
    // must sit between two digits.
    let mut prev_digit = prefixed;
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            if !prev_digit || i + 1 == b.len() || b[i + 1] == b'_' {
                return false;
            }
            prev_digit = false;
        } else {
            prev_digit = c.is_ascii_hexdigit();
        }
    }
    true
}

/// Go's `strconv.ParseInt(text, 0, 64)` syntax: (negative, magnitude).
pub(crate) fn parse_go_int(text: &str) -> Option<(bool, u64)> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d, true)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d, true)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d, true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..], true)
    } else {
        (10, lower.as_str(), false)
    };
    if digits.is_empty() || !underscores_ok(digits, prefixed) {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() || clean.starts_with(['+', '-']) {
        return None;
    }
    u64::from_str_radix(&clean, radix).ok().map(|m| (negative, m))
}

/// Go's `strconv.ParseFloat(text, 64)` for Go literal syntax (underscores, hex floats).
pub(crate) fn parse_go_float(text: &str) -> Option<f64> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        if !underscores_ok(hex, true) {
            return None;
        }
        let hex: String = hex.chars().filter(|&c| c != '_').collect();
        let (mantissa, exp) = hex.split_once('p')?;
        let exp: i32 = exp.parse().ok()?;
        let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let mut m = 0f64;
        for c in int_part.chars().chain(frac_part.chars()) {
            m = m * 16.0 + f64::from(c.to_digit(16)?);
        }
        m * 2f64.powi(exp - 4 * frac_part.len() as i32)
    } else {
        if !lower.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-' | b'_')) {
            return None;
        }
        let mantissa_end = lower.find('e').unwrap_or(lower.len());
        if !underscores_ok(&lower[..mantissa_end].replace('.', "0"), false) || lower.starts_with('_') {
            return None;
        }
        let clean: String = lower.chars().filter(|&c| c != '_').collect();
        clean.parse::<f64>().ok()?
    };
    Some(if negative { -value } else { value })
}

/// A JSON string literal as Go's `encoding/json` writes it, appended to `out`: `<`, `>` and
/// `&` escaped when `html` (`json.Marshal`), kept otherwise (an `Encoder` with
/// `SetEscapeHTML(false)`, as sprig's `toRawJson`).
pub fn write_json_string(out: &mut String, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '<' | '>' | '&' if html => out.push_str(&format!("\\u{:04x}", c as u32)),
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if c < ' ' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
