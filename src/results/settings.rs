//! A sweep's study as its results file remembers it: the settings that
//! define its points, typed by the command that wrote them (every field,
//! defaults included), so that `--resume` compares them field by field and
//! continues a study from the file alone. Files from before typed studies
//! kept the command line's study arguments instead; they still read.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Study {
    /// Each setting by name, as the command's settings type serializes.
    Settings(Map<String, Value>),
    /// Schema 1 before typed studies: the study's command-line arguments.
    Args(Vec<String>),
}

/// One setting that differs between two studies: its name, and its value
/// in each, as people read them.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub setting: String,
    pub here: String,
    pub there: String,
}

impl Study {
    /// The study of typed settings `T`.
    pub fn of<T: Serialize>(settings: &T) -> Study {
        match serde_json::to_value(settings) {
            Ok(Value::Object(map)) => Study::Settings(map),
            _ => Study::Settings(Map::new()),
        }
    }

    /// The stored settings as `T`; `None` for a study of arguments (read
    /// those by the command's own parser), an error naming the setting
    /// that does not read.
    pub fn settings<T: DeserializeOwned>(&self) -> Option<Result<T, String>> {
        let Study::Settings(map) = self else {
            return None;
        };
        let value = Value::Object(map.clone());
        Some(
            serde_path_to_error::deserialize(value)
                .map_err(|e| format!("setting {}: {}", e.path(), e.inner())),
        )
    }

    /// These settings over `base`'s: a study stored before a setting
    /// existed takes that setting's value (its default) from `base`.
    pub fn over(&self, base: &Study) -> Study {
        match (self, base) {
            (Study::Settings(own), Study::Settings(base)) => {
                let mut merged = base.clone();
                merged.extend(own.clone());
                Study::Settings(merged)
            }
            _ => self.clone(),
        }
    }

    /// Every setting whose value differs, by name.
    pub fn differences(&self, there: &Study) -> Vec<Difference> {
        let empty = Map::new();
        let map = |s: &Study| match s {
            Study::Settings(m) => m.clone(),
            Study::Args(_) => empty.clone(),
        };
        let (a, b) = (map(self), map(there));
        let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        names
            .into_iter()
            .filter(|n| a.get(*n) != b.get(*n))
            .map(|n| Difference {
                setting: n.clone(),
                here: shown(a.get(n)),
                there: shown(b.get(n)),
            })
            .collect()
    }
}

/// A setting's value as people read it: `2`, `auto`, `copy,triad`, `(none)`.
fn shown(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "(none)".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) if items.is_empty() => "(none)".into(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| shown(Some(i)))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Axes {
        threads: Option<String>,
        stores: Vec<String>,
        ntimes: u32,
    }

    #[test]
    fn settings_round_trip_and_differ_by_name() {
        let a = Axes {
            threads: Some("2".into()),
            stores: vec!["auto".into()],
            ntimes: 10,
        };
        let b = Axes {
            threads: Some("1".into()),
            stores: vec!["regular".into()],
            ntimes: 10,
        };
        let (sa, sb) = (Study::of(&a), Study::of(&b));
        let text = serde_json::to_string(&sa).unwrap();
        let back: Study = serde_json::from_str(&text).unwrap();
        assert_eq!(back.settings::<Axes>().unwrap().unwrap(), a);
        let d = sa.differences(&sb);
        let names: Vec<&str> = d.iter().map(|d| d.setting.as_str()).collect();
        assert_eq!(names, ["stores", "threads"]);
        assert_eq!(
            (d[0].here.as_str(), d[0].there.as_str()),
            ("auto", "regular")
        );
        assert!(sa.differences(&Study::of(&a)).is_empty());
        // A file's arguments (schema 1) read as arguments.
        let old: Study = serde_json::from_str(r#"["--threads","1"]"#).unwrap();
        assert_eq!(old, Study::Args(vec!["--threads".into(), "1".into()]));
        assert!(old.settings::<Axes>().is_none());
        // A study from before a setting existed takes its default.
        let older: Study = serde_json::from_str(r#"{"threads":"2","stores":["auto"]}"#).unwrap();
        assert!(older.settings::<Axes>().unwrap().is_err());
        let filled = older.over(&sb).settings::<Axes>().unwrap().unwrap();
        assert_eq!((filled.threads.as_deref(), filled.ntimes), (Some("2"), 10));
        // A setting that does not read is named.
        let bad: Study =
            serde_json::from_str(r#"{"threads":null,"stores":[],"ntimes":"x"}"#).unwrap();
        assert!(
            bad.settings::<Axes>()
                .unwrap()
                .unwrap_err()
                .contains("ntimes")
        );
    }
}
