//! Reading the output of other bandwidth programs: STREAM's table
//! (`stream.c` in any build), BabelStream's text and `--csv` output, and
//! likwid-bench's `MByte/s:` line. Each gives rates per kernel in MB/s
//! (10^6 B/s), as the program counted them, plus what it says about its
//! arrays and validation.

use crate::kernels::KernelId;
use std::fmt;

/// Which program's output was understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgramFormat {
    Stream,
    Babelstream,
    LikwidBench,
}

impl ProgramFormat {
    /// The name in records: `stream`, `babelstream`, `likwid-bench`.
    pub fn name(self) -> &'static str {
        match self {
            ProgramFormat::Stream => "stream",
            ProgramFormat::Babelstream => "babelstream",
            ProgramFormat::LikwidBench => "likwid-bench",
        }
    }
}

impl fmt::Display for ProgramFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProgramFormat::Stream => "STREAM",
            ProgramFormat::Babelstream => "BabelStream",
            ProgramFormat::LikwidBench => "likwid-bench",
        })
    }
}

/// One kernel's result as the program printed it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForeignRate {
    /// The program's own name for it (`Triad`, `Mul`, `copy_avx512`).
    pub name: String,
    /// The membw kernel it corresponds to, when one does.
    pub kernel: Option<KernelId>,
    /// Best rate, MB/s (10^6 B/s).
    pub best_mb_s: f64,
    pub min_time_s: Option<f64>,
    pub avg_time_s: Option<f64>,
    pub max_time_s: Option<f64>,
}

/// What a program's output says.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ForeignOutput {
    pub format: ProgramFormat,
    pub rates: Vec<ForeignRate>,
    pub array_elements: Option<u64>,
    pub element_bytes: Option<u64>,
    pub ntimes: Option<u64>,
    pub threads: Option<u64>,
    /// `Some(false)` when the program reported a failed validation.
    pub validated: Option<bool>,
}

impl ForeignOutput {
    fn empty(format: ProgramFormat, validated: Option<bool>) -> ForeignOutput {
        ForeignOutput {
            format,
            rates: Vec::new(),
            array_elements: None,
            element_bytes: None,
            ntimes: None,
            threads: None,
            validated,
        }
    }
}

/// A BabelStream row: its name, rate in MB/s, and min, max, average times.
fn babel_rate(name: &str, mb_s: f64, [min, max, avg]: [f64; 3]) -> ForeignRate {
    ForeignRate {
        name: name.to_string(),
        kernel: stream_kernel(name),
        best_mb_s: mb_s,
        min_time_s: Some(min),
        max_time_s: Some(max),
        avg_time_s: Some(avg),
    }
}

/// Why the output was not understood: the formats tried and the first lines.
#[derive(Debug, Clone, PartialEq)]
pub struct NotUnderstood {
    pub first_lines: Vec<String>,
}

impl fmt::Display for NotUnderstood {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "printed nothing membw understands (it reads STREAM's table, BabelStream's text or --csv output, and likwid-bench's MByte/s line); its output began: {}",
            if self.first_lines.is_empty() {
                "(nothing)".to_string()
            } else {
                self.first_lines.join(" | ")
            }
        )
    }
}

/// Parses a program's standard output.
pub fn parse(output: &str) -> Result<ForeignOutput, NotUnderstood> {
    stream(output)
        .or_else(|| babelstream_csv(output))
        .or_else(|| babelstream_text(output))
        .or_else(|| likwid(output))
        .ok_or_else(|| NotUnderstood {
            first_lines: output
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(3)
                .map(|l| l.chars().take(80).collect())
                .collect(),
        })
}

