//! Sprig's encodings and text processing: JSON (as Go's `encoding/json` writes it), base64 and
//! base32, hashes, UUIDs, regular expressions, paths, URLs; and the defaults and reflection
//! helpers (`default`, `empty`, `ternary`, `typeOf`, …).

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore;
use sha1::Digest;

use super::{Registry, empty, int_arg, string_list, text};
use crate::error::FuncError;
use crate::strconv::format_float;
use crate::template::value::{Type, Value};

pub(super) fn register(r: &mut Registry) {
    use Type::{Any, Bool, String as S};
    // JSON.
    r.add("toJson", &[Any], S, |a| Ok(Value::from(to_json(&a[0], true, false).unwrap_or_default())));
    r.add("mustToJson", &[Any], S, |a| to_json(&a[0], true, false).map(Value::from));
    r.add("toPrettyJson", &[Any], S, |a| Ok(Value::from(to_json(&a[0], true, true).unwrap_or_default())));
    r.add("mustToPrettyJson", &[Any], S, |a| to_json(&a[0], true, true).map(Value::from));
    r.add("toRawJson", &[Any], S, |a| to_json(&a[0], false, false).map(Value::from));
    r.add("mustToRawJson", &[Any], S, |a| to_json(&a[0], false, false).map(Value::from));
    r.add("fromJson", &[S], Any, |a| Ok(from_json(text(&a[0])).unwrap_or(Value::Nil)));
    r.add("mustFromJson", &[S], Any, |a| from_json(text(&a[0])));
    // Encodings and hashes.
    r.add("b64enc", &[S], S, |a| Ok(Value::from(STANDARD.encode(text(&a[0])))));
    r.add("b64dec", &[S], S, |a| {
        Ok(Value::from(match STANDARD.decode(text(&a[0])) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => format!("illegal base64 data at input byte {}", base64_error_offset(&e, text(&a[0]))),
        }))
    });
    r.add("b32enc", &[S], S, |a| Ok(Value::from(base32_encode(text(&a[0]).as_bytes()))));
    r.add("b32dec", &[S], S, |a| {
        Ok(Value::from(match base32_decode(text(&a[0])) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(offset) => format!("illegal base32 data at input byte {offset}"),
        }))
    });
    r.add("sha1sum", &[S], S, |a| Ok(Value::from(hex(&sha1::Sha1::digest(text(&a[0]).as_bytes())))));
    r.add("sha256sum", &[S], S, |a| Ok(Value::from(hex(&sha2::Sha256::digest(text(&a[0]).as_bytes())))));
    r.add("sha512sum", &[S], S, |a| Ok(Value::from(hex(&sha2::Sha512::digest(text(&a[0]).as_bytes())))));
    r.add("adler32sum", &[S], S, |a| Ok(Value::from(adler32(text(&a[0]).as_bytes()).to_string())));
    r.add("uuidv4", &[], S, |_| Ok(Value::from(uuid::Uuid::new_v4().to_string())));
    r.add("randBytes", &[Type::INT], S, |a| {
        let count = usize::try_from(int_arg(&a[0]))
            .map_err(|_| FuncError::new("runtime error: makeslice: len out of range"))?;
        let mut bytes = vec![0u8; count];
        rand::rng().fill_bytes(&mut bytes);
        Ok(Value::from(STANDARD.encode(bytes)))
    });
    // Regular expressions (Go's RE2 syntax, which the regex crate shares).
    r.add("regexMatch", &[S, S], Bool, |a| Ok(Value::Bool(regex(&a[0]).is_ok_and(|re| re.is_match(text(&a[1]))))));
    r.add("mustRegexMatch", &[S, S], Bool, |a| Ok(Value::Bool(regex(&a[0])?.is_match(text(&a[1])))));
    for (name, must) in [("regexFindAll", false), ("mustRegexFindAll", true)] {
        r.add(name, &[S, S, Type::INT], Type::string_slice(), move |a| {
            let re = compile(&a[0], must)?;
            let n = int_arg(&a[2]);
            let limit = if n < 0 { usize::MAX } else { n as usize };
            Ok(string_list(re.find_iter(text(&a[1])).take(limit).map(|m| m.as_str().to_string())))
        });
    }
    for (name, must) in [("regexFind", false), ("mustRegexFind", true)] {
        r.add(name, &[S, S], S, move |a| {
            Ok(Value::from(compile(&a[0], must)?.find(text(&a[1])).map_or("", |m| m.as_str())))
        });
    }
    for (name, must) in [("regexReplaceAll", false), ("mustRegexReplaceAll", true)] {
        r.add(name, &[S, S, S], S, move |a| {
            Ok(Value::from(compile(&a[0], must)?.replace_all(text(&a[1]), text(&a[2])).into_owned()))
        });
    }
    for (name, must) in [("regexReplaceAllLiteral", false), ("mustRegexReplaceAllLiteral", true)] {
        r.add(name, &[S, S, S], S, move |a| {
            Ok(Value::from(compile(&a[0], must)?.replace_all(text(&a[1]), regex::NoExpand(text(&a[2]))).into_owned()))
        });
    }
    for (name, must) in [("regexSplit", false), ("mustRegexSplit", true)] {
        r.add(name, &[S, S, Type::INT], Type::string_slice(), move |a| {
            Ok(string_list(regex_split(&compile(&a[0], must)?, text(&a[0]), text(&a[1]), int_arg(&a[2]))))
        });
    }
    r.add("regexQuoteMeta", &[S], S, |a| {
        let mut out = String::new();
        for c in text(&a[0]).chars() {
            if r"\.+*?()|[]{}^$".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        Ok(Value::from(out))
    });
    // Paths (slash-separated, as Go's path; filepath is the same on Linux).
    for (go, os) in [("base", "osBase"), ("dir", "osDir"), ("clean", "osClean"), ("ext", "osExt")] {
        let f: fn(&str) -> String = match go {
            "base" => path_base,
            "dir" => path_dir,
            "clean" => path_clean,
            _ => path_ext,
        };
        r.add(go, &[S], S, move |a| Ok(Value::from(f(text(&a[0])))));
        r.alias(os, go);
    }
    r.add("isAbs", &[S], Bool, |a| Ok(Value::Bool(text(&a[0]).starts_with('/'))));
    r.alias("osIsAbs", "isAbs");
    // URLs.
    r.add("urlParse", &[S], Type::any_map(), |a| url_parse(text(&a[0])));
    r.add("urlJoin", &[Type::any_map()], S, |a| url_join(&a[0]).map(Value::from));
    // Defaults and flow.
    r.variadic("default", &[Any], Any, Any, |a| {
        Ok(if a.len() < 2 || empty(&a[1]) { a[0].clone() } else { a[1].clone() })
    });
    r.add("empty", &[Any], Bool, |a| Ok(Value::Bool(empty(&a[0]))));
    r.variadic("coalesce", &[], Any, Any, |a| Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil)));
    r.variadic("all", &[], Any, Bool, |a| Ok(Value::Bool(a.iter().all(|v| !empty(v)))));
    r.variadic("any", &[], Any, Bool, |a| Ok(Value::Bool(a.iter().any(|v| !empty(v)))));
    r.add("ternary", &[Any, Any, Bool], Any, |a| Ok(if a[2].truth() { a[0].clone() } else { a[1].clone() }));
    // Reflection.
    r.add("typeOf", &[Any], S, |a| Ok(Value::from(a[0].type_name())));
    r.add("typeIs", &[S, Any], Bool, |a| Ok(Value::Bool(text(&a[0]) == a[1].type_name())));
    r.add("typeIsLike", &[S, Any], Bool, |a| {
        let t = a[1].type_name();
        Ok(Value::Bool(text(&a[0]) == t || format!("*{}", text(&a[0])) == t))
    });
    r.add("kindOf", &[Any], S, |a| Ok(Value::from(a[0].kind_name())));
    r.add("kindIs", &[S, Any], Bool, |a| Ok(Value::Bool(text(&a[0]) == a[1].kind_name())));
    r.add("deepEqual", &[Any, Any], Bool, |a| Ok(Value::Bool(a[0] == a[1])));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in data {
        a = (a + u32::from(byte)) % MOD;
        b = (b + a) % MOD;
    }
    (b << 16) | a
}

