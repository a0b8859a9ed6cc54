//! Sprig's string functions (sprig's strings.go with Masterminds/goutils and huandu/xstrings).

use rand::Rng;
use rand::seq::SliceRandom;

use super::{Registry, int_arg, is_go_space, string_list, string_map, strval, text};
use crate::error::FuncError;
use crate::strconv::quote;
use crate::template::fmt::sprint;
use crate::template::value::{Type, Value};

pub(super) fn register(r: &mut Registry) {
    use Type::{Any, Bool, String as S};
    let int = Type::INT;
    r.add("hello", &[], S, |_| Ok(Value::from("Hello!")));
    r.add("abbrev", &[int.clone(), S], S, |a| Ok(Value::from(abbrev(int_arg(&a[0]), text(&a[1])))));
    r.add("abbrevboth", &[int.clone(), int.clone(), S], S, |a| {
        let (left, right, s) = (int_arg(&a[0]), int_arg(&a[1]), text(&a[2]));
        if right < 4 || (left > 0 && right < 7) {
            return Ok(Value::from(s));
        }
        Ok(Value::from(abbreviate_full(s, left, right).unwrap_or_default()))
    });
    r.add("trunc", &[int.clone(), S], S, |a| trunc(int_arg(&a[0]), text(&a[1])).map(Value::from));
    r.add("trim", &[S], S, |a| Ok(Value::from(text(&a[0]).trim_matches(is_go_space))));
    r.add("upper", &[S], S, |a| Ok(Value::from(to_upper(text(&a[0])))));
    r.add("lower", &[S], S, |a| Ok(Value::from(to_lower(text(&a[0])))));
    r.add("title", &[S], S, |a| Ok(Value::from(title(text(&a[0])))));
    r.add("untitle", &[S], S, |a| Ok(Value::from(untitle(text(&a[0])))));
    r.add("substr", &[int.clone(), int.clone(), S], S, |a| {
        let (start, end, s) = (int_arg(&a[0]), int_arg(&a[1]), text(&a[2]));
        let len = s.len() as i64;
        if start < 0 {
            return go_slice(s, None, Some(end)).map(Value::from);
        }
        if end < 0 || end > len {
            return go_slice(s, Some(start), None).map(Value::from);
        }
        go_slice(s, Some(start), Some(end)).map(Value::from)
    });
    r.add("repeat", &[int.clone(), S], S, |a| {
        let count = usize::try_from(int_arg(&a[0])).map_err(|_| FuncError::new("strings: negative Repeat count"))?;
        Ok(Value::from(text(&a[1]).repeat(count)))
    });
    r.add("trimAll", &[S, S], S, |a| {
        let cutset = text(&a[0]);
        Ok(Value::from(text(&a[1]).trim_matches(|c| cutset.contains(c))))
    });
    r.alias("trimall", "trimAll");
    r.add("trimSuffix", &[S, S], S, |a| Ok(Value::from(text(&a[1]).strip_suffix(text(&a[0])).unwrap_or(text(&a[1])))));
    r.add("trimPrefix", &[S, S], S, |a| Ok(Value::from(text(&a[1]).strip_prefix(text(&a[0])).unwrap_or(text(&a[1])))));
    r.add("nospace", &[S], S, |a| Ok(Value::from(delete_white_space(text(&a[0])))));
    r.add("initials", &[S], S, |a| Ok(Value::from(initials(text(&a[0])))));
    r.add("randAlphaNum", &[Type::INT], S, |a| Ok(Value::from(random(int_arg(&a[0]), CharSet::AlphaNumeric))));
    r.add("randAlpha", &[Type::INT], S, |a| Ok(Value::from(random(int_arg(&a[0]), CharSet::Alpha))));
    r.add("randAscii", &[Type::INT], S, |a| Ok(Value::from(random(int_arg(&a[0]), CharSet::Ascii))));
    r.add("randNumeric", &[Type::INT], S, |a| Ok(Value::from(random(int_arg(&a[0]), CharSet::Numeric))));
    r.add("swapcase", &[S], S, |a| Ok(Value::from(swap_case(text(&a[0])))));
    r.add("shuffle", &[S], S, |a| {
        let mut runes: Vec<char> = text(&a[0]).chars().collect();
        runes.shuffle(&mut rand::rng());
        Ok(Value::from(runes.into_iter().collect::<String>()))
    });
    r.add("snakecase", &[S], S, |a| Ok(Value::from(camel_to_lower(text(&a[0]), '_'))));
    r.add("kebabcase", &[S], S, |a| Ok(Value::from(camel_to_lower(text(&a[0]), '-'))));
    r.add("camelcase", &[S], S, |a| Ok(Value::from(pascal_case(text(&a[0])))));
    r.add("wrap", &[int.clone(), S], S, |a| Ok(Value::from(wrap(text(&a[1]), int_arg(&a[0]), "\n", false))));
    r.add("wrapWith", &[int.clone(), S, S], S, |a| {
        let sep = if text(&a[1]).is_empty() { "\n" } else { text(&a[1]) };
        Ok(Value::from(wrap(text(&a[2]), int_arg(&a[0]), sep, true)))
    });
    r.add("contains", &[S, S], Bool, |a| Ok(Value::Bool(text(&a[1]).contains(text(&a[0])))));
    r.add("hasPrefix", &[S, S], Bool, |a| Ok(Value::Bool(text(&a[1]).starts_with(text(&a[0])))));
    r.add("hasSuffix", &[S, S], Bool, |a| Ok(Value::Bool(text(&a[1]).ends_with(text(&a[0])))));
    r.variadic("quote", &[], Any, S, |a| {
        let quoted: Vec<String> = a.iter().filter(|v| !v.is_nil()).map(|v| quote(&strval(v), false)).collect();
        Ok(Value::from(quoted.join(" ")))
    });
    r.variadic("squote", &[], Any, S, |a| {
        let quoted: Vec<String> =
            a.iter().filter(|v| !v.is_nil()).map(|v| format!("'{}'", sprint(std::slice::from_ref(v)))).collect();
        Ok(Value::from(quoted.join(" ")))
    });
    r.variadic("cat", &[], Any, S, |a| {
        let parts: Vec<String> = a.iter().filter(|v| !v.is_nil()).map(|v| sprint(std::slice::from_ref(v))).collect();
        Ok(Value::from(parts.join(" ")))
    });
    r.add("indent", &[int.clone(), S], S, |a| indent(int_arg(&a[0]), text(&a[1])).map(Value::from));
    r.add("nindent", &[int.clone(), S], S, |a| {
        indent(int_arg(&a[0]), text(&a[1])).map(|s| Value::from(format!("\n{s}")))
    });
    r.add("replace", &[S, S, S], S, |a| Ok(Value::from(text(&a[2]).replace(text(&a[0]), text(&a[1])))));
    r.add("plural", &[S, S, int.clone()], S, |a| Ok(a[if int_arg(&a[2]) == 1 { 0 } else { 1 }].clone()));
    r.add("toString", &[Any], S, |a| Ok(Value::from(strval(&a[0]))));
    r.add("split", &[S, S], Type::Map(Type::String.into()), |a| {
        let parts = go_split(text(&a[1]), text(&a[0]), -1);
        Ok(string_map(parts.into_iter().enumerate().map(|(i, p)| (format!("_{i}"), p))))
    });
    r.add("splitn", &[S, int.clone(), S], Type::Map(Type::String.into()), |a| {
        let parts = go_split(text(&a[2]), text(&a[0]), int_arg(&a[1]));
        Ok(string_map(parts.into_iter().enumerate().map(|(i, p)| (format!("_{i}"), p))))
    });
    r.add("splitList", &[S, S], Type::string_slice(), |a| Ok(string_list(go_split(text(&a[1]), text(&a[0]), -1))));
    r.add("toStrings", &[Any], Type::string_slice(), |a| Ok(string_list(strslice(&a[0]))));
    r.add("join", &[S, Any], S, |a| Ok(Value::from(strslice(&a[1]).join(text(&a[0])))));
    r.add("sortAlpha", &[Any], Type::string_slice(), |a| {
        let (list, _) = crate::template::value::indirect(&a[0]);
        if !matches!(list, Value::List(_)) {
            return Ok(string_list([strval(&a[0])]));
        }
        let mut items = strslice(&a[0]);
        items.sort();
        Ok(string_list(items))
    });
    r.add("fail", &[S], S, |a| Err(FuncError::new(text(&a[0]))));
}

