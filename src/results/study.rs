//! A sweep's study as its results file remembers it: [`SweepStudy`], the
//! settings that define its points (every one, defaults included), typed
//! here rather than by the command line that took them, so that `--resume`
//! compares two studies field by field and continues one from the file
//! alone. Files from before typed studies kept the command line's
//! arguments, or settings since retired or written in older shapes; they
//! convert on read ([`SweepStudy::read`]).

use crate::kernels::KernelId;
use crate::memory::Hugepages;
use crate::placement::omp::Bind;
use crate::units::ArraySize;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A setting that became an axis: one value (a scalar, as files from
/// before the axis hold it) or several (a list), each a point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    /// Its values, as a list.
    pub fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(value) => vec![value],
            OneOrMany::Many(values) => values,
        }
    }
}

/// No value given: the setting's default, once (offset 0).
impl<T: Default> Default for OneOrMany<T> {
    fn default() -> Self {
        OneOrMany::One(T::default())
    }
}

/// What defines a sweep's points, as the user asked for them: its axes
/// (each a list of the values written, which the topology of the host
/// resolves), what each point runs and how often. Where results go, how
/// they are shown, the peak they are held against and how long a foreign
/// program may run are not part of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepStudy {
    /// Thread counts, lists and ranges as written (`1-8`, `all`).
    #[serde(deserialize_with = "lists::written")]
    pub threads: Vec<String>,
    /// Placement strategies (compact, spread, ...).
    #[serde(deserialize_with = "lists::comma_separated")]
    pub strategy: Vec<String>,
    /// CPU lists, each a point.
    pub cpus: Vec<String>,
    /// OpenMP place lists, each a point, and the binding that goes with them.
    pub places: Vec<String>,
    pub bind: Option<Bind>,
    /// likwid-pin expressions, each a point.
    pub pin: Vec<String>,
    pub gomp_affinity: Vec<String>,
    pub kmp_affinity: Vec<String>,
    /// Threads left unbound at every point (`--no-pin`; files from before
    /// it read as false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_pin: bool,
    /// Whether placements may use SMT siblings.
    pub smt: bool,
    /// Only CPUs of these nodes (a node list).
    pub cpunode: Option<String>,
    /// The NUMA matrix's cells: single, all or both.
    pub numa_matrix: Option<String>,
    /// Working-set sizes in bytes, each a point.
    pub sizes: Option<Vec<u64>>,
    /// The tier study: far shares in %, the far node and the near one.
    pub far_share: Vec<f64>,
    pub far_node: Option<usize>,
    pub near_node: Option<usize>,
    /// Programs measured at every point (`LABEL=PROGRAM ARGS`, `membw`).
    pub exec: Vec<String>,
    pub kernels: Vec<KernelId>,
    /// Independent runs per point.
    pub repeat: u32,
    /// Array size of every point (unless `sizes` makes it an axis).
    pub size: Option<ArraySize>,
    /// Timed repetitions per run.
    pub ntimes: u32,
    /// Memory policies as written (numactl's words, membw's splits), each a point.
    pub mem: Vec<String>,
    /// One ISA, as every study wrote it before ISA sweeps, or several.
    pub isa: OneOrMany<String>,
    pub stores: Vec<String>,
    pub hugepages: Vec<Hugepages>,
    /// STREAM's OFFSETs between the arrays, in elements, each a point
    /// (files from before it read as 0; one as the number it always was).
    #[serde(default, skip_serializing_if = "no_offset")]
    pub offset: OneOrMany<usize>,
    /// Where a device's arrays lived, each a point (files from before it
    /// read as device memory; one as its name).
    #[serde(default, skip_serializing_if = "device_memory_only")]
    pub gpu_memory: OneOrMany<crate::memory::gpu_memory::GpuMemory>,
    /// A weighted-interleave weight list.
    pub weights: Option<String>,
    /// A fake measurement source (tests) and the backend.
    pub fake_source: Option<String>,
    pub backend: String,
    /// Whether each point runs in a process of its own.
    pub independent: bool,
}

