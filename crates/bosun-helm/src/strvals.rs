//! Helm's `--set` syntax (`pkg/strvals`), for `--set`, `--set-string`, `--set-json`,
//! `--set-file` and `--set-literal`.
//!
//! `a.b=c,d[0].e=f,g={x,y}`: dots nest, `[i]` indexes lists (growing them with nulls),
//! `{x,y}` is a list, `\` escapes the next character, a comma ends a value. What a value
//! becomes depends on the flag:
//!
//! - `--set`: `true`/`false` (any case) are bools, `null` is null, `0` and integers without a
//!   leading zero are `int64` ([`serde_json::Number`] from `i64`), everything else a string.
//! - `--set-string`: always a string.
//! - `--set-json`: a JSON value (numbers become `float64`, as Go decodes JSON).
//! - `--set-file`: the value names a file whose content (read by the caller's reader) is
//!   the string.
//! - `--set-literal`: everything after `=` is the string, commas and backslashes included.

use serde_json::{Map, Value};

use crate::golang::numbers_to_float;

/// The deepest nesting of names Helm accepts (`a.b.c…`).
pub(crate) const MAX_NESTED_NAME_LEVEL: usize = 30;
/// The largest list index Helm accepts.
pub(crate) const MAX_INDEX: usize = 65536;

/// Why a `--set` expression was refused; the message is Helm's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StrvalsError(pub(crate) String);

/// Reads the file a `--set-file` value names; the error text is reported as is.
pub(crate) type FileReader<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// How values are read.
#[derive(Clone, Copy)]
enum Mode<'a> {
    Typed,
    Strings,
    Json,
    File(FileReader<'a>),
    Literal,
}

/// Parsing stopped: at the end of the input (not an error at the top), or on an error.
enum Stop {
    End,
    Error(String),
}

impl From<String> for Stop {
    fn from(message: String) -> Self {
        Stop::Error(message)
    }
}

struct Parser<'a> {
    chars: Vec<char>,
    position: usize,
    mode: Mode<'a>,
}

/// `--set`'s typing of a value.
fn typed_value(text: &str) -> Value {
    if text.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if text.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if text.eq_ignore_ascii_case("null") {
        return Value::Null;
    }
    if text == "0" {
        return Value::from(0i64);
    }
    if !text.is_empty()
        && !text.starts_with('0')
        && is_go_decimal(text)
        && let Ok(i) = text.parse::<i64>()
    {
        return Value::from(i);
    }
    Value::String(text.to_string())
}

