//! Flags that say how a command reports rather than what it measures:
//! where results go, in which form, how much is printed, and whether
//! anything is measured at all.

use crate::report::view::Format;
use clap::Args;

/// `--dry-run` (run, sweep, tune, baseline, check).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct DryRun {
    /// Show what would be measured at every point (threads and CPUs, arrays against the caches,
    /// stores, policy, reproduce lines) and measure nothing
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// `--quiet` (run, check).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct Quiet {
    /// Print less: run prints only the STREAM table; check prints nothing when healthy (NHC's
    /// convention), the reason still going to stderr
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// `--prom` (run, latency, check).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Prom {
    /// Also write the results in node_exporter's textfile format to FILE (atomically): run's rates,
    /// latency's idle and matrix latencies, check's verdict
    #[arg(long, value_name = "FILE", help_heading = "Results")]
    pub(crate) prom: Option<std::path::PathBuf>,
}

/// `--json` (every command with a JSON form: `--format json`, or `jsonl`
/// where JSON Lines is its only one).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct JsonFlag {
    /// Same as --format json (sweep, tune, report: --format jsonl)
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
}

/// `--markdown` (sweep, report, compare).
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct MarkdownFlag {
    /// Same as --format markdown
    #[arg(long, conflicts_with = "format")]
    pub(crate) markdown: bool,
}

/// `--outlier` (run across ranks, report of per-node files).
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct Outlier {
    /// Flag nodes below this share of the median node (run across ranks; report of per-node files
    /// and MPI runs)
    #[arg(long, default_value_t = crate::ranks::DEFAULT_OUTLIER, value_parser = crate::units::parse_share, help_heading = "Across ranks (MPI)")]
    pub(crate) outlier: f64,
}

/// `--resume` (sweep, latency).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Resume {
    /// Continue the study in FILE: skip the points already in it, append the rest
    #[arg(long, value_name = "FILE", help_heading = "Results")]
    pub(crate) resume: Option<std::path::PathBuf>,
}

/// `--format` (every command that prints a document). One definition: the
/// forms a command takes are its exporters' (`formats_for`), and
/// [`per_command`] sets them, what each form holds there, and whether
/// `--json` or `--markdown` stands for one.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct Form {
    /// Output format
    #[arg(long, default_value = "text", value_parser = crate::cli::values::FormatParser::any())]
    pub(crate) format: Format,
}

impl Default for Form {
    fn default() -> Self {
        Form {
            format: Format::Text,
        }
    }
}

/// `--output`/`-o` (run, exec, sweep, tune, latency, baseline): the file a
/// command writes its results to. What it holds, and whether the command
/// needs one, [`per_command`] says: a results file (JSON Lines) everywhere
/// but `baseline`, whose baseline (JSON) it is and which needs it.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Output {
    /// Write the results to FILE
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<std::path::PathBuf>,
}

/// What `--output` holds in each command that has it.
const OUTPUT_HELP: [(&str, &str); 6] = [
    (
        "run",
        "Also append this run to a results file as one JSON Lines record (created if missing), for report and compare",
    ),
    (
        "exec",
        "Append the record to this results file (JSON Lines), as run -o does: report and compare read it",
    ),
    (
        "sweep",
        "Results file (JSON Lines) [default: membw-sweep-<time>-<pid>.jsonl]",
    ),
    (
        "tune",
        "Also write every candidate's record to FILE (JSON Lines, for membw report)",
    ),
    (
        "latency",
        "Also append every point to this results file (JSON Lines), for report and compare",
    ),
    (
        "baseline",
        "The baseline file to write (JSON); an existing file is not replaced",
    ),
];

fn output_help(command: &str) -> &'static str {
    (OUTPUT_HELP.iter().find(|(c, _)| *c == command))
        .map_or("Write the results to FILE", |(_, h)| *h)
}

/// What `--format`'s help adds in a command, where a form holds something
/// particular there.
const FORM_HELP: [(&str, &str); 8] = [
    (
        "report",
        "markdown: tables and links to the SVG plots; html: one page, plots inline; jsonl: the records",
    ),
    ("baseline", "json: the baseline as written"),
    (
        "check",
        "json: the whole verdict; jsonl: the verdict on one line",
    ),
    ("topo", "json: the full model"),
    (
        "peers",
        "json: the matrix as one document, kind membw-peers; jsonl: the same on one line",
    ),
    (
        "sweep",
        "of the summary printed at the end; jsonl: every record of the file",
    ),
    ("tune", "jsonl: every candidate's record, best first"),
    (
        "exec",
        "json and jsonl: the record on one line, as results files hold it",
    ),
];