fn number_after(line: &str, prefix: &str) -> Option<u64> {
    line.trim()
        .strip_prefix(prefix)?
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn stream_kernel(label: &str) -> Option<KernelId> {
    match label {
        "Copy" => Some(KernelId::Copy),
        "Scale" | "Mul" => Some(KernelId::Scale),
        "Add" => Some(KernelId::Add),
        "Triad" => Some(KernelId::Triad),
        "Dot" => Some(KernelId::Dot),
        "Nstream" => Some(KernelId::Nstream),
        _ => None,
    }
}

/// STREAM: `Copy:  12345.6  0.012  0.011  0.013` rows (best rate, avg,
/// min, max time), and the header lines around them.
fn stream(output: &str) -> Option<ForeignOutput> {
    let mut out = ForeignOutput::empty(ProgramFormat::Stream, None);
    for line in output.lines() {
        let t = line.trim();
        if let Some(n) = number_after(t, "Array size =") {
            out.array_elements = Some(n);
        } else if let Some(n) = number_after(t, "This system uses") {
            out.element_bytes = Some(n);
        } else if let Some(n) = number_after(t, "Each kernel will be executed") {
            out.ntimes = Some(n);
        } else if let Some(n) = number_after(t, "Number of Threads counted =") {
            out.threads = Some(n);
        } else if t.starts_with("Solution Validates") {
            out.validated = Some(true);
        } else if t.starts_with("Failed Validation") || t.contains("Validation failed") {
            out.validated = Some(false);
        } else if let Some((label, rest)) = t.split_once(':')
            && let Some(kernel) = stream_kernel(label)
        {
            let fields: Vec<f64> = rest
                .split_whitespace()
                .map_while(|f| f.parse().ok())
                .collect();
            // STREAM prints rate, avg, min, max; trimmed builds only the rate.
            if let Some(&rate) = fields.first() {
                out.rates.push(ForeignRate {
                    name: label.to_string(),
                    kernel: Some(kernel),
                    best_mb_s: rate,
                    avg_time_s: fields.get(1).copied(),
                    min_time_s: fields.get(2).copied(),
                    max_time_s: fields.get(3).copied(),
                });
            }
        }
    }
    (!out.rates.is_empty()).then_some(out)
}

/// BabelStream's rate unit in MB (10^6 B): MB, GB, TB, MiB, GiB, TiB, or
/// the older `MBytes`/`MiBytes`.
fn babel_unit(text: &str) -> Option<f64> {
    let t = text.to_ascii_lowercase();
    let t = t.trim_end_matches("/sec").trim_end_matches("/s");
    let t = t.trim_start_matches("max_").trim_end_matches("_per_sec");
    Some(match t {
        "mb" | "mbytes" => 1.0,
        "gb" | "gbytes" => 1e3,
        "tb" => 1e6,
        "mib" | "mibytes" => 1.048_576,
        "gib" => 1_073.741_824,
        "tib" => 1_099_511.627_776,
        _ => return None,
    })
}

/// `function,num_times,n_elements,sizeof,max_MB_per_sec,min_runtime,max_runtime,avg_runtime`
fn babelstream_csv(output: &str) -> Option<ForeignOutput> {
    let mut lines = output.lines().skip_while(|l| !l.starts_with("function,"));
    let header: Vec<&str> = lines.next()?.split(',').collect();
    let scale = babel_unit(header.get(4)?)?;
    let mut out = ForeignOutput::empty(
        ProgramFormat::Babelstream,
        Some(!output.contains("Validation failed")),
    );
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 8 {
            continue;
        }
        let num = |i: usize| f[i].trim().parse::<f64>().ok();
        let (Some(rate), Some(min), Some(max), Some(avg)) = (num(4), num(5), num(6), num(7)) else {
            continue;
        };
        out.ntimes = f[1].trim().parse().ok().or(out.ntimes);
        out.array_elements = f[2].trim().parse().ok().or(out.array_elements);
        out.element_bytes = f[3].trim().parse().ok().or(out.element_bytes);
        out.rates
            .push(babel_rate(f[0], rate * scale, [min, max, avg]));
    }
    (!out.rates.is_empty()).then_some(out)
}

/// `Function    MB/s        Min (sec)   Max         Average` then rows.
fn babelstream_text(output: &str) -> Option<ForeignOutput> {
    let mut out = ForeignOutput::empty(
        ProgramFormat::Babelstream,
        Some(!output.contains("Validation failed")),
    );
    let mut scale = None;
    for line in output.lines() {
        let t = line.trim();
        let words: Vec<&str> = t.split_whitespace().collect();
        if let Some(n) = number_after(t, "Number of elements:") {
            out.array_elements = Some(n);
        } else if let Some(n) = number_after(t, "Running kernels") {
            out.ntimes = Some(n);
        } else if t.starts_with("Precision:") {
            out.element_bytes = Some(if t.contains("float") { 4 } else { 8 });
        } else if words.first() == Some(&"Function") && words.len() >= 2 {
            scale = babel_unit(words[1]);
        } else if let (Some(s), [name, rate, min, max, avg]) = (scale, words.as_slice()) {
            let num = |w: &str| w.parse::<f64>().ok();
            if let (Some(r), Some(mn), Some(mx), Some(av)) =
                (num(rate), num(min), num(max), num(avg))
            {
                out.rates.push(babel_rate(name, r * s, [mn, mx, av]));
            }
        }
    }
    (!out.rates.is_empty()).then_some(out)
}