/// What Go's `strconv.ParseInt(s, 10, 64)` accepts: an optional sign and ASCII digits.
fn is_go_decimal(text: &str) -> bool {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Go's `%q` for the messages.
fn quoted(chars: &[char]) -> String {
    format!("{:?}", chars.iter().collect::<String>())
}

fn set(data: &mut Map<String, Value>, key: &str, value: Value) {
    if !key.is_empty() {
        data.insert(key.to_string(), value);
    }
}

fn set_index(list: &mut Vec<Value>, index: i64, value: Value) -> Result<(), String> {
    if index < 0 {
        return Err(format!("negative {index} index not allowed"));
    }
    let index = index as usize;
    if index > MAX_INDEX {
        return Err(format!("index of {index} is greater than maximum supported index of {MAX_INDEX}"));
    }
    if list.len() <= index {
        list.resize(index + 1, Value::Null);
    }
    list[index] = value;
    Ok(())
}

/// Go's message when a value is not of the type a path needs.
fn conversion_error(value: &Value, want: &str) -> String {
    let got = match value {
        Value::Null => "nil".to_string(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => "float64".into(),
        Value::Number(_) => "int64".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "[]interface {}".into(),
        Value::Object(_) => "map[string]interface {}".into(),
    };
    format!("unable to parse key: interface conversion: interface {{}} is {got}, not {want}")
}

impl<'a> Parser<'a> {
    fn new(text: &str, mode: Mode<'a>) -> Self {
        Parser { chars: text.chars().collect(), position: 0, mode }
    }

    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.position).copied();
        if c.is_some() {
            self.position += 1;
        }
        c
    }

    fn escapes(&self) -> bool {
        !matches!(self.mode, Mode::Literal)
    }

    /// The characters up to one of `stop` (consumed and returned), `None` at the end.
    fn until(&mut self, stop: &[char]) -> (Vec<char>, Option<char>) {
        let mut text = Vec::new();
        while let Some(c) = self.read() {
            if stop.contains(&c) {
                return (text, Some(c));
            }
            if c == '\\' && self.escapes() {
                match self.read() {
                    Some(next) => text.push(next),
                    None => return (text, None),
                }
            } else {
                text.push(c);
            }
        }
        (text, None)
    }

    fn parse_into(&mut self, data: &mut Map<String, Value>) -> Result<(), StrvalsError> {
        loop {
            match self.key(data, 0) {
                Ok(()) => continue,
                Err(Stop::End) => return Ok(()),
                Err(Stop::Error(message)) => return Err(StrvalsError(message)),
            }
        }
    }

    fn key_stops(&self) -> &'static [char] {
        if self.escapes() { &['=', '[', ',', '.'] } else { &['=', '[', '.'] }
    }

    fn key(&mut self, data: &mut Map<String, Value>, mut nested: usize) -> Result<(), Stop> {
        let (key, last) = self.until(self.key_stops());
        let name: String = key.iter().collect();
        match last {
            None if key.is_empty() => Err(Stop::End),
            None => Err(format!("key {} has no value", quoted(&key)).into()),
            Some('[') => {
                let index = self.index()?;
                let mut list = match data.get(&name) {
                    None => Vec::new(),
                    Some(Value::Array(items)) => items.clone(),
                    Some(other) => return Err(conversion_error(other, "[]interface {}").into()),
                };
                let result = self.list_item(&mut list, index, nested);
                set(data, &name, Value::Array(list));
                result
            }
            Some('=') => {
                let value = self.value()?;
                let ended = value.is_none();
                set(data, &name, value.unwrap_or_else(|| Value::String(String::new())));
                if ended { Err(Stop::End) } else { Ok(()) }
            }
            Some(',') => {
                set(data, &name, Value::String(String::new()));
                Err(format!("key {} has no value (cannot end with ,)", quoted(&key)).into())
            }
            _ => {
                nested += 1;
                if nested > MAX_NESTED_NAME_LEVEL {
                    return Err(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    )
                    .into());
                }
                let existed = data.contains_key(&name);
                let mut inner = match data.get_mut(&name) {
                    None => Map::new(),
                    Some(Value::Object(map)) => std::mem::take(map),
                    Some(other) => return Err(conversion_error(other, "map[string]interface {}").into()),
                };
                let result = self.key(&mut inner, nested);
                let empty = inner.is_empty();
                if existed || !empty {
                    set(data, &name, Value::Object(inner));
                }
                match result {
                    Ok(()) if empty => Err(format!("key map {} has no value", quoted(&key)).into()),
                    other => other,
                }
            }
        }
    }

    fn index(&mut self) -> Result<i64, Stop> {
        let (digits, last) = self.until(&[']']);
        if last.is_none() {
            return Err("error parsing index: EOF".to_string().into());
        }
        let text: String = digits.iter().collect();
        if !is_go_decimal(&text) {
            return Err(format!("error parsing index: strconv.Atoi: parsing {text:?}: invalid syntax").into());
        }
        text.parse::<i64>()
            .map_err(|_| format!("error parsing index: strconv.Atoi: parsing {text:?}: value out of range").into())
    }

    fn list_item(&mut self, list: &mut Vec<Value>, index: i64, nested: usize) -> Result<(), Stop> {
        if index < 0 {
            return Err(format!("negative {index} index not allowed").into());
        }
        let (rest, last) = self.until(&['[', '.', '=']);
        if !rest.is_empty() {
            return Err(format!("unexpected data at end of array index: {}", quoted(&rest)).into());
        }
        match last {
            None => Err(Stop::End),
            Some('=') => {
                let value = self.value()?.unwrap_or_else(|| Value::String(String::new()));
                Ok(set_index(list, index, value)?)
            }
            Some('[') => {
                let next = self.index()?;
                let mut inner = match list.get(index as usize) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => items.clone(),
                    Some(other) => return Err(conversion_error(other, "[]interface {}").into()),
                };
                self.list_item(&mut inner, next, nested)?;
                Ok(set_index(list, index, Value::Array(inner))?)
            }
            _ => {
                let position = index as usize;
                let mut inner = match list.get_mut(position) {
                    Some(Value::Object(map)) => std::mem::take(map),
                    _ => Map::new(),
                };
                let result = self.key(&mut inner, nested);
                if position < list.len() {
                    list[position] = Value::Object(inner.clone());
                }
                result?;
                Ok(set_index(list, index, Value::Object(inner))?)
            }
        }
    }

    /// The value after `=`; `None` when the input ended right after it (an empty string).
    fn value(&mut self) -> Result<Option<Value>, Stop> {
        match self.mode {
            Mode::Literal => {
                let rest: String = self.chars[self.position..].iter().collect();
                self.position = self.chars.len();
                Ok(Some(Value::String(rest)))
            }
            Mode::Json => self.json_value().map(Some),
            _ => match self.chars.get(self.position) {
                None => Ok(None),
                Some('{') => {
                    self.position += 1;
                    self.list().map(|items| Some(Value::Array(items)))
                }
                Some(_) => {
                    let (text, _) = self.until(&[',']);
                    self.convert(&text).map(Some)
                }
            },
        }
    }

    fn convert(&self, text: &[char]) -> Result<Value, Stop> {
        let text: String = text.iter().collect();
        match self.mode {
            Mode::Strings => Ok(Value::String(text)),
            Mode::File(read) => read(&text).map(Value::String).map_err(Stop::Error),
            _ => Ok(typed_value(&text)),
        }
    }

    /// `{a,b}` after the `{`.
    fn list(&mut self) -> Result<Vec<Value>, Stop> {
        let mut items = Vec::new();
        loop {
            let (text, last) = self.until(&[',', '}']);
            match last {
                None => return Err("list must terminate with '}'".to_string().into()),
                Some('}') => {
                    if self.chars.get(self.position) == Some(&',') {
                        self.position += 1;
                    }
                    items.push(self.convert(&text)?);
                    return Ok(items);
                }
                _ => items.push(self.convert(&text)?),
            }
        }
    }

    /// Skips white space and one comma; true when the value is empty (comma or end).
    fn empty_value(&mut self) -> bool {
        while let Some(c) = self.chars.get(self.position).copied() {
            if c == ',' {
                self.position += 1;
                return true;
            }
            if !c.is_whitespace() {
                return false;
            }
            self.position += 1;
        }
        true
    }

    fn json_value(&mut self) -> Result<Value, Stop> {
        if self.empty_value() {
            return Ok(Value::Null);
        }
        let rest: String = self.chars[self.position..].iter().collect();
        let mut stream = serde_json::Deserializer::from_str(&rest).into_iter::<Value>();
        let value = match stream.next() {
            Some(Ok(value)) => value,
            Some(Err(e)) => return Err(e.to_string().into()),
            None => return Err("unexpected end of JSON input".to_string().into()),
        };
        self.position += rest[..stream.byte_offset()].chars().count();
        self.empty_value();
        Ok(numbers_to_float(value))
    }
}

