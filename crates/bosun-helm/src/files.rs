//! `.Files`: a chart's other files as templates see them, with Helm's helpers. Output formats
//! are Helm's: `AsConfig`/`AsSecrets` print a YAML mapping of base names (with `toYaml`'s
//! formatting), `Lines` drops one final line break.

use base64::Engine;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::chart::File;
use crate::yaml;
use bosun_glob::Pattern;

/// A chart's files by name (`files/a.txt`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Files {
    files: BTreeMap<String, Vec<u8>>,
}

impl Files {
    /// The files of a chart (its `files` field: everything but templates, values, schema,
    /// `Chart.yaml`, locks and subcharts).
    pub(crate) fn new(files: &[File]) -> Files {
        Files { files: files.iter().map(|f| (f.name.clone(), f.data.clone())).collect() }
    }

    /// The names, sorted.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// `.Files.GetBytes`: the content, empty when absent.
    pub(crate) fn get_bytes(&self, name: &str) -> &[u8] {
        self.files.get(name).map_or(&[], Vec::as_slice)
    }

    /// `.Files.Get`: the content as text (invalid UTF-8 replaced), empty when absent.
    pub(crate) fn get(&self, name: &str) -> String {
        String::from_utf8_lossy(self.get_bytes(name)).into_owned()
    }

    /// `.Files.Glob`: the files whose names match a gobwas/glob pattern (`*` within a
    /// segment, `**` across); a malformed pattern matches everything, as in Helm.
    pub(crate) fn glob(&self, pattern: &str) -> Files {
        let matcher = Pattern::glob(pattern).ok();
        Files {
            files: self
                .files
                .iter()
                .filter(|(name, _)| matcher.as_ref().is_none_or(|m| m.matches(name)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    fn by_base_name(&self, encode: impl Fn(&[u8]) -> String) -> String {
        // Two files with one base name: the later name wins (Helm's choice is random).
        let mut map = Map::new();
        for (name, data) in &self.files {
            let base = name.rsplit('/').next().unwrap_or(name);
            map.insert(base.to_string(), Value::String(encode(data)));
        }
        yaml::to_yaml(&Value::Object(map))
    }

    /// `.Files.AsConfig`: `base name: content` as YAML, for a ConfigMap's `data`.
    pub(crate) fn as_config(&self) -> String {
        self.by_base_name(|data| String::from_utf8_lossy(data).into_owned())
    }

    /// `.Files.AsSecrets`: `base name: base64(content)` as YAML, for a Secret's `data`.
    pub(crate) fn as_secrets(&self) -> String {
        self.by_base_name(|data| base64::engine::general_purpose::STANDARD.encode(data))
    }

    /// `.Files.Lines`: the lines of a file (one final line break dropped); none when the
    /// file is absent or empty.
    pub(crate) fn lines(&self, name: &str) -> Vec<String> {
        let text = self.get(name);
        if text.is_empty() {
            return Vec::new();
        }
        text.strip_suffix('\n').unwrap_or(&text).split('\n').map(str::to_string).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Files {
        let file = |name: &str, data: &str| File { name: name.into(), data: data.as_bytes().to_vec() };
        Files::new(&[
            file("ship/captain.txt", "The Captain"),
            file("ship/stowaway.txt", "Legatt"),
            file("story/name.txt", "The Secret Sharer"),
            file("story/author.txt", "Joseph Conrad"),
            file("multiline/test.txt", "bar\nfoo\n"),
            file("multiline/test_with_blank_lines.txt", "bar\nfoo\n\n\n"),
        ])
    }

    /// Cases from Helm's `pkg/engine/files_test.go`.
    #[test]
    fn files_helpers_as_helm() {
        let f = files();
        assert_eq!(f.get("ship/captain.txt"), "The Captain");
        assert_eq!(f.get("missing"), "");
        assert_eq!(f.get_bytes("story/author.txt"), b"Joseph Conrad");
        let story = f.glob("story/**");
        assert_eq!(story.names().collect::<Vec<_>>(), ["story/author.txt", "story/name.txt"]);
        assert_eq!(f.glob("ship/*").as_config(), "captain.txt: The Captain\nstowaway.txt: Legatt");
        assert_eq!(f.glob("ship/**").as_secrets(), "captain.txt: VGhlIENhcHRhaW4=\nstowaway.txt: TGVnYXR0");
        assert_eq!(f.lines("multiline/test.txt"), ["bar", "foo"]);
        assert_eq!(f.lines("multiline/test_with_blank_lines.txt"), ["bar", "foo", "", ""]);
        assert!(f.lines("missing").is_empty());
        assert_eq!(f.glob("[").names().count(), 6, "a bad pattern matches everything");
        assert_eq!(f.glob("none/*").as_config(), "{}");
    }

    #[test]
    fn multiline_content_is_a_block() {
        assert_eq!(files().glob("multiline/test.txt").as_config(), "test.txt: |\n  bar\n  foo");
    }
}