/// Sprig's `strslice`: the items of a list as strings (nil items dropped), or the value itself.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    match crate::template::value::indirect(v).0 {
        Value::List(l) => l.items.iter().filter(|i| !i.is_nil()).map(strval).collect(),
        Value::Missing | Value::Nil => Vec::new(),
        _ => vec![strval(v)],
    }
}

/// Go's `s[lo:hi]` on bytes, with Go's runtime error when out of range.
fn go_slice(s: &str, lo: Option<i64>, hi: Option<i64>) -> Result<String, FuncError> {
    let len = s.len() as i64;
    let (l, h) = (lo.unwrap_or(0), hi.unwrap_or(len));
    if h < 0 || h > len {
        let lo_text = lo.map(|l| l.to_string()).unwrap_or_default();
        return Err(FuncError::new(format!(
            "runtime error: slice bounds out of range [{lo_text}:{h}] with length {len}"
        )));
    }
    if l < 0 || l > h {
        return Err(FuncError::new(format!("runtime error: slice bounds out of range [{l}:{h}]")));
    }
    Ok(String::from_utf8_lossy(&s.as_bytes()[l as usize..h as usize]).into_owned())
}

fn trunc(c: i64, s: &str) -> Result<String, FuncError> {
    let len = s.len() as i64;
    if c < 0 && len + c > 0 {
        return go_slice(s, Some(len + c), None);
    }
    if c >= 0 && len > c {
        return go_slice(s, None, Some(c));
    }
    Ok(s.to_string())
}

