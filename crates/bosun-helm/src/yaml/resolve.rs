//! go-yaml v2's resolution of an untagged plain scalar to a null, bool, int, float, timestamp
//! or string (YAML 1.1 booleans such as `yes`/`off`, `0777` octal, `_` digit separators). The
//! reader uses it to type values; the writer uses it to decide which strings need quotes.

/// What go-yaml v2 makes of a plain scalar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    /// Also `.inf`, `-.inf` and `.nan`, which JSON cannot hold.
    Float(f64),
    /// An integer beyond 64 bits (go-yaml keeps a `big.Int`; JSON turns it into a float).
    BigInt(f64),
    /// A date or date-time: kept as its text when read into an untyped value.
    Timestamp,
    Str,
}

fn keyword(text: &str) -> Option<Resolved> {
    Some(match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Resolved::Bool(true),
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Resolved::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// Go's `strconv.ParseInt(s, 0, 64)` syntax: an optional sign, then `0x`, `0o`, `0b` or a
/// leading `0` (octal) selecting the base. `None` when the text is not an integer; otherwise
/// whether it is negative, the radix and the digits.
fn integer_syntax(text: &str) -> Option<(bool, u32, String)> {
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = unsigned.to_ascii_lowercase();
    let (radix, digits) = if let Some(rest) = lower.strip_prefix("0x") {
        (16, rest)
    } else if let Some(rest) = lower.strip_prefix("0o") {
        (8, rest)
    } else if let Some(rest) = lower.strip_prefix("0b") {
        (2, rest)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    (!digits.is_empty() && digits.chars().all(|c| c.is_digit(radix))).then(|| (negative, radix, digits.to_string()))
}

/// go-yaml's test for a float written the YAML way (`1.5`, `.5`, `1e3`, `-2.`).
fn is_yaml_style_float(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit()),
        Some((whole, fraction)) => {
            !whole.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit())
                && fraction.bytes().all(|b| b.is_ascii_digit())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}

/// go-yaml's `parseTimestamp`: `2006-1-2`, `2006-1-2T15:4:5.999999999Z07:00` (also with a
/// lower-case `t`), `2006-1-2 15:4:5.999999999`.
pub(crate) fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    if bytes.len() < 5 || !bytes[..4].iter().all(u8::is_ascii_digit) || bytes[4] != b'-' {
        return false;
    }
    let (date, time) = match text.find(['T', 't', ' ']) {
        Some(at) => (&text[..at], Some((text.as_bytes()[at], &text[at + 1..]))),
        None => (text, None),
    };
    let date_ok = {
        let parts: Vec<&str> = date.split('-').collect();
        parts.len() == 3
            && parts[0].len() == 4
            && in_range(parts[1], 1, 12)
            && in_range(parts[2], 1, days_in_month(parts[0], parts[1]))
    };
    date_ok
        && match time {
            None => true,
            Some((b' ', clock)) => is_clock(clock) && !clock.ends_with(['Z', 'z']),
            Some((_, clock)) => clock_with_zone(clock),
        }
}

fn in_range(text: &str, low: u32, high: u32) -> bool {
    (1..=2).contains(&text.len()) && text.parse::<u32>().is_ok_and(|n| (low..=high).contains(&n))
}

fn days_in_month(year: &str, month: &str) -> u32 {
    let year: u32 = year.parse().unwrap_or(0);
    match month.parse::<u32>().unwrap_or(0) {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `15:4:5` with an optional fraction of up to nine digits.
fn is_clock(clock: &str) -> bool {
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, fraction)) => (hms, Some(fraction)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    parts.len() == 3
        && in_range(parts[0], 0, 23)
        && in_range(parts[1], 0, 59)
        && in_range(parts[2], 0, 59)
        && fraction.is_none_or(|f| (1..=9).contains(&f.len()) && f.bytes().all(|b| b.is_ascii_digit()))
}

/// A clock followed by `Z` or a `±07:00` offset, as Go's `Z07:00` layout requires.
fn clock_with_zone(text: &str) -> bool {
    if let Some(clock) = text.strip_suffix('Z') {
        return is_clock(clock);
    }
    match text.rfind(['+', '-']) {
        Some(at) => {
            let zone = &text[at + 1..];
            let zone_ok = zone.len() == 5
                && zone.as_bytes()[2] == b':'
                && in_range(&zone[..2], 0, 23)
                && zone[3..].parse::<u32>().is_ok_and(|m| m < 60);
            zone_ok && is_clock(&text[..at])
        }
        None => false,
    }
}

/// What an untagged plain scalar is, by go-yaml v2's rules.
pub(crate) fn resolve_plain(text: &str) -> Resolved {
    if let Some(resolved) = keyword(text) {
        return resolved;
    }
    match text.as_bytes().first() {
        Some(b'.') => match text.parse::<f64>() {
            // Rust reads "inf" and "nan" spellings Go's ParseFloat would not see here: a
            // leading dot rules them out.
            Ok(f) if f.is_finite() => Resolved::Float(f),
            _ => Resolved::Str,
        },
        Some(b'0'..=b'9' | b'+' | b'-') => resolve_number(text),
        _ => Resolved::Str,
    }
}

fn resolve_number(text: &str) -> Resolved {
    if is_timestamp(text) {
        return Resolved::Timestamp;
    }
    let plain = text.replace('_', "");
    let integer = integer_syntax(&plain);
    if let Some((negative, radix, digits)) = &integer
        && let Ok(magnitude) = u64::from_str_radix(digits, *radix)
    {
        let signed = if *negative { -i128::from(magnitude) } else { i128::from(magnitude) };
        if let Ok(i) = i64::try_from(signed) {
            return Resolved::Int(i);
        }
        if !*negative {
            return Resolved::Uint(magnitude);
        }
    }
    if is_yaml_style_float(&plain) {
        return match plain.parse::<f64>() {
            Ok(f) if f.is_finite() => Resolved::Float(f),
            _ => Resolved::Str,
        };
    }
    // Beyond 64 bits, digits in any base still make an integer (a big.Int in go-yaml, a float
    // after the JSON step).
    match integer {
        Some((negative, radix, digits)) => {
            let magnitude =
                digits.chars().fold(0f64, |acc, c| acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0)));
            Resolved::BigInt(if negative { -magnitude } else { magnitude })
        }
        None => Resolved::Str,
    }
}

