//! Sprig's functions, table-driven. Most cases come from Masterminds/sprig's own tests
//! (`*_test.go`, MIT licence), run through the engine as sprig's `runt`/`runtv` helpers run them;
//! the rest pin down behaviour Helm charts rely on.

use bosun_gotemplate::{Template, Value, sprig};

fn render(template: &str, data: &Value) -> Result<String, String> {
    let mut t = Template::new("test");
    t.add_funcs(sprig::functions());
    t.parse("test", template).map_err(|e| e.to_string())?;
    t.render("test", data).map_err(|e| e.to_string())
}

fn data(json: &str) -> Value {
    if json.is_empty() { Value::Nil } else { Value::from(serde_json::from_str::<serde_json::Value>(json).unwrap()) }
}

/// (template, data as JSON or "", expected output).
const CASES: &[(&str, &str, &str)] = &[
    // strings_test.go
    (r#"{{"fooo" | substr 0 3 }}"#, "", "foo"),
    (r#"{{"foo" | substr 0 10 }}"#, "", "foo"),
    (r#"{{ "foooooo" | trunc 3 }}"#, "", "foo"),
    (r#"{{ "baaaaaar" | trunc -3 }}"#, "", "aar"),
    (r#"{{ "baaaaaar" | trunc -999 }}"#, "", "baaaaaar"),
    (r#"{{ "baaaaaz" | trunc 0 }}"#, "", ""),
    (r#"{{quote "a" "b" "c"}}"#, "", r#""a" "b" "c""#),
    (r#"{{quote "\"a\"" "b" "c"}}"#, "", r#""\"a\"" "b" "c""#),
    ("{{quote 1 2 3 }}", "", r#""1" "2" "3""#),
    ("{{ .value | quote }}", r#"{"value": null}"#, ""),
    (r#"{{squote "a" "b" "c"}}"#, "", "'a' 'b' 'c'"),
    ("{{squote 1 2 3 }}", "", "'1' '2' '3'"),
    ("{{ .value | squote }}", r#"{"value": null}"#, ""),
    (r#"{{if contains "cat" "fair catch"}}1{{end}}"#, "", "1"),
    (r#"{{if hasPrefix "cat" "catch"}}1{{end}}"#, "", "1"),
    (r#"{{if hasSuffix "cat" "ducat"}}1{{end}}"#, "", "1"),
    (r#"{{trim "   5.00   "}}"#, "", "5.00"),
    (r#"{{trimAll "$" "$5.00$"}}"#, "", "5.00"),
    (r#"{{trimPrefix "$" "$5.00"}}"#, "", "5.00"),
    (r#"{{trimSuffix "$" "5.00$"}}"#, "", "5.00"),
    (r#"{{$v := "foo$bar$baz" | split "$"}}{{$v._0}}"#, "", "foo"),
    (r#"{{$v := "foo$bar$baz" | splitn "$" 2}}{{$v._0}}"#, "", "foo"),
    ("{{ toString .Value | kindOf }}", r#"{"Value": 1}"#, "string"),
    ("{{ $s := list 1 2 3 | toStrings }}{{ index $s 1 | kindOf }}", "", "string"),
    ("{{ list 1 .value 2 | toStrings }}", r#"{"value": null}"#, "[1 2]"),
    (r#"{{ tuple "a" "b" "c" | join "-" }}"#, "", "a-b-c"),
    (r#"{{ tuple 1 2 3 | join "-" }}"#, "", "1-2-3"),
    (r#"{{ join "-" .V }}"#, r#"{"V": ["a", "b", "c"]}"#, "a-b-c"),
    (r#"{{ join "-" .V }}"#, r#"{"V": "abc"}"#, "abc"),
    (r#"{{ join "-" .value }}"#, r#"{"value": ["1", null, "2"]}"#, "1-2"),
    (r#"{{ list "c" "a" "b" | sortAlpha | join "" }}"#, "", "abc"),
    (r#"{{ list 2 1 4 3 | sortAlpha | join "" }}"#, "", "1234"),
    (r#"{{b64enc "coffee"}}"#, "", "Y29mZmVl"),
    (r#"{{b64dec "Y29mZmVl"}}"#, "", "coffee"),
    (r#"{{b32enc "coffee"}}"#, "", "MNXWMZTFMU======"),
    (r#"{{b32dec "MNXWMZTFMU======"}}"#, "", "coffee"),
    (r#"{{abbrev 5 "hello world"}}"#, "", "he..."),
    (r#"{{abbrevboth 5 10 "1234 5678 9123"}}"#, "", "...5678..."),
    (r#"{{nospace "h e l l o "}}"#, "", "hello"),
    (r#"{{untitle "First Try"}}"#, "", "first try"),
    (r#"{{initials "First Try"}}"#, "", "FT"),
    (r#"{{wrap 5 "Hello World"}}"#, "", "Hello\nWorld"),
    (r#"{{wrapWith 5 "\t" "Hello World"}}"#, "", "Hello\tWorld"),
    (r#"{{$b := "b"}}{{"c" | cat "a" $b}}"#, "", "a b c"),
    (r#"{{ .value | cat "a" "b"}}"#, r#"{"value": null}"#, "a b"),
    (r#"{{indent 4 "a\nb\nc"}}"#, "", "    a\n    b\n    c"),
    (r#"{{nindent 4 "a\nb\nc"}}"#, "", "\n    a\n    b\n    c"),
    (r#"{{"I Am Henry VIII" | replace " " "-"}}"#, "", "I-Am-Henry-VIII"),
    (r#"{{$num := len "two"}}{{$num}} {{$num | plural "1 char" "chars"}}"#, "", "3 chars"),
    (r#"{{len "t" | plural "cheese" "%d chars"}}"#, "", "cheese"),
    (r#"{{ "hello world" | title }}"#, "", "Hello World"),
    (r#"{{ "HELLO" | lower }}{{ "hello" | upper }}"#, "", "helloHELLO"),
    (r#"{{ "ab" | repeat 3 }}"#, "", "ababab"),
    (r#"{{ snakecase "FirstName" }}"#, "", "first_name"),
    (r#"{{ snakecase "HTTPServer" }}"#, "", "http_server"),
    (r#"{{ kebabcase "FirstName" }}"#, "", "first-name"),
    (r#"{{ camelcase "http_server" }}"#, "", "HttpServer"),
    (r#"{{ camelcase "_camel_case" }}"#, "", "_CamelCase"),
    (r#"{{ swapcase "This Is A.Test" }}"#, "", "tHIS iS a.tEST"),
    (r#"{{ "one two" | splitList " " }}"#, "", "[one two]"),
    // list_test.go
    (r#"{{$t := tuple 1 "a" "foo"}}{{index $t 2}}{{index $t 0 }}{{index $t 1}}"#, "", "foo1a"),
    ("{{ $t := tuple 1 2 3  }}{{ append $t 4 | len }}", "", "4"),
    (r#"{{ $t := tuple 1 2 3 4  }}{{ append $t 5 | join "-" }}"#, "", "1-2-3-4-5"),
    (r#"{{ $t := regexSplit "/" "foo/bar/baz" -1 }}{{ append $t "qux" | join "-" }}"#, "", "foo-bar-baz-qux"),
    (r#"{{ $t := regexSplit "/" "foo/bar/baz" -1 }}{{ mustPush $t "qux" | join "-" }}"#, "", "foo-bar-baz-qux"),
    ("{{ tuple 1 2 3 4 5 6 7 | chunk 3 | len }}", "", "3"),
    ("{{ tuple | chunk 3 | len }}", "", "0"),
    (r#"{{ range ( tuple 1 2 3 4 5 6 7 8 | chunk 3 ) }}{{. | join "-"}}|{{end}}"#, "", "1-2-3|4-5-6|7-8|"),
    (r#"{{ $t := tuple 1 2 3 4  }}{{ prepend $t 0 | join "-" }}"#, "", "0-1-2-3-4"),
    ("{{ list 1 2 3 | first }}", "", "1"),
    ("{{ list | first }}", "", "<no value>"),
    (r#"{{ regexSplit "/src/" "foo/src/bar" -1 | first }}"#, "", "foo"),
    ("{{ list 1 2 3 | last }}", "", "3"),
    ("{{ list | last }}", "", "<no value>"),
    ("{{ list 1 2 3 | initial | len }}", "", "2"),
    ("{{ list | initial }}", "", "[]"),
    (r#"{{ regexSplit "/" "foo/bar/baz" -1 | initial }}"#, "", "[foo bar]"),
    ("{{ list 1 2 3 | rest | first }}", "", "2"),
    (r#"{{ regexSplit "/" "foo/bar/baz" -1 | rest }}"#, "", "[bar baz]"),
    ("{{ list 1 2 3 4 | reverse }}", "", "[4 3 2 1]"),
    ("{{ list | reverse }}", "", "[]"),
    (r#"{{ list 1 0 "" "hello" | compact }}"#, "", "[1 hello]"),
    (r#"{{ regexSplit "/" "foo//bar" -1 | compact }}"#, "", "[foo bar]"),
    ("{{ list 1 1 1 1 2 2 2 2 | uniq }}", "", "[1 2]"),
    (r#"{{ list "foo" 1 1 1 1 "foo" "foo" | uniq }}"#, "", "[foo 1]"),
    ("{{ without (list 1 2 3 4) 1 }}", "", "[2 3 4]"),
    ("{{ without (list 1 1 1 1 2) 1 }}", "", "[2]"),
    ("{{ without list }}", "", "[]"),
    ("{{ list 1 2 3 | has 1 }}", "", "true"),
    ("{{ list 1 2 3 | has 4 }}", "", "false"),
    (r#"{{ has "bar" nil }}"#, "", "false"),
    ("{{ slice (list 1 2 3) }}", "", "[1 2 3]"),
    ("{{ slice (list 1 2 3) 1 3 }}", "", "[2 3]"),
    ("{{ slice (list 1 2 3) 1 }}", "", "[2 3]"),
    (r#"{{ slice (regexSplit "/" "foo/bar/baz" -1) 1 2 }}"#, "", "[bar]"),
    ("{{ concat (list 1 2 3) (list 4 5) (list) }}", "", "[1 2 3 4 5]"),
    ("{{ concat (list 1 2 3) (list 4 5) (list nil) }}", "", "[1 2 3 4 5 <nil>]"),
    (r#"{{ concat (list 1 2 3) (list 4 5) (list ( list "foo" ) ) }}"#, "", "[1 2 3 4 5 [foo]]"),
    // dict_test.go
    (r#"{{$t := dict "I" "shot" "the" "albatross"}}{{$t.the}} {{$t.I}}"#, "", "albatross shot"),
    (r#"{{$d := dict 1 2 "three" "four" 5}}{{range $k, $v := $d}}{{$k}}{{$v}}{{end}}"#, "", "125threefour"),
    (r#"{{ dict "foo" 1 "bar" 2 | keys | sortAlpha }}"#, "", "[bar foo]"),
    ("{{ dict | keys }}", "", "[]"),
    (r#"{{ keys (dict "foo" 1) (dict "bar" 2) (dict "bar" 3) | uniq | sortAlpha }}"#, "", "[bar foo]"),
    (r#"{{- $d := dict "one" 1 "two" 222222 }}{{ pick $d "two" -}}"#, "", "map[two:222222]"),
    (r#"{{- $d := dict "one" 1 "two" 222222 }}{{ pick $d "one" "two" "three" | len -}}"#, "", "2"),
    (r#"{{- $d := dict "one" 1 "two" 222222 }}{{ omit $d "one" -}}"#, "", "map[two:222222]"),
    (r#"{{- $d := dict "one" 1 }}{{ get $d "one" -}}"#, "", "1"),
    (r#"{{- $d := dict }}{{ get $d "two" -}}"#, "", ""),
    (
        r#"{{- $d := dict "one" 1 "two" 222222 -}}{{- $_ := set $d "three" 3 -}}{{- if hasKey $d "three" -}}{{$d.three}}{{- end -}}"#,
        "",
        "3",
    ),
    (
        r#"{{- $d := dict "one" 1 "two" 222222 -}}{{- $_ := unset $d "two" -}}{{- range $k, $v := $d}}{{$k}}{{$v}}{{- end -}}"#,
        "",
        "one1",
    ),
    (r#"{{- $d := dict "a" 1 "b" 2 }}{{ values $d | sortAlpha | join "," }}"#, "", "1,2"),
    (r#"{{- $d1 := dict "a" 1 }}{{- $d2 := dict "a" 2 }}{{ pluck "a" $d1 $d2 }}"#, "", "[1 2]"),
    (r#"{{ dict "a" (dict "b" (dict "c" 1)) | dig "a" "b" "c" "d" }}"#, "", "1"),
    (r#"{{ dict "a" (dict "b" 1) | dig "a" "x" "default" }}"#, "", "default"),
    (
        "{{merge .dst .src1 .src2 | toJson}}",
        r#"{"src2": {"h": 10, "i": "i", "j": "j"}, "src1": {"a": 1, "b": 2, "d": {"e": "four"}, "g": [6, 7], "i": "aye", "j": "jay", "k": {"l": false}}, "dst": {"a": "one", "c": 3, "d": {"f": 5}, "g": [8, 9], "i": "eye", "k": {"l": true}}}"#,
        r#"{"a":"one","b":2,"c":3,"d":{"e":"four","f":5},"g":[8,9],"h":10,"i":"eye","j":"jay","k":{"l":true}}"#,
    ),
    (
        "{{mergeOverwrite .dst .src1 .src2 | toJson}}",
        r#"{"src2": {"h": 10, "i": "i", "j": "j"}, "src1": {"a": 1, "b": 2, "d": {"e": "four"}, "g": [6, 7], "i": "aye", "j": "jay", "k": {"l": false}}, "dst": {"a": "one", "c": 3, "d": {"f": 5}, "g": [8, 9], "i": "eye", "k": {"l": true}}}"#,
        r#"{"a":1,"b":2,"c":3,"d":{"e":"four","f":5},"g":[6,7],"h":10,"i":"i","j":"j","k":{"l":false}}"#,
    ),
    // defaults_test.go
    (r#"{{"" | default "foo"}}"#, "", "foo"),
    (r#"{{default "foo" 234}}"#, "", "234"),
    (r#"{{default "foo" 2.34}}"#, "", "2.34"),
    (r#"{{ .Nothing | default "123" }}"#, "", "123"),
    (r#"{{ default "123" }}"#, "", "123"),
    ("{{if empty 1}}1{{else}}0{{end}}", "", "0"),
    ("{{if empty 0}}1{{else}}0{{end}}", "", "1"),
    (r#"{{if empty ""}}1{{else}}0{{end}}"#, "", "1"),
    ("{{if empty 0.0}}1{{else}}0{{end}}", "", "1"),
    ("{{if empty false}}1{{else}}0{{end}}", "", "1"),
    ("{{if empty .top.NoSuchThing}}1{{else}}0{{end}}", r#"{"top": {}}"#, "1"),
    ("{{if empty .bottom.NoSuchThing}}1{{else}}0{{end}}", r#"{"top": {}}"#, "1"),
    ("{{ coalesce 1 }}", "", "1"),
    (r#"{{ coalesce "" 0 nil 2 }}"#, "", "2"),
    (r#"{{ $two := 2 }}{{ coalesce "" $two 0 0 0 }}"#, "", "2"),
    ("{{ coalesce }}", "", "<no value>"),
    (r#"{{ coalesce .top.NoSuchThing .bottom .bottom.dollar "airplane"}}"#, r#"{"top": {}}"#, "airplane"),
    ("{{ all 1 }}", "", "true"),
    (r#"{{ all "" 0 nil 2 }}"#, "", "false"),
    ("{{ all }}", "", "true"),
    (r#"{{ all .top.NoSuchThing .bottom .bottom.dollar "airplane"}}"#, r#"{"top": {}}"#, "false"),
    ("{{ any 1 }}", "", "true"),
    (r#"{{ any "" 0 nil 2 }}"#, "", "true"),
    (r#"{{ $zero := 0 }}{{ any "" $zero 0 0 0 }}"#, "", "false"),
    ("{{ any }}", "", "false"),
    ("{{.Input | fromJson}}", r#"{"Input": "{\"foo\": 55}"}"#, "map[foo:55]"),
    ("{{(.Input | fromJson).foo}}", r#"{"Input": "{\"foo\": 55}"}"#, "55"),
    (
        "{{.Top | toJson}}",
        r#"{"Top": {"bool": true, "string": "test", "number": 42}}"#,
        r#"{"bool":true,"number":42,"string":"test"}"#,
    ),
    (
        "{{.Top | toPrettyJson}}",
        r#"{"Top": {"bool": true, "string": "test", "number": 42}}"#,
        "{\n  \"bool\": true,\n  \"number\": 42,\n  \"string\": \"test\"\n}",
    ),
    (
        "{{.Top | toRawJson}}",
        r#"{"Top": {"bool": true, "string": "test", "number": 42, "html": "<HEAD>"}}"#,
        r#"{"bool":true,"html":"<HEAD>","number":42,"string":"test"}"#,
    ),
    (r#"{{true | ternary "foo" "bar"}}"#, "", "foo"),
    (r#"{{ternary "foo" "bar" false}}"#, "", "bar"),
    // numeric_test.go
    ("{{range $i, $e := until 5}}{{$i}}{{$e}}{{end}}", "", "0011223344"),
    ("{{range $i, $e := until -5}}{{$i}}{{$e}} {{end}}", "", "00 1-1 2-2 3-3 4-4 "),
    ("{{range $i, $e := untilStep 3 6 1}}{{$i}}{{$e}}{{end}}", "", "031425"),
    ("{{range $i, $e := untilStep 0 -10 -2}}{{$i}}{{$e}} {{end}}", "", "00 1-2 2-4 3-6 4-8 "),
    ("{{range $i, $e := untilStep 3 0 1}}{{$i}}{{$e}}{{end}}", "", ""),
    ("{{ biggest 1 2 3 345 5 6 7}}", "", "345"),
    ("{{ maxf 1 2 3 345.7 5 6 7}}", "", "345.7"),
    ("{{ min 1 2 3 345 5 6 7}}", "", "1"),
    ("{{ minf 1.4 2 3 345.6 5 6 7}}", "", "1.4"),
    ("{{ 3 | add1 }}", "", "4"),
    ("{{ 3.4 | add1f }}", "", "4.4"),
    ("{{ 3 | add 1 2}}", "", "6"),
    ("{{ 3 | addf 1.5 2.2}}", "", "6.7"),
    ("{{ 4 | div 5 }}", "", "1"),
    ("{{ 2 | divf 5 4 }}", "", "0.625"),
    (r#"{{ 1 | mul "2" 3 "4"}}"#, "", "24"),
    (r#"{{ 1.2 | mulf "2.4" 10 "4"}}"#, "", "115.2"),
    ("{{ 3 | sub 14 }}", "", "11"),
    ("{{ 3 | subf 4.5 1 }}", "", "0.5"),
    (r#"{{ ceil 123.01 }} {{ ceil "123" }} {{ floor 123.9999 }} {{ floor "123.9999" }}"#, "", "124 123 123 123"),
    ("{{ round 123.5555 3 }} {{ round 123.500001 0 }} {{ round 123.49999999 0 }}", "", "123.556 124 123"),
    ("{{ round 123.2329999 2 .3 }} {{ round 123.233 2 .3 }}", "", "123.23 123.24"),
    ("{{seq 0 1 3}}", "", "0 1 2 3"),
    ("{{seq 0 3 10}}", "", "0 3 6 9"),
    ("{{seq 3 3 2}}", "", ""),
    ("{{seq 3 -3 2}}", "", "3"),
    ("{{seq}}", "", ""),
    ("{{seq 5}}", "", "1 2 3 4 5"),
    ("{{seq -5}}", "", "1 0 -1 -2 -3 -4 -5"),
    ("{{seq 0}}", "", "1 0"),
    ("{{seq 0 1 2 3}}", "", ""),
    ("{{seq 0 -4}}", "", "0 -1 -2 -3 -4"),
    (r#"{{ toDecimal "777" }} {{ toDecimal 777 }}"#, "", "511 511"),
    (r#"{{ int "12abc" }} {{ int "12" }} {{ int64 "0x1F" }} {{ int 3.9 }} {{ int "10.00" }}"#, "", "0 12 31 3 10"),
    (r#"{{ float64 "3.5" }} {{ atoi "42" }} {{ atoi "4x" }}"#, "", "3.5 42 0"),
    // regex_test.go
    (r#"{{ regexMatch "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$" "test@acme.com" }}"#, "", "true"),
    (r#"{{ regexFindAll "a{2}" "aaaa" -1 | len }} {{ regexFindAll "a{2}" "aaaaaaaa" 1 | len }}"#, "", "2 1"),
    (r#"{{ regexFind "fo.?" "foo foe fome" }}"#, "", "foo"),
    (r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "T" }}"#, "", "-T-T-"),
    (r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "$1" }}"#, "", "--xx-"),
    (r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "$1W" }}"#, "", "---"),
    (r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}"#, "", "-W-xxW-"),
    (r#"{{ regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }}"#, "", "-${1}-${1}-"),
    (
        r#"{{ regexSplit "a" "banana" -1 | len }} {{ regexSplit "a" "banana" 0 | len }} {{ regexSplit "a" "banana" 2 | len }}"#,
        "",
        "4 0 2",
    ),
    (r#"{{ regexSplit "z+" "pizza" -1 | len }} {{ regexSplit "z+" "pizza" 1 | len }}"#, "", "2 1"),
    (r#"{{ regexQuoteMeta "1.2.3" }}"#, "", r"1\.2\.3"),
    // semver_test.go
    (r#"{{ semverCompare "1.2.3" "1.2.3" }}"#, "", "true"),
    (r#"{{ semverCompare "^1.2.0" "1.2.3" }}"#, "", "true"),
    (r#"{{ semverCompare "^1.2.0" "2.2.3" }}"#, "", "false"),
    (r#"{{ $s := semver "1.2.3-beta.1+c0ff33" }}{{ $s.Prerelease }}"#, "", "beta.1"),
    (r#"{{ $s := semver "1.2.3-beta.1+c0ff33" }}{{ $s.Major}}"#, "", "1"),
    (r#"{{ semver "1.2.3" | (semver "1.2.3").Compare }}"#, "", "0"),
    (r#"{{ semver "1.2.3" | (semver "1.3.3").Compare }}"#, "", "1"),
    (r#"{{ semver "1.4.3" | (semver "1.2.3").Compare }}"#, "", "-1"),
    (r#"{{ semverCompare ">=1.19-0" "v1.29.0" }} {{ semverCompare ">=1.19-0" "v1.18.3-gke.1" }}"#, "", "true false"),
    (
        r#"{{ semverCompare "~1.2.x" "1.2.9" }} {{ semverCompare "1.2 - 1.4" "1.3.7" }} {{ semverCompare "<1.0 || >=2.0" "1.5.0" }}"#,
        "",
        "true true false",
    ),
    // url_test.go
    (r#"{{ index ( urlParse "proto://auth@host:80/path?query#fragment" ) "host" }}"#, "", "host:80"),
    (
        r#"{{ urlParse "proto://host:80/pa%20th?key=val%20ue" | toJson }}"#,
        "",
        r#"{"fragment":"","host":"host:80","hostname":"host","opaque":"","path":"/pa th","query":"key=val%20ue","scheme":"proto","userinfo":""}"#,
    ),
    (
        r#"{{ urlJoin (dict "fragment" "fragment" "host" "host:80" "path" "/path" "query" "query" "scheme" "proto") }}"#,
        "",
        "proto://host:80/path?query#fragment",
    ),
    (
        r#"{{ urlJoin (dict "fragment" "fragment" "host" "host:80" "path" "/path" "scheme" "proto" "userinfo" "ASDJKJSD") }}"#,
        "",
        "proto://ASDJKJSD@host:80/path#fragment",
    ),
    // date_test.go (times as Unix seconds, zones explicit, so output is the machine's neither)
    (r#"{{toDate "2006-01-02" "2017-12-31" | date "02/01/2006"}}"#, "", "31/12/2017"),
    (r#"{{ dateInZone "02 Jan 06 15:04 -0700" (int64 1000000000) "UTC" }}"#, "", "09 Sep 01 01:46 +0000"),
    (
        r#"{{ dateInZone "2006-01-02T15:04:05Z07:00 Mon January" (int64 1000000000) "foobar" }}"#,
        "",
        "2001-09-09T01:46:40Z Sun September",
    ),
    (r#"{{ toDate "2006-01-02 15:04:05 -0700" "2021-03-04 05:06:07 +0200" | unixEpoch }}"#, "", "1614827167"),
    (
        r#"{{ toDate "2006-01-02 15:04:05 -0700" "2021-03-04 05:06:07 +0200" | dateModify "24h" | unixEpoch }}"#,
        "",
        "1614913567",
    ),
    (r#"{{ duration "95" }} {{ durationRound "2h10m5s" }} {{ durationRound "3600s" }}"#, "", "1m35s 2h 60m"),
    // reflect_test.go, crypto_test.go (hashes)
    (
        r#"{{ typeOf "x" }} {{ typeOf 1 }} {{ typeOf 1.5 }} {{ typeOf (list) }} {{ typeOf (dict) }} {{ typeOf (add 1 2) }}"#,
        "",
        "string int float64 []interface {} map[string]interface {} int64",
    ),
    (
        r#"{{ kindOf (list) }} {{ kindIs "map" (dict) }} {{ typeIs "string" "x" }} {{ typeIsLike "string" "x" }}"#,
        "",
        "slice true true true",
    ),
    (r#"{{ deepEqual (list 1 2) (list 1 2) }} {{ deepEqual 1 1.0 }}"#, "", "true false"),
    (r#"{{ sha1sum "abc" }}"#, "", "a9993e364706816aba3e25717850c26c9cd0d89d"),
    (r#"{{ sha256sum "abc" }}"#, "", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    (r#"{{ adler32sum "Wikipedia" }}"#, "", "300286872"),
    (
        r#"{{ base "/a/b.txt" }} {{ dir "/a/b.txt" }} {{ ext "b.tar.gz" }} {{ clean "a//b/../c/." }} {{ isAbs "/a" }}"#,
        "",
        "b.txt /a .gz a/c true",
    ),
];

#[test]
fn sprig_cases() {
    let mut failures = Vec::new();
    for (template, json, want) in CASES {
        match render(template, &data(json)) {
            Ok(got) if got == *want => {}
            other => failures.push(format!("{template}\n  data {json}\n  want {want:?}\n  got  {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{} of {} sprig cases fail:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}

/// (template, text the error must contain).
const ERRORS: &[(&str, &str)] = &[
    (r#"{{ fail "This is an error" }}"#, "error calling fail: This is an error"),
    (r#"{{ semverCompare "badConstraint" "1.2.3" }}"#, "improper constraint: badConstraint"),
    (r#"{{ semverCompare "1.2.0" "badVersion" }}"#, "Invalid Semantic Version"),
    (r#"{{ must_date_modify "1f" now }}"#, "time: unknown unit \"f\" in duration \"1f\""),
    ("{{ first .missing }}", "error calling first: runtime error: invalid memory address or nil pointer dereference"),
    (r#"{{ first "abc" }}"#, "error calling first: Cannot find first on type string"),
    (r#"{{ trunc "3" "abc" }}"#, "expected integer; found \"3\""),
    ("{{ upper .n }}", "wrong type for value; expected string; got float64"),
    (r#"{{ mustRegexMatch "(" "x" }}"#, "error parsing regexp"),
    ("{{ div 1 0 }}", "integer divide by zero"),
    (r#"{{ getHostByName "example.com" }}"#, "getHostByName is not supported"),
];

#[test]
fn sprig_errors() {
    let mut failures = Vec::new();
    for (template, want) in ERRORS {
        match render(template, &data(r#"{"n": 1}"#)) {
            Err(e) if e.contains(want) => {}
            other => failures.push(format!("{template}: want error containing {want:?}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn random_functions_have_the_asked_length_and_alphabet() {
    let out = render(
        // Lines apart: printable ASCII (randAscii) has every other separator.
        "{{randAlphaNum 5}}\n{{randAlpha 6}}\n{{randNumeric 7}}\n{{randAscii 8}}\n{{uuidv4}}\n{{randInt 3 5}}",
        &Value::Nil,
    )
    .unwrap();
    let parts: Vec<&str> = out.split('\n').collect();
    assert!(parts[0].len() == 5 && parts[0].chars().all(|c| c.is_ascii_alphanumeric()), "{out}");
    assert!(parts[1].len() == 6 && parts[1].chars().all(|c| c.is_ascii_alphabetic()), "{out}");
    assert!(parts[2].len() == 7 && parts[2].chars().all(|c| c.is_ascii_digit()), "{out}");
    assert!(parts[3].len() == 8 && parts[3].chars().all(|c| (' '..='~').contains(&c)), "{out}");
    assert!(uuid::Uuid::parse_str(parts[4]).is_ok_and(|u| u.get_version_num() == 4), "{out}");
    assert!(matches!(parts[5], "3" | "4"), "{out}");
    let shuffled = render(r#"{{ shuffle "abcdef" }}"#, &Value::Nil).unwrap();
    let mut sorted: Vec<char> = shuffled.chars().collect();
    sorted.sort();
    assert_eq!(sorted.into_iter().collect::<String>(), "abcdef");
}

#[test]
fn set_changes_the_dict_every_holder_sees() {
    let values = data(r#"{"a": {"b": 1}}"#);
    let out = render(r#"{{ $_ := set .a "c" 2 }}{{ .a.c }} {{ $d := .a }}{{ $_ := unset $d "b" }}{{ .a }}"#, &values)
        .unwrap();
    assert_eq!(out, "2 map[c:2]");
}

#[test]
fn json_numbers_print_as_go_prints_float64() {
    let values = data(r#"{"port": 8080, "ratio": 0.5, "big": 1e21, "tiny": 1e-7}"#);
    let out = render("{{ .port }} {{ toJson . }} {{ .big }}", &values).unwrap();
    assert_eq!(out, r#"8080 {"big":1e+21,"port":8080,"ratio":0.5,"tiny":1e-7} 1e+21"#);
}