fn indent(spaces: i64, v: &str) -> Result<String, FuncError> {
    let count = usize::try_from(spaces).map_err(|_| FuncError::new("strings: negative Repeat count"))?;
    let pad = " ".repeat(count);
    Ok(format!("{pad}{}", v.replace('\n', &format!("\n{pad}"))))
}

/// Go's `strings.SplitN` (`n < 0`: all parts; `n == 0`: none; empty `sep`: one part per char).
pub(crate) fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if n < 0 || chars.len() as i64 <= n {
            return chars;
        }
        let mut parts: Vec<String> = chars[..n as usize - 1].to_vec();
        let used: usize = parts.iter().map(String::len).sum();
        parts.push(s[used..].to_string());
        return parts;
    }
    if n < 0 { s.split(sep).map(String::from).collect() } else { s.splitn(n as usize, sep).map(String::from).collect() }
}

/// Go's simple (one rune to one rune) case mappings, as `strings.ToUpper` applies them.
fn upper_rune(c: char) -> char {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

fn lower_rune(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

fn to_upper(s: &str) -> String {
    s.chars().map(upper_rune).collect()
}

fn to_lower(s: &str) -> String {
    s.chars().map(lower_rune).collect()
}

/// Go's `strings.Title`: upper-cases the first letter of each word.
fn title(s: &str) -> String {
    let is_separator = |c: char| {
        if c.is_ascii() {
            return !(c.is_ascii_alphanumeric() || c == '_');
        }
        if c.is_alphanumeric() {
            return false;
        }
        is_go_space(c)
    };
    let mut prev = ' ';
    s.chars()
        .map(|c| {
            let out = if is_separator(prev) { upper_rune(c) } else { c };
            prev = c;
            out
        })
        .collect()
}

/// goutils' `Uncapitalize`: lower-cases the first letter of each space-separated word.
fn untitle(s: &str) -> String {
    let mut next = true;
    s.chars()
        .map(|c| {
            if is_go_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                lower_rune(c)
            } else {
                c
            }
        })
        .collect()
}

/// goutils' `SwapCase`: upper to lower, lower to upper, a lower letter after a space to title.
fn swap_case(s: &str) -> String {
    let mut whitespace = true;
    s.chars()
        .map(|c| {
            if c.is_uppercase() {
                whitespace = false;
                lower_rune(c)
            } else if c.is_lowercase() {
                let out = upper_rune(c);
                whitespace = false;
                out
            } else {
                whitespace = is_go_space(c);
                c
            }
        })
        .collect()
}

/// goutils' byte-wise helpers treat each byte as a rune; they only differ from rune-wise
/// processing on non-ASCII text, where Go's output is what it is.
fn byte_runes(s: &str) -> impl Iterator<Item = char> + '_ {
    s.bytes().map(char::from)
}

/// goutils' `DeleteWhiteSpace`.
fn delete_white_space(s: &str) -> String {
    if !byte_runes(s).any(is_go_space) {
        return s.to_string();
    }
    byte_runes(s).filter(|&c| !is_go_space(c)).collect()
}