fn no_offset(offsets: &OneOrMany<usize>) -> bool {
    *offsets == OneOrMany::One(0)
}

fn device_memory_only(places: &OneOrMany<crate::memory::gpu_memory::GpuMemory>) -> bool {
    *places == OneOrMany::default()
}

/// Settings that earlier studies stored and that no longer define a
/// point: the peak rates are held against (`--peak`), how long a foreign
/// program may run (`--timeout`). Read, they are dropped.
const RETIRED: [&str; 2] = ["peak", "timeout"];

/// Settings a study writes only where they are not their default (so the
/// studies of files from before them stay the same): known, though the
/// defaults' study does not hold them.
const WRITTEN_WHEN_SET: [&str; 3] = ["no_pin", "offset", "gpu_memory"];

impl SweepStudy {
    /// The study as a record stores it.
    pub fn stored(&self) -> Study {
        Study::of(self)
    }

    /// A stored study as typed settings: the settings it lacks (added since
    /// it was written) take their value from `defaults`, retired ones are
    /// dropped, older shapes are read as today's. `None` for a study of
    /// command-line arguments, which only the command's own parser reads;
    /// an error naming the setting that does not read.
    pub fn read(stored: &Study, defaults: &SweepStudy) -> Option<Result<SweepStudy, String>> {
        let (Study::Settings(own), base) = (stored, defaults.stored()) else {
            return None;
        };
        let Study::Settings(known) = &base else {
            return None;
        };
        let own: Map<String, Value> = (own.iter())
            .filter(|(name, _)| !RETIRED.contains(&name.as_str()))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let known = |name: &str| known.contains_key(name) || WRITTEN_WHEN_SET.contains(&name);
        if let Some(name) = own.keys().find(|name| !known(name)) {
            return Some(Err(format!(
                "setting {name}: not one this membw knows (written by a newer membw?)"
            )));
        }
        Study::Settings(own).over(&base).settings()
    }

    /// The study of a command's settings, which must name exactly these
    /// (by serde); an error names the first that differs.
    pub fn from_settings<T: Serialize>(settings: &T) -> Result<SweepStudy, String> {
        (Study::of(settings).settings()).unwrap_or_else(|| Err("not settings".into()))
    }

    /// The study as a command's settings `T` (by serde).
    pub fn settings<T: DeserializeOwned>(&self) -> Result<T, String> {
        (self.stored().settings()).unwrap_or_else(|| Err("not settings".into()))
    }