/// go-yaml's `isBase60Float`: strings like `1:20` that YAML 1.1 readers take for numbers, so
/// the writer quotes them.
pub(crate) fn is_base60_float(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    if !unsigned.starts_with(|c: char| c.is_ascii_digit()) || !unsigned.contains(':') {
        return false;
    }
    let (sexagesimal, fraction) = match unsigned.split_once('.') {
        Some((head, fraction)) => (head, Some(fraction)),
        None => (unsigned, None),
    };
    let mut parts = sexagesimal.split(':');
    let first = parts.next().unwrap_or_default();
    let first_ok = first.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    let rest_ok = parts.all(|part| {
        (1..=2).contains(&part.len())
            && part.bytes().all(|b| b.is_ascii_digit())
            && (part.len() == 1 || part.as_bytes()[0] <= b'5')
    });
    first_ok && rest_ok && fraction.is_none_or(|f| f.bytes().all(|b| b.is_ascii_digit() || b == b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_scalars_resolve_as_go_yaml_v2() {
        let cases: &[(&str, Resolved)] = &[
            ("", Resolved::Null),
            ("~", Resolved::Null),
            ("NULL", Resolved::Null),
            ("yes", Resolved::Bool(true)),
            ("Off", Resolved::Bool(false)),
            ("y", Resolved::Bool(true)),
            ("nO", Resolved::Str),
            ("1", Resolved::Int(1)),
            ("+12", Resolved::Int(12)),
            ("-0x1A", Resolved::Int(-26)),
            ("0777", Resolved::Int(511)),
            ("0o17", Resolved::Int(15)),
            ("0b101", Resolved::Int(5)),
            ("1_000", Resolved::Int(1000)),
            ("08", Resolved::Float(8.0)),
            ("9223372036854775808", Resolved::Uint(9_223_372_036_854_775_808)),
            ("18446744073709551616", Resolved::Float(18_446_744_073_709_551_616.0)),
            ("0x10000000000000000", Resolved::BigInt(18_446_744_073_709_551_616.0)),
            ("-9223372036854775809", Resolved::Float(-9_223_372_036_854_775_809.0)),
            ("1.5", Resolved::Float(1.5)),
            (".5", Resolved::Float(0.5)),
            ("1e3", Resolved::Float(1000.0)),
            ("-2.", Resolved::Float(-2.0)),
            ("1e400", Resolved::Str),
            ("1.2.3", Resolved::Str),
            ("2001-12-14", Resolved::Timestamp),
            ("2001-12-14T21:59:43.10Z", Resolved::Timestamp),
            ("2001-12-14t21:59:43+05:00", Resolved::Timestamp),
            ("2001-12-14 21:59:43.10", Resolved::Timestamp),
            ("2001-12-14 21:59:43.10 -5", Resolved::Str),
            ("2001-13-14", Resolved::Str),
            ("2001-02-29", Resolved::Str),
            ("v1", Resolved::Str),
            ("-", Resolved::Str),
            ("0x", Resolved::Str),
        ];
        for (text, want) in cases {
            let got = resolve_plain(text);
            match (&got, want) {
                (Resolved::Float(a), Resolved::Float(b)) if a.is_nan() && b.is_nan() => {}
                _ => assert_eq!(&got, want, "{text:?}"),
            }
        }
        assert!(matches!(resolve_plain(".nan"), Resolved::Float(f) if f.is_nan()));
        assert_eq!(resolve_plain("-.inf"), Resolved::Float(f64::NEG_INFINITY));
    }

    #[test]
    fn base60_floats_are_recognised() {
        for (text, want) in [("1:20", true), ("190:20:30.15", true), ("1:2:3", true), ("1:70", false), ("a:1", false)] {
            assert_eq!(is_base60_float(text), want, "{text}");
        }
    }
}