/// likwid-bench: the test from `Test:` and the rate from `MByte/s:`.
fn likwid(output: &str) -> Option<ForeignOutput> {
    let test = output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Test:"))
        .map(|t| t.trim().to_string())?;
    let rate: f64 = output
        .lines()
        .find_map(|l| l.trim().strip_prefix("MByte/s:"))?
        .trim()
        .parse()
        .ok()?;
    let kernel = match test.split('_').next().unwrap_or("") {
        // likwid's `stream` is STREAM's triad; its `triad` has four arrays.
        "copy" => Some(KernelId::Copy),
        "stream" => Some(KernelId::Triad),
        "triad" => Some(KernelId::Striad),
        "daxpy" => Some(KernelId::Daxpy),
        "ddot" => Some(KernelId::Dot),
        "load" | "sum" => Some(KernelId::Read),
        "store" => Some(KernelId::Write),
        _ => None,
    };
    Some(ForeignOutput {
        format: ProgramFormat::LikwidBench,
        rates: vec![ForeignRate {
            name: test,
            kernel,
            best_mb_s: rate,
            min_time_s: None,
            avg_time_s: None,
            max_time_s: None,
        }],
        array_elements: None,
        element_bytes: None,
        ntimes: None,
        threads: output
            .lines()
            .find_map(|l| number_after(l, "Number of threads:")),
        validated: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "-------------------------------------------------------------
STREAM version $Revision: 5.10 $
-------------------------------------------------------------
This system uses 8 bytes per array element.
-------------------------------------------------------------
Array size = 80000000 (elements), Offset = 0 (elements)
Memory per array = 610.4 MiB (= 0.6 GiB).
Each kernel will be executed 10 times.
Number of Threads requested = 2
Number of Threads counted = 2
-------------------------------------------------------------
Function    Best Rate MB/s  Avg time     Min time     Max time
Copy:           33871.5     0.038543     0.037790     0.039632
Scale:          27012.9     0.048070     0.047383     0.049231
Add:            29810.1     0.065282     0.064407     0.066812
Triad:          29754.6     0.065355     0.064528     0.066437
-------------------------------------------------------------
Solution Validates: avg error less than 1.000000e-13 on all three arrays
-------------------------------------------------------------
";

    #[test]
    fn streams_table_and_header() {
        let o = parse(STREAM).unwrap();
        assert_eq!(o.format, ProgramFormat::Stream);
        assert_eq!(o.rates.len(), 4);
        assert_eq!(o.rates[3].kernel, Some(KernelId::Triad));
        assert_eq!(o.rates[3].best_mb_s, 29754.6);
        assert_eq!(o.rates[0].min_time_s, Some(0.037790));
        assert_eq!(
            (
                o.array_elements, o.element_bytes, o.ntimes, o.threads, o.validated
            ),
            (Some(80_000_000), Some(8), Some(10), Some(2), Some(true))
        );
        let failed = STREAM.replace(
            "Solution Validates: avg error less than 1.000000e-13 on all three arrays",
            "Failed Validation on array a[], AvgRelAbsErr > epsilon (1.000000e-13)",
        );
        assert_eq!(parse(&failed).unwrap().validated, Some(false));
    }

    #[test]
    fn babelstream_text_and_csv() {
        let text = "BabelStream
Version: 5.0
Implementation: OpenMP
Running kernels 100 times
Precision: double
Array size: 268.4 MB
Total size: 805.3 MB
Function    MB/s        Min (sec)   Max         Average
Copy        40123.456   0.01338     0.01512     0.01401
Mul         39012.100   0.01376     0.01498     0.01420
Add         42011.000   0.01917     0.02100     0.01990
Triad       42100.500   0.01913     0.02050     0.01985
Dot         45000.000   0.01193     0.01300     0.01240
";
        let o = parse(text).unwrap();
        assert_eq!(o.format, ProgramFormat::Babelstream);
        assert_eq!(o.rates.len(), 5);
        assert_eq!(o.rates[1].kernel, Some(KernelId::Scale));
        assert_eq!(o.rates[4].kernel, Some(KernelId::Dot));
        assert_eq!((o.ntimes, o.element_bytes), (Some(100), Some(8)));
        let csv = "function,num_times,n_elements,sizeof,max_GB_per_sec,min_runtime,max_runtime,avg_runtime
Copy,100,33554432,8,40.123,0.0134,0.0151,0.0140
Triad,100,33554432,8,42.1005,0.0191,0.0205,0.0199
";
        let o = parse(csv).unwrap();
        assert_eq!(o.rates.len(), 2);
        assert!((o.rates[1].best_mb_s - 42100.5).abs() < 1e-6);
        assert_eq!(o.array_elements, Some(33_554_432));
        // The older unit spelling.
        let old = csv.replace("max_GB_per_sec", "max_mbytes_per_sec");
        assert!((parse(&old).unwrap().rates[0].best_mb_s - 40.123).abs() < 1e-9);
    }

    #[test]
    fn likwid_bench_and_unknown_output() {
        let out = "--------------------------------------------------------------------------------
LIKWID MICRO BENCHMARK
Test: stream_mem_avx512
--------------------------------------------------------------------------------
Number of threads:	2
MByte/s:		31234.56
";
        let o = parse(out).unwrap();
        assert_eq!(o.format, ProgramFormat::LikwidBench);
        assert_eq!(o.rates[0].kernel, Some(KernelId::Triad));
        assert_eq!(o.rates[0].best_mb_s, 31234.56);
        assert_eq!(o.threads, Some(2));
        // likwid's triad is a = b + c·d: membw's striad.
        let four = parse(&out.replace("stream_mem", "triad_mem")).unwrap();
        assert_eq!(four.rates[0].kernel, Some(KernelId::Striad));
        let err = parse("hello\nworld\n").unwrap_err().to_string();
        assert!(err.contains("its output began: hello | world"), "{err}");
        assert!(parse("").unwrap_err().to_string().contains("(nothing)"));
    }
}