fn parse_with(text: &str, data: &mut Map<String, Value>, mode: Mode) -> Result<(), StrvalsError> {
    Parser::new(text, mode).parse_into(data)
}

/// `--set`: parses `text` into `data`.
pub(crate) fn parse_into(text: &str, data: &mut Map<String, Value>) -> Result<(), StrvalsError> {
    parse_with(text, data, Mode::Typed)
}

/// `--set-string`: parses `text` into `data`, every value a string.
pub(crate) fn parse_into_string(text: &str, data: &mut Map<String, Value>) -> Result<(), StrvalsError> {
    parse_with(text, data, Mode::Strings)
}

/// `--set-json` with `key=json` pairs: parses `text` into `data`.
pub(crate) fn parse_json(text: &str, data: &mut Map<String, Value>) -> Result<(), StrvalsError> {
    parse_with(text, data, Mode::Json)
}

/// `--set-file`: parses `text` into `data`, each value a file name given to `read`.
pub(crate) fn parse_into_file(text: &str, data: &mut Map<String, Value>, read: FileReader) -> Result<(), StrvalsError> {
    parse_with(text, data, Mode::File(read))
}

/// `--set-literal`: parses `text` into `data`; the value is everything after the first `=`.
pub(crate) fn parse_literal_into(text: &str, data: &mut Map<String, Value>) -> Result<(), StrvalsError> {
    parse_with(text, data, Mode::Literal)
}