/// The shared flags' parts that differ by command: `--output`'s help, its
/// conflict with `--resume` and whether it is required; `--format`'s
/// values (those its exporters take), its help, and `--json`/`--markdown`
/// as its shorthands.
pub(crate) fn per_command(cmd: clap::Command) -> clap::Command {
    let cmd = cmd.mut_subcommands(per_command);
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let has = |id: &str| ids.iter().any(|a| a == id);
    let name = cmd.get_name().to_string();
    let cmd = if has("output") {
        let (help, resumes) = (output_help(&name), has("resume"));
        cmd.mut_arg("output", |mut arg| {
            arg = arg.help(help);
            // A study written afresh or one continued, not both.
            if resumes {
                arg = arg.conflicts_with("resume");
            }
            // A baseline is what the command makes, unless it only plans.
            match name == "baseline" {
                true => arg.required_unless_present_any(["dry_run", "from"]),
                false => arg,
            }
        })
    } else {
        cmd
    };
    if !has("format") {
        return cmd;
    }
    let shorthands: Vec<&'static str> = ["json", "markdown"]
        .into_iter()
        .filter(|id| has(id))
        .collect();
    let help = FORM_HELP.iter().find(|(c, _)| *c == name).map(|(_, h)| *h);
    cmd.mut_arg("format", |mut arg| {
        arg = arg.value_parser(crate::cli::values::format_parser(&name));
        if let Some(help) = help {
            arg = arg.help(format!("Output format ({help})"));
        }
        // `Equals("true")`, not `IsPresent`: a flag's own default (false)
        // counts as present once clap has filled it in, and mut_arg moves
        // --format after it.
        // `--json` is the command's JSON form: one document, or JSON
        // Lines where that is the only one it has.
        let forms = crate::report::export::formats_for(&name);
        let json = match forms.contains(&Format::Json) {
            true => "json",
            false => "jsonl",
        };
        for id in shorthands {
            arg = arg.default_value_if(id, "true", if id == "json" { json } else { id });
        }
        arg
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format_of(args: &[&str]) -> Result<Format, clap::Error> {
        let argv = std::iter::once("membw").chain(args.iter().copied());
        let matches = crate::cli::command().try_get_matches_from(argv)?;
        let (_, sub) = matches.subcommand().expect("a command");
        Ok(*sub
            .get_one::<Format>("format")
            .expect("--format has a default"))
    }

    #[test]
    fn each_command_takes_its_own_forms_and_its_shorthand() {
        assert_eq!(format_of(&["run"]).unwrap(), Format::Text);
        assert_eq!(format_of(&["run", "--json"]).unwrap(), Format::Json);
        assert_eq!(format_of(&["sweep"]).unwrap(), Format::Text);
        assert_eq!(
            format_of(&["sweep", "--markdown"]).unwrap(),
            Format::Markdown
        );
        assert_eq!(
            format_of(&["report", "f", "--format", "html"]).unwrap(),
            Format::Html
        );
        // Run has no page of its own; check's verdict no table.
        assert!(format_of(&["run", "--format", "html"]).is_err());
        assert!(format_of(&["check", "--format", "csv"]).is_err());
        let help = crate::cli::command()
            .find_subcommand_mut("check")
            .unwrap()
            .render_help()
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(help.contains("jsonl: the verdict on one line"), "{help}");
    }
}

/// `--unknown` (check): what a value the check could not read does to the
/// verdict.
#[derive(Args, Debug, Clone, Copy, Default)]
pub(crate) struct Unknowns {
    /// What an input the check cannot read or believe (an EDAC counter holding garbage, a DIMM's
    /// speed no memory has) does to the verdict: `report` says it beside a healthy verdict and in
    /// its one line; `fail` makes the node unhealthy (exit 1), for strict sites
    #[arg(long = "unknown", value_name = "report|fail", default_value = "report")]
    pub(crate) unknown: UnknownChoice,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default)]
pub(crate) enum UnknownChoice {
    #[default]
    Report,
    Fail,
}

impl Unknowns {
    pub(crate) fn policy(self) -> crate::health::verdict::UnknownPolicy {
        use crate::health::verdict::UnknownPolicy;
        match self.unknown {
            UnknownChoice::Report => UnknownPolicy::Report,
            UnknownChoice::Fail => UnknownPolicy::Fail,
        }
    }
}