/// goutils' `Initials`.
fn initials(s: &str) -> String {
    let mut gap = true;
    let mut out = String::new();
    for c in byte_runes(s) {
        if is_go_space(c) {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    out
}

/// goutils' `AbbreviateFull` (byte offsets, as Go's).
fn abbreviate_full(s: &str, offset: i64, max_width: i64) -> Result<String, FuncError> {
    let b = s.as_bytes();
    let len = b.len() as i64;
    if s.is_empty() {
        return Ok(String::new());
    }
    if max_width < 4 {
        return Err(FuncError::new("stringutils illegal argument: Minimum abbreviation width is 4"));
    }
    if len <= max_width {
        return Ok(s.to_string());
    }
    let mut offset = offset.min(len);
    if len - offset < max_width - 3 {
        offset = len - (max_width - 3);
    }
    let lossy = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    if offset <= 4 {
        return Ok(format!("{}...", lossy(&b[..(max_width - 3) as usize])));
    }
    if max_width < 7 {
        return Err(FuncError::new("stringutils illegal argument: Minimum abbreviation width with offset is 7"));
    }
    if offset + max_width - 3 < len {
        let rest = lossy(&b[offset as usize..]);
        return Ok(format!("...{}", abbreviate_full(&rest, 0, max_width - 3)?));
    }
    Ok(format!("...{}", lossy(&b[(len - (max_width - 3)) as usize..])))
}

fn abbrev(width: i64, s: &str) -> String {
    if width < 4 {
        return s.to_string();
    }
    abbreviate_full(s, 0, width).unwrap_or_default()
}

/// goutils' `WrapCustom` (byte offsets, as Go's).
fn wrap(s: &str, width: i64, newline: &str, wrap_long_words: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let width = width.max(1) as usize;
    let b = s.as_bytes();
    let len = b.len();
    let mut offset = 0;
    let mut out: Vec<u8> = Vec::with_capacity(len + len / width);
    while len - offset > width {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (width + offset + 1).min(len);
        match b[offset..end].iter().rposition(|&c| c == b' ') {
            Some(space) => {
                out.extend_from_slice(&b[offset..offset + space]);
                out.extend_from_slice(newline.as_bytes());
                offset += space + 1;
            }
            None if wrap_long_words => {
                out.extend_from_slice(&b[offset..width + offset]);
                out.extend_from_slice(newline.as_bytes());
                offset += width;
            }
            None => {
                let end = width + offset;
                match b[end..].iter().position(|&c| c == b' ') {
                    None => {
                        out.extend_from_slice(&b[offset..]);
                        offset = len;
                    }
                    Some(i) => {
                        out.extend_from_slice(&b[offset..end + i]);
                        out.extend_from_slice(newline.as_bytes());
                        offset = end + i + 1;
                    }
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    String::from_utf8_lossy(&out).into_owned()
}

enum CharSet {
    AlphaNumeric,
    Alpha,
    Ascii,
    Numeric,
}

/// goutils' `CryptoRandom*`: `count` random characters; negative counts give "".
fn random(count: i64, set: CharSet) -> String {
    let Ok(count) = usize::try_from(count) else {
        return String::new();
    };
    let alphabet: Vec<char> = match set {
        CharSet::AlphaNumeric => ('a'..='z').chain('A'..='Z').chain('0'..='9').collect(),
        CharSet::Alpha => ('a'..='z').chain('A'..='Z').collect(),
        CharSet::Ascii => (' '..='~').collect(),
        CharSet::Numeric => ('0'..='9').collect(),
    };
    let mut rng = rand::rng();
    (0..count).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect()
}

// xstrings' case conversion.

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || is_go_space(c)
}

/// Go's `unicode.IsPunct` (category P), closely enough.
fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        return matches!(
            c,
            '!' | '"'
                | '#'
                | '%'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | ','
                | '-'
                | '.'
                | '/'
                | ':'
                | ';'
                | '?'
                | '@'
                | '['
                | '\\'
                | ']'
                | '_'
                | '{'
                | '}'
        );
    }
    matches!(c as u32, 0xA1 | 0xA7 | 0xAB | 0xB6 | 0xB7 | 0xBB | 0xBF | 0x2010..=0x2027 | 0x2030..=0x205E | 0x3001..=0x3003 | 0x3008..=0x3011 | 0xFF01..=0xFF0F)
}

/// xstrings' `isAlphabet`: letters, but not CJK ideographs.
fn is_alphabet(c: char) -> bool {
    if !c.is_alphabetic() {
        return false;
    }
    !matches!(c as u32, 0x4E00..=0x9FCC | 0x3400..=0x4D85 | 0x20000..=0x2B81D)
}

#[derive(Clone, Copy, PartialEq)]
enum Word {
    Invalid,
    Number,
    UpperCase,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings' `nextWord`: the kind and text of the next word, and the rest.
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut chars = s.char_indices().peekable();
    let Some((_, first)) = chars.next() else {
        return (Word::Invalid, "", "");
    };
    let split = |end: usize| (&s[..end], &s[end..]);
    let run_while = |start: usize, pred: &dyn Fn(char) -> bool| -> usize {
        s[start..].char_indices().find(|&(_, c)| !pred(c)).map_or(s.len(), |(i, _)| start + i)
    };
    let after_first = first.len_utf8();
    let (kind, end) = if is_connector(first) {
        (Word::Connector, run_while(after_first, &is_connector))
    } else if is_punct(first) {
        (Word::Punct, run_while(after_first, &is_punct))
    } else if first.is_uppercase() {
        match s[after_first..].chars().next() {
            None => (Word::UpperCase, after_first),
            Some(c) if c.is_uppercase() => {
                // A run of capitals; the last one starts the next word if a letter follows.
                let end = run_while(after_first, &|c: char| c.is_uppercase());
                let last_len = s[..end].chars().next_back().map_or(0, char::len_utf8);
                match s[end..].chars().next() {
                    Some(next) if is_alphabet(next) => (Word::UpperCase, end - last_len),
                    _ => (Word::UpperCase, end),
                }
            }
            Some(c) if is_alphabet(c) => {
                (Word::UpperCase, run_while(after_first, &|c: char| is_alphabet(c) && !c.is_uppercase()))
            }
            Some(_) => (Word::UpperCase, after_first),
        }
    } else if is_alphabet(first) {
        (Word::Alphabet, run_while(after_first, &|c: char| is_alphabet(c) && !c.is_uppercase()))
    } else if first.is_numeric() {
        (Word::Number, run_while(after_first, &char::is_numeric))
    } else {
        let end =
            run_while(after_first, &|c: char| !(is_connector(c) || is_alphabet(c) || c.is_numeric() || is_punct(c)));
        (Word::Other, end)
    };
    let (word, rest) = split(end);
    (kind, word, rest)
}

fn push_lower(out: &mut String, kind: Word, word: &str, connector: char) {
    if kind != Word::UpperCase && kind != Word::Connector {
        out.push_str(word);
        return;
    }
    for c in word.chars() {
        if is_connector(c) {
            out.push(connector);
        } else if c.is_uppercase() {
            out.push(lower_rune(c));
        } else {
            out.push(c);
        }
    }
}

/// xstrings' `camelCaseToLowerCase`, behind `snakecase` and `kebabcase`.
fn camel_to_lower(s: &str, connector: char) -> String {
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(s.len() + 4);
    let (mut wt, mut word, mut remaining) = next_word(s);
    while !remaining.is_empty() {
        if wt != Word::Connector {
            push_lower(&mut out, wt, word, connector);
        }
        let prev = wt;
        let last = word;
        (wt, word, remaining) = next_word(remaining);
        match prev {
            Word::Number => {
                while wt == Word::Alphabet || wt == Word::Number {
                    push_lower(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Punct && wt != Word::Connector {
                    out.push(connector);
                }
            }
            Word::Connector => push_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                if remaining.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, remaining) = next_word(remaining);
                if wt != Word::Alphabet {
                    push_lower(&mut out, Word::Number, last, connector);
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                out.push(connector);
                push_lower(&mut out, Word::Number, last, connector);
                while wt == Word::Alphabet || wt == Word::Number {
                    push_lower(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Connector && wt != Word::Punct {
                    out.push(connector);
                }
            }
        }
    }
    push_lower(&mut out, wt, word, connector);
    out
}

/// xstrings' upper camel case (`ToPascalCase`, sprig's `camelcase`): connectors removed, the
/// letter after one upper-cased; leading and doubled connectors kept.
fn pascal_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut r0 = None;
    for c in chars.by_ref() {
        if !is_connector(c) {
            r0 = Some(upper_rune(c));
            break;
        }
        out.push(c);
    }
    let Some(mut r0) = r0 else {
        return out;
    };
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            r0 = upper_rune(r0);
        } else {
            out.push(r1);
        }
    }
    out.push(r0);
    out
}