fn base64_error_offset(e: &base64::DecodeError, input: &str) -> usize {
    match e {
        base64::DecodeError::InvalidByte(offset, _) | base64::DecodeError::InvalidLastSymbol(offset, _) => *offset,
        base64::DecodeError::InvalidLength(len) => len - len % 4,
        base64::DecodeError::InvalidPadding => input.find('=').unwrap_or(input.len()),
    }
}

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn base32_encode(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(BASE32[((bits >> (35 - 5 * i)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// RFC 4648 base32 with padding; the error is the offset of the first bad byte.
fn base32_decode(s: &str) -> Result<Vec<u8>, usize> {
    let bytes = s.as_bytes();
    if !bytes.len().is_multiple_of(8) {
        return Err(bytes.len() - bytes.len() % 8);
    }
    let mut out = Vec::new();
    for (q, quantum) in bytes.chunks(8).enumerate() {
        let mut bits = 0u64;
        let mut n = 0;
        for (i, &c) in quantum.iter().enumerate() {
            if c == b'=' {
                if quantum[i..].iter().any(|&p| p != b'=') || q + 1 != bytes.len() / 8 {
                    return Err(q * 8 + i);
                }
                break;
            }
            let v = BASE32.iter().position(|&b| b == c).ok_or(q * 8 + i)?;
            bits = (bits << 5) | v as u64;
            n += 1;
        }
        bits <<= 5 * (8 - n);
        let len = match n {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => return Err(q * 8 + n),
        };
        out.extend((0..len).map(|i| (bits >> (32 - 8 * i)) as u8));
    }
    Ok(out)
}

// JSON as Go's encoding/json writes it.

/// Go's `json.Marshal` (`html`: escape `<`, `>`, `&`), `json.MarshalIndent(v, "", "  ")` when
/// `pretty`.
pub(crate) fn to_json(v: &Value, html: bool, pretty: bool) -> Result<String, FuncError> {
    let mut out = String::new();
    write_json(&mut out, v, html, pretty.then_some(0))?;
    Ok(out)
}

fn newline(out: &mut String, depth: Option<usize>) {
    if let Some(d) = depth {
        out.push('\n');
        out.push_str(&"  ".repeat(d));
    }
}

fn write_json(out: &mut String, v: &Value, html: bool, depth: Option<usize>) -> Result<(), FuncError> {
    let inner = depth.map(|d| d + 1);
    match v {
        Value::Missing | Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i, _) => out.push_str(&i.to_string()),
        Value::Uint(u, _) => out.push_str(&u.to_string()),
        Value::Float(f) => out.push_str(&json_float(*f)?),
        Value::String(s) => crate::write_json_string(out, s, html),
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, inner);
                write_json(out, item, html, inner)?;
            }
            if !l.items.is_empty() {
                newline(out, depth);
            }
            out.push(']');
        }
        Value::Map(m) => {
            let entries = m.snapshot();
            out.push('{');
            for (i, (k, item)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, inner);
                crate::write_json_string(out, k, html);
                out.push(':');
                if depth.is_some() {
                    out.push(' ');
                }
                write_json(out, item, html, inner)?;
            }
            if !entries.is_empty() {
                newline(out, depth);
            }
            out.push('}');
        }
        Value::Object(o) => {
            let json = o.to_json()?;
            write_json(
                out,
                &Value::from_json(&json, crate::template::value::JsonNumbers::Int64WhenIntegral),
                html,
                depth,
            )?;
        }
        Value::Complex(..) | Value::Func(_) => {
            return Err(FuncError::new(format!("json: unsupported type: {}", v.type_name())));
        }
    }
    Ok(())
}

