//! Value parsers for flags several commands share: page sizes, kernels,
//! output formats. Each error names the bad value and the choices.

use crate::kernels::KernelId;
use crate::memory::Hugepages;

/// `--hugepages` values: `auto`, `thp`, `never`, `2M`, `1G`.
pub(crate) fn parse_hugepages(text: &str) -> std::result::Result<Hugepages, String> {
    Hugepages::parse(text)
        .ok_or_else(|| format!("unknown page size '{text}' (auto, thp, never, 2M, 1G)"))
}

pub(crate) fn parse_kernel(name: &str) -> std::result::Result<KernelId, String> {
    KernelId::parse(name).ok_or_else(|| {
        let names: Vec<&str> = crate::kernels::KERNELS.iter().map(|k| k.name).collect();
        format!("unknown kernel '{name}' (choose from {})", names.join(", "))
    })
}

/// `--kernels`: kernel and group names, comma-separated; each kernel once,
/// in the kernel table's order (the order the plan runs them in, so that
/// records of `copy,triad` and `triad,copy` have one key).
#[derive(Debug, Clone)]
pub(crate) struct KernelList(pub(crate) Vec<KernelId>);

pub(crate) fn parse_kernel_list(text: &str) -> std::result::Result<KernelList, String> {
    let mut kernels = Vec::new();
    for name in text.split(',') {
        kernels.extend(crate::kernels::parse_selection(name).ok_or_else(|| {
            format!(
                "unknown kernel or group '{}' (choose from {})",
                name.trim(),
                crate::kernels::selection_names()
            )
        })?);
    }
    kernels.sort();
    kernels.dedup();
    Ok(KernelList(kernels))
}

/// `--format`, the same for every command that prints results: one of the
/// registered exporters (text, json, csv, markdown).
pub(crate) fn format_parser() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(crate::report::export::NAMES)
}
