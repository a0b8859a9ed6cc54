//! Wildcard patterns in the two dialects bosun meets: Go's `path/filepath.Match` (Helm's
//! `.helmignore` rules, and the `directories` generator of Fleets, as Argo CD's ApplicationSets
//! match paths) and gobwas/glob with `/` as separator (Helm's `.Files.Glob`).
//!
//! Not `globset`: it reads `{a,b}` in every pattern, `**` only as a whole path segment, and
//! accepts classes filepath.Match refuses, so a `.helmignore` rule would match other files than
//! Helm's.
//!
//! Both: `*` matches within one path segment, `?` one character but not `/`, `[a-z]` classes,
//! `\` escapes. filepath.Match negates a class with `^`; gobwas/glob with `!`, and adds `**`
//! (across segments) and `{a,b}` alternatives.

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Literal(char),
    /// `?`: one character other than `/`.
    AnyChar,
    /// `*` (within a segment) or `**` (across segments).
    AnySequence {
        across_separators: bool,
    },
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Alternatives(Vec<Vec<Token>>),
}

/// Why a pattern is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("syntax error in pattern {0:?}")]
pub struct BadPattern(pub String);

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    tokens: Vec<Token>,
}

fn class_char(chars: &[char], i: &mut usize, go_rules: bool) -> Option<char> {
    let c = *chars.get(*i)?;
    // filepath.Match refuses an unescaped `-` or `]` where a class character is expected.
    if go_rules && (c == '-' || c == ']') {
        return None;
    }
    *i += 1;
    if c == '\\' {
        let escaped = *chars.get(*i)?;
        *i += 1;
        return Some(escaped);
    }
    Some(c)
}

/// A `[...]` class starting after the `[` at `*i`.
fn parse_class(chars: &[char], i: &mut usize, negation: char, go_rules: bool) -> Option<Token> {
    let negated = chars.get(*i) == Some(&negation);
    if negated {
        *i += 1;
    }
    let mut ranges = Vec::new();
    loop {
        if chars.get(*i) == Some(&']') && (!ranges.is_empty() || !go_rules) {
            *i += 1;
            return (!ranges.is_empty()).then_some(Token::Class { negated, ranges });
        }
        let low = class_char(chars, i, go_rules)?;
        let high = if chars.get(*i) == Some(&'-') && chars.get(*i + 1) != Some(&']') {
            *i += 1;
            class_char(chars, i, go_rules)?
        } else {
            low
        };
        ranges.push((low, high));
    }
}