/// Go's float encoding: `%f`-like between 1e-6 and 1e21, else exponent form without padding.
fn json_float(f: f64) -> Result<String, FuncError> {
    if !f.is_finite() {
        return Err(FuncError::new(format!("json: unsupported value: {}", format_float(f, 'g', -1))));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format_float(f, 'e', -1);
        // e-07 → e-7, e+21 → e+21.
        return Ok(match s.rsplit_once("e-0") {
            Some((m, d)) if d.len() == 1 => format!("{m}e-{d}"),
            _ => s,
        });
    }
    Ok(format_float(f, 'f', -1))
}

/// Go's `json.Unmarshal` into `interface{}`: numbers are `float64`.
fn from_json(s: &str) -> Result<Value, FuncError> {
    let json: serde_json::Value = serde_json::from_str(s).map_err(|e| {
        FuncError::new(if e.is_eof() {
            "unexpected end of JSON input".to_string()
        } else {
            format!("invalid JSON: {e}")
        })
    })?;
    Ok(Value::from_json(&json, crate::template::value::JsonNumbers::Float64))
}

// Regular expressions.

fn regex(pattern: &Value) -> Result<regex::Regex, FuncError> {
    regex::Regex::new(text(pattern)).map_err(|e| FuncError::new(format!("error parsing regexp: {e}")))
}

/// Compiles a pattern; sprig's non-`must` forms panic (`regexp: Compile(…)`) on a bad one.
fn compile(pattern: &Value, must: bool) -> Result<regex::Regex, FuncError> {
    regex(pattern)
        .map_err(|e| if must { e } else { FuncError::new(format!("regexp: Compile(`{}`): {e}", text(pattern))) })
}

