//! OpenMP places (`OMP_PLACES`) and binding (`OMP_PROC_BIND`), with
//! OpenMP's semantics.
//!
//! Grammar: a list of places, each `{res,...}` with intervals `res:len[:stride]`
//! and exclusions `!res`, optionally repeated as an interval
//! `{...}:len[:stride]`; `!{...}` removes a place listed before it; or an
//! abstract name `threads`, `cores`, `sockets`, `ll_caches`, `numa_domains`
//! with an optional count, `cores(32)`.
//!
//! The binding, which place each thread goes to, is [`bind`]'s.

mod bind;

pub use bind::{Bind, assign, resolve};

use super::domains::{Domains, Kind};
use crate::topology::Topology;
use crate::topology::cpulist::{ListError, MAX_ID};

/// A parse error at a 1-based column (the CPU-list parser's type).
pub type PlacesError = ListError;

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error<T>(&self, message: impl Into<String>) -> Result<T, PlacesError> {
        Err(PlacesError {
            column: self.pos + 1,
            message: message.into(),
        })
    }
    fn skip_spaces(&mut self) {
        while self.pos < self.text.len() && self.text[self.pos] == b' ' {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_spaces();
        self.text.get(self.pos).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), PlacesError> {
        if self.eat(c) {
            Ok(())
        } else {
            let found = self
                .peek()
                .map_or("the end".to_string(), |f| format!("'{}'", f as char));
            self.error(format!("expected '{}', found {found}", c as char))
        }
    }
    fn number(&mut self) -> Result<i64, PlacesError> {
        self.skip_spaces();
        let start = self.pos;
        if self.text.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        while self.pos < self.text.len() && self.text[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        let s = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("");
        match s.parse::<i64>() {
            Ok(v) if v.unsigned_abs() <= MAX_ID as u64 => Ok(v),
            Ok(_) => {
                self.pos = start;
                self.error(format!("{s} is too large"))
            }
            Err(_) => {
                self.pos = start;
                let found = self
                    .peek()
                    .map_or("the end".to_string(), |f| format!("'{}'", f as char));
                self.error(format!("expected a number, found {found}"))
            }
        }
    }
    /// `:len[:stride]` after a resource or a place; (1, 1) when absent.
    fn interval(&mut self) -> Result<(usize, i64), PlacesError> {
        if !self.eat(b':') {
            return Ok((1, 1));
        }
        let at = self.pos;
        let len = self.number()?;
        if len < 1 {
            self.pos = at;
            return self.error("an interval needs a length of at least 1");
        }
        let stride = if self.eat(b':') { self.number()? } else { 1 };
        Ok((len as usize, stride))
    }
    fn word(&mut self) -> String {
        self.skip_spaces();
        let start = self.pos;
        while self.pos < self.text.len()
            && (self.text[self.pos].is_ascii_alphabetic() || self.text[self.pos] == b'_')
        {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.text[start..self.pos]).into_owned()
    }
}

fn shifted(base: i64, step: i64, column: usize) -> Result<usize, PlacesError> {
    let v = base + step;
    if v < 0 || v > MAX_ID as i64 {
        return Err(PlacesError {
            column,
            message: format!("the interval reaches CPU {v}, outside 0..={MAX_ID}"),
        });
    }
    Ok(v as usize)
}

/// `{0:4,!2}` → the set of CPU ids.
fn parse_place(p: &mut Parser) -> Result<Vec<usize>, PlacesError> {
    p.expect(b'{')?;
    let mut ids: Vec<usize> = Vec::new();
    loop {
        let column = p.pos + 1;
        let exclude = p.eat(b'!');
        let first = p.number()?;
        let (len, stride) = p.interval()?;
        let members = (0..len as i64)
            .map(|k| shifted(first, k * stride, column))
            .collect::<Result<Vec<_>, _>>()?;
        if exclude {
            let gone: std::collections::HashSet<usize> = members.into_iter().collect();
            ids.retain(|c| !gone.contains(c));
        } else {
            ids.extend(members);
            if ids.len() > MAX_ID + 1 {
                ids.sort_unstable();
                ids.dedup();
            }
        }
        if !p.eat(b',') {
            break;
        }
    }
    p.expect(b'}')?;
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// An `OMP_PLACES` value: explicit CPU numbers, or an abstract name and
/// count that [`places`] expands over a topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Explicit(Vec<Vec<usize>>),
    Abstract { name: String, count: Option<usize> },
}

pub fn parse(text: &str) -> Result<Parsed, PlacesError> {
    let mut p = Parser {
        text: text.as_bytes(),
        pos: 0,
    };
    if p.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
        let name_at = p.pos;
        let name = p.word().to_ascii_lowercase();
        if !["threads", "cores", "sockets", "ll_caches", "numa_domains"].contains(&name.as_str()) {
            p.pos = name_at;
            return p.error(format!(
                "unknown place name '{name}' (threads, cores, sockets, ll_caches, numa_domains)"
            ));
        }
        let count = if p.eat(b'(') {
            let at = p.pos;
            let n = p.number()?;
            if n < 1 {
                p.pos = at;
                return p.error("the count must be at least 1");
            }
            p.expect(b')')?;
            Some(n as usize)
        } else {
            None
        };
        if p.peek().is_some() {
            return p.error("unexpected text after the place name");
        }
        return Ok(Parsed::Abstract { name, count });
    }
    let mut places: Vec<Vec<usize>> = Vec::new();
    loop {
        let column = p.pos + 1;
        let exclude = p.eat(b'!');
        let place = parse_place(&mut p)?;
        let (len, stride) = p.interval()?;
        // Every CPU id is at most MAX_ID: more places than ids cannot be distinct.
        if places.len() + len > MAX_ID + 1 || place.len() * len > (MAX_ID + 1) * 16 {
            return Err(PlacesError {
                column,
                message: format!(
                    "{len} places of {} CPUs each are more than any machine has",
                    place.len()
                ),
            });
        }
        let members = (0..len as i64)
            .map(|k| {
                place
                    .iter()
                    .map(|&c| shifted(c as i64, k * stride, column))
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        if exclude {
            let gone: std::collections::HashSet<Vec<usize>> = members.into_iter().collect();
            places.retain(|q| !gone.contains(q));
        } else {
            places.extend(members);
        }
        if !p.eat(b',') {
            break;
        }
    }
    if p.peek().is_some() {
        return p.error("unexpected text after the last place");
    }
    if places.iter().any(Vec::is_empty) {
        return Err(PlacesError {
            column: 1,
            message: "a place is empty".into(),
        });
    }
    Ok(Parsed::Explicit(places))
}

/// The places an abstract name stands for, within the allowed CPUs.
fn abstract_places(d: &Domains, name: &str) -> Vec<Vec<usize>> {
    let of_kind = |kind| -> Vec<Vec<usize>> {
        d.of_kind(kind)
            .iter()
            .map(|cores| d.cpus_of(cores))
            .collect()
    };
    let places: Vec<Vec<usize>> = match name {
        "threads" => d.allowed.ids().iter().map(|&c| vec![c]).collect(),
        "cores" => d.cores.iter().map(|c| c.cpus.clone()).collect(),
        "sockets" => of_kind(Kind::Socket),
        "ll_caches" => of_kind(Kind::Cache),
        _ => of_kind(Kind::Memory),
    };
    places.into_iter().filter(|p| !p.is_empty()).collect()
}

/// Expands parsed places over this topology.
pub fn places(topo: &Topology, d: &Domains, parsed: &Parsed) -> Result<Vec<Vec<usize>>, String> {
    match parsed {
        Parsed::Abstract { name, count } => {
            let all = abstract_places(d, name);
            match count {
                Some(n) if *n > all.len() => Err(format!(
                    "{name}({n}): only {} {name} are available",
                    all.len()
                )),
                Some(n) => Ok(all[..*n].to_vec()),
                None if all.is_empty() => Err(format!("no {name} within the allowed CPUs")),
                None => Ok(all),
            }
        }
        Parsed::Explicit(places) => {
            for &cpu in places.iter().flatten() {
                if topo.cpu(cpu).is_none() {
                    return Err(format!(
                        "CPU {cpu} does not exist or is offline (online: {})",
                        topo.online_cpus()
                    ));
                }
                if !d.allowed.contains(cpu) {
                    return Err(format!(
                        "CPU {cpu} is outside the allowed set {}",
                        d.allowed
                    ));
                }
            }
            Ok(places.clone())
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn explicit(text: &str) -> Vec<Vec<usize>> {
        match parse(text).unwrap() {
            Parsed::Explicit(p) => p,
            Parsed::Abstract { .. } => panic!("explicit expected"),
        }
    }

    #[test]
    fn intervals_follow_the_openmp_spec() {
        // Examples from the OpenMP specification's OMP_PLACES section.
        assert_eq!(
            explicit("{0,1,2,3},{4,5,6,7},{8,9,10,11},{12,13,14,15}"),
            explicit("{0:4},{4:4},{8:4},{12:4}")
        );
        assert_eq!(explicit("{0:4},{4:4},{8:4},{12:4}"), explicit("{0:4}:4:4"));
        assert_eq!(
            explicit("{0:1}:8:2"),
            (0..8).map(|i| vec![2 * i]).collect::<Vec<_>>()
        );
        assert_eq!(
            explicit("{0}:4:1"),
            vec![vec![0], vec![1], vec![2], vec![3]]
        );
        assert_eq!(explicit("{0:4:2}"), vec![vec![0, 2, 4, 6]]);
        assert_eq!(explicit("{0,1},{2,3}"), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(explicit("{3}:3:-1"), vec![vec![3], vec![2], vec![1]]);
        assert_eq!(explicit(" { 0 : 2 } , { 4 } "), vec![vec![0, 1], vec![4]]);
    }

    #[test]
    fn exclusions_remove_resources_and_places() {
        assert_eq!(explicit("{0:8,!3}"), vec![vec![0, 1, 2, 4, 5, 6, 7]]);
        assert_eq!(explicit("{0}:4,!{2}"), vec![vec![0], vec![1], vec![3]]);
    }

    #[test]
    fn abstract_names_parse_with_counts() {
        assert!(
            matches!(parse("cores").unwrap(), Parsed::Abstract { name, count: None } if name == "cores")
        );
        assert!(matches!(
            parse("sockets(2)").unwrap(),
            Parsed::Abstract { count: Some(2), .. }
        ));
    }

    #[test]
    fn errors_point_at_the_column() {
        let e = |t: &str| parse(t).err().unwrap();
        assert_eq!(e("{0:4}:8:x").column, 9);
        assert_eq!(e("{0,1").column, 5);
        assert!(e("{0,1").message.contains("expected '}'"));
        assert_eq!(e("{0}:0").column, 5);
        assert_eq!(e("corez").column, 1);
        assert!(e("cores(0)").message.contains("at least 1"));
        assert!(e("{0},").message.contains("expected '{'"));
        assert!(e("{0}}").message.contains("unexpected"));
        assert!(e("{0}:2:-5").message.contains("outside"));
        assert!(e("{}").message.contains("number"));
        assert!(e("{0:3,!0:3}").message.contains("empty"));
    }

    proptest::proptest! {
        #[test]
        fn the_parser_never_panics(s in "[{}0-9:,! a-z()-]{0,24}") {
            let _ = parse(&s);
        }
    }
}