    /// Every setting whose value differs from `there`'s, by name.
    pub fn differences(&self, there: &SweepStudy) -> Vec<Difference> {
        self.stored().differences(&there.stored())
    }
}

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
    fn of<T: Serialize>(settings: &T) -> Study {
        match serde_json::to_value(settings) {
            Ok(Value::Object(map)) => Study::Settings(map),
            _ => Study::Settings(Map::new()),
        }
    }

    /// The stored settings as `T`; `None` for a study of arguments (read
    /// those by the command's own parser), an error naming the setting
    /// that does not read.
    fn settings<T: DeserializeOwned>(&self) -> Option<Result<T, String>> {
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
    fn over(&self, base: &Study) -> Study {
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
    fn differences(&self, there: &Study) -> Vec<Difference> {
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
        // A value of one kind, as `{"elements": 1000000}`: `1000000 elements`.
        Some(Value::Object(one)) if one.len() == 1 => (one.iter())
            .map(|(kind, value)| format!("{} {kind}", shown(Some(value))))
            .collect(),
        Some(other) => other.to_string(),
    }
}

/// Older studies wrote some axes as one text before every axis took
/// repeats: read those as the lists they are.
mod lists {
    use super::OneOrMany;
    use serde::{Deserialize, Deserializer};

    fn read<'de, D: Deserializer<'de>>(d: D, split: bool) -> Result<Vec<String>, D::Error> {
        Ok(match Option::<OneOrMany<String>>::deserialize(d)? {
            None => Vec::new(),
            Some(OneOrMany::Many(v)) => v,
            Some(OneOrMany::One(s)) if split => s.split(',').map(str::to_string).collect(),
            Some(OneOrMany::One(s)) => vec![s],
        })
    }

    /// `"1-8"` (one list of counts) or `["1-8", "16"]`.
    pub fn written<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        read(d, false)
    }

    /// `"compact,spread"` or `["compact", "spread"]`.
    pub fn comma_separated<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        read(d, true)
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

    /// Today's defaults of `membw sweep`, as the CLI makes them.
    fn defaults() -> SweepStudy {
        SweepStudy {
            threads: vec![],
            strategy: vec![],
            cpus: vec![],
            places: vec![],
            bind: None,
            pin: vec![],
            gomp_affinity: vec![],
            kmp_affinity: vec![],
            no_pin: false,
            smt: false,
            cpunode: None,
            numa_matrix: None,
            sizes: None,
            far_share: vec![],
            far_node: None,
            near_node: None,
            exec: vec![],
            kernels: vec![
                KernelId::Copy,
                KernelId::Scale,
                KernelId::Add,
                KernelId::Triad,
            ],
            repeat: 1,
            size: None,
            ntimes: 10,
            mem: vec![],
            isa: OneOrMany::One("auto".into()),
            stores: vec!["auto".into()],
            hugepages: vec![Hugepages::Auto],
            offset: OneOrMany::One(0),
            gpu_memory: OneOrMany::default(),
            weights: None,
            fake_source: None,
            backend: "cpu".into(),
            independent: false,
        }
    }

    #[test]
    fn an_older_study_converts_on_read() {
        // Written before `smt` and most axes existed, with threads and
        // strategies as one text each, and the peak as a setting.
        let old: Study = serde_json::from_str(
            r#"{"threads":"1-4","strategy":"compact,spread","kernels":["triad"],"peak":"200","ntimes":5}"#,
        )
        .unwrap();
        let study = SweepStudy::read(&old, &defaults()).unwrap().unwrap();
        assert_eq!(study.threads, ["1-4"]);
        assert_eq!(study.strategy, ["compact", "spread"]);
        assert_eq!(
            (study.kernels.as_slice(), study.ntimes),
            (&[KernelId::Triad][..], 5)
        );
        assert_eq!((study.smt, study.repeat), (false, 1));
        // It reads back as itself, and differs from the defaults by name.
        let back = SweepStudy::read(&study.stored(), &defaults())
            .unwrap()
            .unwrap();
        assert_eq!(back, study);
        let names: Vec<String> = (study.differences(&defaults()).into_iter())
            .map(|d| d.setting)
            .collect();
        assert_eq!(names, ["kernels", "ntimes", "strategy", "threads"]);
        // A setting this membw does not know (a newer file's) is named,
        // and so is one that does not read; arguments are the parser's.
        let newer: Study = serde_json::from_str(r#"{"gpu_clock":"max"}"#).unwrap();
        let err = SweepStudy::read(&newer, &defaults()).unwrap().unwrap_err();
        assert!(
            err.contains("setting gpu_clock: not one this membw knows"),
            "{err}"
        );
        let sized = SweepStudy {
            size: Some(ArraySize::Elements(1000)),
            ..defaults()
        };
        let d = sized.differences(&defaults());
        assert_eq!(
            (d[0].here.as_str(), d[0].there.as_str()),
            ("1000 elements", "(none)")
        );
        let bad: Study = serde_json::from_str(r#"{"ntimes":"ten"}"#).unwrap();
        let err = SweepStudy::read(&bad, &defaults()).unwrap().unwrap_err();
        assert!(err.contains("ntimes"), "{err}");
        let args: Study = serde_json::from_str(r#"["--threads","2"]"#).unwrap();
        assert!(SweepStudy::read(&args, &defaults()).is_none());
        // Settings written only where set are known all the same.
        let set: Study = serde_json::from_str(r#"{"offset":[0,64],"no_pin":true}"#).unwrap();
        let read = SweepStudy::read(&set, &defaults()).unwrap().unwrap();
        assert_eq!(
            (read.offset, read.no_pin),
            (OneOrMany::Many(vec![0, 64]), true)
        );
    }
}