/// Go's `Regexp.Split`.
fn regex_split(re: &regex::Regex, pattern: &str, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !pattern.is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let limit = if n < 0 { usize::MAX } else { n as usize };
    let mut parts = Vec::new();
    let (mut beg, mut end) = (0, 0);
    for m in re.find_iter(s).take(limit) {
        if n > 0 && parts.len() as i64 == n - 1 {
            break;
        }
        end = m.start();
        if m.end() != 0 {
            parts.push(s[beg..end].to_string());
        }
        beg = m.end();
    }
    if end != s.len() {
        parts.push(s[beg..].to_string());
    }
    parts
}

// Paths, as Go's package path.

/// Go's `path.Clean`.
pub(crate) fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

fn path_dir(p: &str) -> String {
    let dir = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    path_clean(dir)
}

fn path_ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        match c {
            '/' => break,
            '.' => return p[i..].to_string(),
            _ => {}
        }
    }
    String::new()
}

// URLs, as Go's net/url parses and prints them.

fn unescape(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
            let Some(hex) = hex else {
                let end = (i + 3).min(s.len());
                return Err(format!("invalid URL escape {}", crate::strconv::quote(&s[i..end], false)));
            };
            out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `shouldEscape` for paths and fragments, closely enough.
fn escape(s: &str, fragment: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~' | b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'@')
            || (fragment && matches!(b, b'!' | b'(' | b')' | b'*' | b'?' | b'\''));
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn url_parse(raw: &str) -> Result<Value, FuncError> {
    let fail =
        |e: String| FuncError::new(format!("unable to parse url: parse {}: {e}", crate::strconv::quote(raw, false)));
    let (rest, fragment) = match raw.split_once('#') {
        Some((r, f)) => (r, unescape(f).map_err(fail)?),
        None => (raw, String::new()),
    };
    let mut scheme = String::new();
    let mut rest = rest;
    if let Some(colon) = rest.find(':') {
        let candidate = &rest[..colon];
        let valid = candidate.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && candidate.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if colon == 0 {
            return Err(fail("missing protocol scheme".into()));
        }
        if valid {
            scheme = candidate.to_ascii_lowercase();
            rest = &rest[colon + 1..];
        }
    }
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, q.to_string()),
        None => (rest, String::new()),
    };
    let mut entries = BTreeMap::new();
    let (mut host, mut userinfo, mut path, mut opaque) = (String::new(), String::new(), String::new(), String::new());
    if !rest.starts_with('/') && !scheme.is_empty() {
        opaque = rest.to_string();
    } else {
        let mut rest = rest;
        if rest.starts_with("//") && (!scheme.is_empty() || !rest.starts_with("///")) {
            let authority_end = rest[2..].find('/').map_or(rest.len(), |i| i + 2);
            let authority = &rest[2..authority_end];
            rest = &rest[authority_end..];
            match authority.rsplit_once('@') {
                Some((user, h)) => {
                    userinfo = user.to_string();
                    host = unescape(h).map_err(fail)?;
                }
                None => host = unescape(authority).map_err(fail)?,
            }
        }
        path = unescape(rest).map_err(fail)?;
    }
    let hostname = if let Some(stripped) = host.strip_prefix('[') {
        stripped.split(']').next().unwrap_or_default().to_string()
    } else {
        host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h).to_string()
    };
    for (key, value) in [
        ("scheme", scheme),
        ("host", host),
        ("hostname", hostname),
        ("path", path),
        ("query", query),
        ("opaque", opaque),
        ("fragment", fragment),
        ("userinfo", userinfo),
    ] {
        entries.insert(key.to_string(), Value::from(value));
    }
    Ok(Value::map(entries))
}

fn url_join(dict: &Value) -> Result<String, FuncError> {
    let Value::Map(m) = dict else { return Ok(String::new()) };
    let get = |key: &str| -> Result<String, FuncError> {
        match m.get(key) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.to_string()),
            Some(Value::Missing | Value::Nil) => Err(super::nil_dereference()),
            Some(other) => Err(FuncError::new(format!(
                "unable to parse {key} key, must be of type string, but {} found",
                other.kind_name()
            ))),
        }
    };
    let (scheme, host, path, query, opaque, fragment, userinfo) =
        (get("scheme")?, get("host")?, get("path")?, get("query")?, get("opaque")?, get("fragment")?, get("userinfo")?);
    let mut out = String::new();
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        if !scheme.is_empty() || !host.is_empty() || !userinfo.is_empty() {
            if !host.is_empty() || !path.is_empty() || !userinfo.is_empty() {
                out.push_str("//");
            }
            if !userinfo.is_empty() {
                out.push_str(&userinfo);
                out.push('@');
            }
            out.push_str(&host);
        }
        if !path.is_empty() && !path.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        out.push_str(&escape(&path, false));
    }
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&escape(&fragment, true));
    }
    Ok(out)
}
