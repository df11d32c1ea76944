//! A CPU's clock rate, to turn nanoseconds into cycles: cpufreq's maximum,
//! else the `cpu MHz` that /proc/cpuinfo shows for it (inside a VM, the
//! host's nominal clock).

use std::path::Path;

/// The clock of `cpu` in GHz under the tree at `root` (`/` for this
/// machine), when either source says.
pub fn max_ghz(root: &Path, cpu: usize) -> Option<f64> {
    let cpufreq = root.join(format!(
        "sys/devices/system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"
    ));
    let from_cpufreq = read_text(&cpufreq)
        .and_then(|t| t.trim().parse::<f64>().ok())
        .map(|khz| khz / 1e6);
    from_cpufreq
        .or_else(|| cpuinfo_mhz(&read_text(&root.join("proc/cpuinfo"))?, cpu))
        .filter(|g| g.is_finite() && *g > 0.0)
}

fn read_text(path: &Path) -> Option<String> {
    String::from_utf8(super::read_bounded(path)?).ok()
}

/// The `cpu MHz` of processor `cpu` in /proc/cpuinfo's text, as GHz.
fn cpuinfo_mhz(text: &str, cpu: usize) -> Option<f64> {
    let block = text.split("\n\n").find(|b| {
        b.lines().any(|l| {
            l.split_once(':')
                .is_some_and(|(k, v)| k.trim() == "processor" && v.trim().parse() == Ok(cpu))
        })
    })?;
    let mhz: f64 = block.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "cpu MHz").then(|| v.trim().parse().ok())?
    })?;
    Some(mhz / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpufreq_first_then_cpuinfo() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("proc")).unwrap();
        std::fs::write(
            root.join("proc/cpuinfo"),
            "processor\t: 0\ncpu MHz\t\t: 2600.000\n\nprocessor\t: 1\ncpu MHz\t\t: 3100.5\n",
        )
        .unwrap();
        assert_eq!(max_ghz(root, 1), Some(3.1005));
        assert_eq!(max_ghz(root, 7), None);
        let freq = root.join("sys/devices/system/cpu/cpu1/cpufreq");
        std::fs::create_dir_all(&freq).unwrap();
        std::fs::write(freq.join("cpuinfo_max_freq"), "3500000\n").unwrap();
        assert_eq!(max_ghz(root, 1), Some(3.5));
    }
}