fn parse(chars: &[char], i: &mut usize, glob: bool, in_alternative: bool) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    while let Some(&c) = chars.get(*i) {
        if in_alternative && (c == ',' || c == '}') {
            break;
        }
        *i += 1;
        tokens.push(match c {
            '*' if glob && chars.get(*i) == Some(&'*') => {
                *i += 1;
                Token::AnySequence { across_separators: true }
            }
            '*' => Token::AnySequence { across_separators: false },
            '?' => Token::AnyChar,
            '[' => parse_class(chars, i, if glob { '!' } else { '^' }, !glob)?,
            '\\' => {
                let escaped = *chars.get(*i)?;
                *i += 1;
                Token::Literal(escaped)
            }
            '{' if glob => {
                let mut alternatives = Vec::new();
                loop {
                    alternatives.push(parse(chars, i, glob, true)?);
                    match chars.get(*i) {
                        Some(',') => *i += 1,
                        Some('}') => {
                            *i += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
                Token::Alternatives(alternatives)
            }
            c => Token::Literal(c),
        });
    }
    Some(tokens)
}

fn matches_tokens(tokens: &[Token], name: &[char]) -> bool {
    let Some((first, rest)) = tokens.split_first() else {
        return name.is_empty();
    };
    match first {
        Token::Literal(c) => name.first() == Some(c) && matches_tokens(rest, &name[1..]),
        Token::AnyChar => name.first().is_some_and(|&c| c != '/') && matches_tokens(rest, &name[1..]),
        Token::Class { negated, ranges } => name.first().is_some_and(|&c| {
            let inside = ranges.iter().any(|&(low, high)| low <= c && c <= high);
            inside != *negated && matches_tokens(rest, &name[1..])
        }),
        Token::AnySequence { across_separators } => {
            for skip in 0..=name.len() {
                if matches_tokens(rest, &name[skip..]) {
                    return true;
                }
                if skip < name.len() && !across_separators && name[skip] == '/' {
                    return false;
                }
            }
            false
        }
        Token::Alternatives(alternatives) => alternatives.iter().any(|alternative| {
            let joined: Vec<Token> = alternative.iter().chain(rest).cloned().collect();
            matches_tokens(&joined, name)
        }),
    }
}

impl Pattern {
    /// A `path/filepath.Match` pattern.
    pub fn filepath(pattern: &str) -> Result<Pattern, BadPattern> {
        let chars: Vec<char> = pattern.chars().collect();
        parse(&chars, &mut 0, false, false).map(|tokens| Pattern { tokens }).ok_or_else(|| BadPattern(pattern.into()))
    }

    /// A gobwas/glob pattern with `/` as separator.
    pub fn glob(pattern: &str) -> Result<Pattern, BadPattern> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut i = 0;
        match parse(&chars, &mut i, true, false) {
            Some(tokens) if i == chars.len() => Ok(Pattern { tokens }),
            _ => Err(BadPattern(pattern.into())),
        }
    }

    /// Whether the whole of `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        let chars: Vec<char> = name.chars().collect();
        matches_tokens(&self.tokens, &chars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases from Go's `path/filepath` `matchTests`.
    #[test]
    fn filepath_match_as_go() {
        let cases: &[(&str, &str, Option<bool>)] = &[
            ("abc", "abc", Some(true)),
            ("*", "abc", Some(true)),
            ("*c", "abc", Some(true)),
            ("a*", "a", Some(true)),
            ("a*", "abc", Some(true)),
            ("a*", "ab/c", Some(false)),
            ("a*/b", "abc/b", Some(true)),
            ("a*/b", "a/c/b", Some(false)),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", Some(true)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", Some(true)),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", Some(false)),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", Some(false)),
            ("a*b?c*x", "abxbbxdbxebxczzx", Some(true)),
            ("a*b?c*x", "abxbbxdbxebxczzy", Some(false)),
            ("ab[c]", "abc", Some(true)),
            ("ab[b-d]", "abc", Some(true)),
            ("ab[e-g]", "abc", Some(false)),
            ("ab[^c]", "abc", Some(false)),
            ("ab[^b-d]", "abc", Some(false)),
            ("ab[^e-g]", "abc", Some(true)),
            ("a\\*b", "a*b", Some(true)),
            ("a\\*b", "ab", Some(false)),
            ("a?b", "a☺b", Some(true)),
            ("a[^a]b", "a☺b", Some(true)),
            ("a???b", "a☺b", Some(false)),
            ("a[^a][^a][^a]b", "a☺b", Some(false)),
            ("[a-ζ]*", "α", Some(true)),
            ("*[a-ζ]", "A", Some(false)),
            ("a?b", "a/b", Some(false)),
            ("a*b", "a/b", Some(false)),
            ("[\\]a]", "]", Some(true)),
            ("[\\-]", "-", Some(true)),
            ("[x\\-]", "x", Some(true)),
            ("[x\\-]", "-", Some(true)),
            ("[x\\-]", "z", Some(false)),
            ("[\\-x]", "x", Some(true)),
            ("[\\-x]", "-", Some(true)),
            ("[\\-x]", "a", Some(false)),
            ("[]a]", "]", None),
            ("[-]", "-", None),
            ("[x-]", "x", None),
            ("[x-]", "-", None),
            ("[-x]", "x", None),
            ("\\", "a", None),
            ("[a-b-c]", "a", None),
            ("[", "a", None),
            ("[^", "a", None),
            ("[^bc", "a", None),
            ("a[", "a", None),
            ("a[", "ab", None),
            ("*x", "xxx", Some(true)),
        ];
        for (pattern, name, want) in cases {
            match (Pattern::filepath(pattern), want) {
                (Ok(p), Some(want)) => assert_eq!(p.matches(name), *want, "{pattern} {name}"),
                (Err(_), None) => {}
                (got, want) => panic!("{pattern} {name}: {got:?}, want {want:?}"),
            }
        }
    }

    /// Cases from gobwas/glob's tests, with `/` as separator.
    #[test]
    fn glob_match_as_gobwas() {
        let cases: &[(&str, &str, bool)] = &[
            ("* ?", "abc d", true),
            ("a*", "abc", true),
            ("a*/b", "abc/b", true),
            ("a*/b", "a/c/b", false),
            ("a**/b", "a/c/b", true),
            ("**", "a/b/c", true),
            ("files/*", "files/a.txt", true),
            ("files/*", "files/sub/a.txt", false),
            ("files/**", "files/sub/a.txt", true),
            ("**.yaml", "x/y.yaml", true),
            ("*.{yaml,json}", "a.json", true),
            ("*.{yaml,json}", "a.txt", false),
            ("{a,b}/{*.txt,c}", "b/c", true),
            ("[!a]*", "abc", false),
            ("[!a]*", "bbc", true),
            ("[a-c]?", "bz", true),
            ("\\*", "*", true),
            ("a?c", "a/c", false),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(Pattern::glob(pattern).unwrap().matches(name), *want, "{pattern} {name}");
        }
        for bad in ["[a", "{a,b", "a\\"] {
            assert!(Pattern::glob(bad).is_err(), "{bad}");
        }
    }
}