/// `--set` into new values.
#[cfg(test)]
fn parse(text: &str) -> Result<Map<String, Value>, StrvalsError> {
    let mut data = Map::new();
    parse_into(text, &mut data)?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    /// Helm's `TestParseSet` table (Helm compares through YAML, so ints and floats are alike
    /// there; here the kinds are checked too: `--set` integers are int64).
    #[test]
    fn set_parses_as_helm() {
        let cases: Vec<(&str, Option<Value>)> = vec![
            ("name1=null,f=false,t=true", Some(json!({"name1": null, "f": false, "t": true}))),
            ("name1=value1", Some(json!({"name1": "value1"}))),
            ("name1=value1,name2=value2", Some(json!({"name1": "value1", "name2": "value2"}))),
            ("name1=value1,name2=value2,", Some(json!({"name1": "value1", "name2": "value2"}))),
            ("name1=value1,,,,name2=value2,", None),
            ("name1=,name2=value2", Some(json!({"name1": "", "name2": "value2"}))),
            ("leading_zeros=00009", Some(json!({"leading_zeros": "00009"}))),
            ("zero_int=0", Some(json!({"zero_int": 0}))),
            ("long_int=1234567890", Some(json!({"long_int": 1234567890}))),
            ("boolean=true", Some(json!({"boolean": true}))),
            ("is_null=null", Some(json!({"is_null": null}))),
            ("name1,name2=", None),
            ("name1,name2=value2", None),
            ("name1,name2=value2\\", None),
            ("name1,name2", None),
            ("name1=one\\,two,name2=three\\,four", Some(json!({"name1": "one,two", "name2": "three,four"}))),
            ("name1=one\\=two,name2=three\\=four", Some(json!({"name1": "one=two", "name2": "three=four"}))),
            (
                "name1=one two three,name2=three two one",
                Some(json!({"name1": "one two three", "name2": "three two one"})),
            ),
            ("outer.inner=value", Some(json!({"outer": {"inner": "value"}}))),
            ("outer.middle.inner=value", Some(json!({"outer": {"middle": {"inner": "value"}}}))),
            ("outer.inner1=value,outer.inner2=value2", Some(json!({"outer": {"inner1": "value", "inner2": "value2"}}))),
            (
                "outer.inner1=value,outer.middle.inner=value",
                Some(json!({"outer": {"inner1": "value", "middle": {"inner": "value"}}})),
            ),
            ("name1.name2", None),
            ("name1.name2,name1.name3", None),
            ("name1.name2=", Some(json!({"name1": {"name2": ""}}))),
            ("name1.=name2", None),
            ("name1.,name2", None),
            ("name1={value1,value2}", Some(json!({"name1": ["value1", "value2"]}))),
            (
                "name1={value1,value2},name2={value1,value2}",
                Some(json!({"name1": ["value1", "value2"], "name2": ["value1", "value2"]})),
            ),
            ("name1={1021,902}", Some(json!({"name1": [1021, 902]}))),
            ("name1.name2={value1,value2}", Some(json!({"name1": {"name2": ["value1", "value2"]}}))),
            ("name1={1021,902", None),
            ("list[0]=foo", Some(json!({"list": ["foo"]}))),
            ("list[0].foo=bar", Some(json!({"list": [{"foo": "bar"}]}))),
            ("list[0].foo=bar,list[0].hello=world", Some(json!({"list": [{"foo": "bar", "hello": "world"}]}))),
            ("list[0].foo=bar,list[-30].hello=world", None),
            ("list[0]=foo,list[1]=bar", Some(json!({"list": ["foo", "bar"]}))),
            ("list[0]=foo,list[1]=bar,", Some(json!({"list": ["foo", "bar"]}))),
            ("list[0]=foo,list[3]=bar", Some(json!({"list": ["foo", null, null, "bar"]}))),
            ("list[0]=foo,list[-20]=bar", None),
            ("illegal[0]name.foo=bar", None),
            ("noval[0]", Some(json!({"noval": []}))),
            ("noval[0]=", Some(json!({"noval": [""]}))),
            ("nested[0][0]=1", Some(json!({"nested": [[1]]}))),
            ("nested[1][1]=1", Some(json!({"nested": [null, [null, 1]]}))),
            (
                "name1.name2[0].foo=bar,name1.name2[1].foo=bar",
                Some(json!({"name1": {"name2": [{"foo": "bar"}, {"foo": "bar"}]}})),
            ),
            (
                "name1.name2[1].foo=bar,name1.name2[0].foo=bar",
                Some(json!({"name1": {"name2": [{"foo": "bar"}, {"foo": "bar"}]}})),
            ),
            ("name1.name2[1].foo=bar", Some(json!({"name1": {"name2": [null, {"foo": "bar"}]}}))),
            ("]={}].", None),
        ];
        for (text, want) in cases {
            match (parse(text), want) {
                (Ok(got), Some(want)) => assert_eq!(Value::Object(got), want, "{text}"),
                (Err(_), None) => {}
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
        let ints = parse("a=1234567890,b=0,c=-5,d=+7,e=1_000").unwrap();
        assert!(ints["a"].as_number().is_some_and(|n| n.is_i64()), "--set integers are int64");
        assert_eq!(ints["c"], json!(-5));
        assert_eq!(ints["d"], json!(7));
        assert_eq!(ints["e"], json!("1_000"));
    }

    /// Helm's `testsString` cases: `--set-string` keeps text.
    #[test]
    fn set_string_keeps_text() {
        for (text, want) in [
            ("long_int_string=1234567890", json!({"long_int_string": "1234567890"})),
            ("boolean=true", json!({"boolean": "true"})),
            ("is_null=null", json!({"is_null": "null"})),
            ("zero=0", json!({"zero": "0"})),
        ] {
            let mut got = Map::new();
            parse_into_string(text, &mut got).unwrap();
            assert_eq!(Value::Object(got), want, "{text}");
        }
        let mut got = map(json!({"outer": {"inner1": "overwrite", "inner2": "value2"}}));
        parse_into_string("outer.inner1=1,outer.inner3=3", &mut got).unwrap();
        assert_eq!(Value::Object(got), json!({"outer": {"inner1": "1", "inner2": "value2", "inner3": "3"}}));
    }

    /// Helm's `TestParseInto` table.
    #[test]
    fn set_into_existing_values() {
        let cases = [
            (
                "outer.inner1=value1,outer.inner3=value3,outer.inner4=4",
                "",
                json!({"outer": {"inner1": "overwrite", "inner2": "value2"}}),
                json!({"outer": {"inner1": "value1", "inner2": "value2", "inner3": "value3", "inner4": 4}}),
            ),
            (
                "listOuter[0][0].type=listValue",
                "listOuter[0][0].status=alive",
                json!({}),
                json!({"listOuter": [[{"type": "listValue", "status": "alive"}]]}),
            ),
            (
                "listOuter[0][0].type=listValue",
                "listOuter[1][0].status=alive",
                json!({}),
                json!({"listOuter": [[{"type": "listValue"}], [{"status": "alive"}]]}),
            ),
            (
                "listOuter[0][1][0].type=listValue",
                "listOuter[0][0][1].status=alive",
                json!({"listOuter": [[[{"exited": "old"}]]]}),
                json!({"listOuter": [[[{"exited": "old"}, {"status": "alive"}], [{"type": "listValue"}]]]}),
            ),
        ];
        for (first, second, start, want) in cases {
            let mut got = map(start);
            parse_into(first, &mut got).unwrap();
            if !second.is_empty() {
                parse_into(second, &mut got).unwrap();
            }
            assert_eq!(Value::Object(got), want, "{first} {second}");
        }
    }

    /// Helm's `TestParseJSON` table.
    #[test]
    fn set_json_parses_as_helm() {
        let start = || map(json!({"outer": {"inner1": "overwrite", "inner2": "value2"}}));
        let mut got = start();
        parse_json(r#"outer.inner1="1",outer.inner3=3,outer.inner4=true,outer.inner5="true""#, &mut got).unwrap();
        assert_eq!(
            Value::Object(got.clone()),
            json!({"outer": {"inner1": "1", "inner2": "value2", "inner3": 3.0, "inner4": true, "inner5": "true"}})
        );
        assert!(got["outer"]["inner3"].as_number().unwrap().is_f64(), "JSON numbers are float64");

        let mut got =
            map(json!({"outer": {"inner1": {"x": "overwrite"}, "inner2": "value2", "inner3": ["overwrite"]}}));
        parse_json(
            r#"outer.inner1={"a":"1","b":2,"c":[1,2,3]},outer.inner3=["new value 1","new value 2"],outer.inner4={"aa":"1","bb":2,"cc":[1,2,3]},outer.inner5=[{"A":"1","B":2,"C":[1,2,3]}]"#,
            &mut got,
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"outer": {
                "inner1": {"a": "1", "b": 2.0, "c": [1.0, 2.0, 3.0]},
                "inner2": "value2",
                "inner3": ["new value 1", "new value 2"],
                "inner4": {"aa": "1", "bb": 2.0, "cc": [1.0, 2.0, 3.0]},
                "inner5": [{"A": "1", "B": 2.0, "C": [1.0, 2.0, 3.0]}],
            }})
        );

        let mut got = map(json!({"outer": {"inner1": {"x": "overwrite"}, "inner2": "value2"}}));
        parse_json(r#"outer.inner1=,outer.inner3={"aa":"1","bb":2,"cc":[1,2,3]},outer.inner3.cc[1]=null"#, &mut got)
            .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"outer": {"inner1": null, "inner2": "value2", "inner3": {"aa": "1", "bb": 2.0, "cc": [1.0, null, 3.0]}}})
        );

        let mut got = Map::new();
        let syntax_error = r#"outer.inner1={"a":"1","b":2,"c":[1,2,3]},outer.inner3=["new value 1","new value 2"],outer.inner4={"aa":"1","bb":2,"cc":[1,2,3]},outer.inner5={"A":"1","B":2,"C":[1,2,3]}]"#;
        assert!(parse_json(syntax_error, &mut got).is_err());
    }

    #[test]
    fn set_file_reads_through_the_reader() {
        let read = |name: &str| {
            if name == "path1" { Ok("value1".to_string()) } else { Err(format!("open {name}: no such file")) }
        };
        let mut got = Map::new();
        parse_into_file("name1=path1", &mut got, &read).unwrap();
        assert_eq!(Value::Object(got), json!({"name1": "value1"}));
        let mut got = Map::new();
        assert_eq!(parse_into_file("name1=path2", &mut got, &read).unwrap_err().0, "open path2: no such file");
    }

    /// Helm's `TestParseLiteral` table.
    #[test]
    fn set_literal_keeps_everything_after_the_equals_sign() {
        let cases: Vec<(&str, Option<Value>)> = vec![
            ("name", None),
            ("name=", Some(json!({"name": ""}))),
            ("name=value", Some(json!({"name": "value"}))),
            ("long_int_string=1234567890", Some(json!({"long_int_string": "1234567890"}))),
            ("boolean=true", Some(json!({"boolean": "true"}))),
            ("is_null=null", Some(json!({"is_null": "null"}))),
            ("zero=0", Some(json!({"zero": "0"}))),
            ("name1=null,name2=value2", Some(json!({"name1": "null,name2=value2"}))),
            ("name1=value,,,tail", Some(json!({"name1": "value,,,tail"}))),
            ("leading_zeros=00009", Some(json!({"leading_zeros": "00009"}))),
            ("name=one two three", Some(json!({"name": "one two three"}))),
            ("outer.inner=value", Some(json!({"outer": {"inner": "value"}}))),
            ("outer.middle.inner=value", Some(json!({"outer": {"middle": {"inner": "value"}}}))),
            ("name1.name2", None),
            ("name1.name2=", Some(json!({"name1": {"name2": ""}}))),
            ("name1.=name2", None),
            ("name1.,name2", None),
            ("name1={value1,value2}", Some(json!({"name1": "{value1,value2}"}))),
            ("list[0]=foo", Some(json!({"list": ["foo"]}))),
            ("list[0].foo=bar", Some(json!({"list": [{"foo": "bar"}]}))),
            ("list[-30].hello=world", None),
            ("list[3]=bar", Some(json!({"list": [null, null, null, "bar"]}))),
            ("illegal[0]name.foo=bar", None),
            ("noval[0]", Some(json!({"noval": []}))),
            ("noval[0]=", Some(json!({"noval": [""]}))),
            ("nested[0][0]=1", Some(json!({"nested": [["1"]]}))),
            ("nested[1][1]=1", Some(json!({"nested": [null, [null, "1"]]}))),
            ("name1.name2[0].foo=bar", Some(json!({"name1": {"name2": [{"foo": "bar"}]}}))),
            ("name1.name2[1].foo=bar", Some(json!({"name1": {"name2": [null, {"foo": "bar"}]}}))),
            ("]={}].", Some(json!({"]": "{}]."}))),
            ("name=val,val", Some(json!({"name": "val,val"}))),
            ("name=val.val", Some(json!({"name": "val.val"}))),
            ("name=val=val", Some(json!({"name": "val=val"}))),
            ("name=val$val", Some(json!({"name": "val$val"}))),
            ("name=(value", Some(json!({"name": "(value"}))),
            ("name=value)", Some(json!({"name": "value)"}))),
            ("name=(value)", Some(json!({"name": "(value)"}))),
            ("name={value", Some(json!({"name": "{value"}))),
            ("name=value}", Some(json!({"name": "value}"}))),
            ("name={value}", Some(json!({"name": "{value}"}))),
            ("name={value1,value2}", Some(json!({"name": "{value1,value2}"}))),
            (r"name=val\val", Some(json!({"name": r"val\val"}))),
            (r"name=val\\val", Some(json!({"name": r"val\\val"}))),
            (r"name=val\\\val", Some(json!({"name": r"val\\\val"}))),
            (r"name={val,.?*v\0a!l)some", Some(json!({"name": r"{val,.?*v\0a!l)some"}))),
            (
                r"name=em%GT)tqUDqz,i-\h+Mbqs-!:.m\\rE=mkbM#rR}@{-k@",
                Some(json!({"name": r"em%GT)tqUDqz,i-\h+Mbqs-!:.m\\rE=mkbM#rR}@{-k@"})),
            ),
        ];
        for (text, want) in cases {
            let mut got = Map::new();
            match (parse_literal_into(text, &mut got), want) {
                (Ok(()), Some(want)) => assert_eq!(Value::Object(got), want, "{text}"),
                (Err(_), None) => {}
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn nesting_and_indexes_are_limited() {
        let deep: Vec<String> = (1..=MAX_NESTED_NAME_LEVEL + 2).map(|i| format!("name{i}")).collect();
        assert_eq!(
            parse(&format!("{}=value", deep.join("."))).unwrap_err().0,
            "value name nested level is greater than maximum supported nested level of 30"
        );
        assert_eq!(
            parse("list[65537]=x").unwrap_err().0,
            "index of 65537 is greater than maximum supported index of 65536"
        );
        assert_eq!(
            parse("a=x,a.b=y").unwrap_err().0,
            "unable to parse key: interface conversion: interface {} is string, not map[string]interface {}"
        );
    }
}
