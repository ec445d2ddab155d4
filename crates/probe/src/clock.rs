//! The nominal CPU clock, for `cycles_per_io` and `cycles_per_byte`.
//! Read from a source that states it; never guessed from a current reading.

use std::path::Path;

/// Nominal MHz and where it came from, or None when no source states it.
pub fn nominal_mhz() -> Option<(f64, String)> {
    nominal_mhz_from(Path::new("/sys/devices/system/cpu/cpu0/cpufreq"), |p| {
        std::fs::read_to_string(p).ok()
    })
}

/// `read` fetches a file's text; the sources tried, in order:
/// 1. cpufreq `base_frequency` (intel_pstate: the nominal, non-turbo clock);
/// 2. the `@ 2.60GHz` rated clock in /proc/cpuinfo's model name;
/// 3. cpufreq `cpuinfo_max_freq` when there is no base_frequency;
/// 4. /proc/cpuinfo's `cpu MHz` only when the value cannot be a live reading:
///    no cpufreq driver, a constant TSC, and no APERF/MPERF (so the kernel
///    reports its calibrated nominal clock, as on most virtual machines).
pub fn nominal_mhz_from(
    cpufreq: &Path,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<(f64, String)> {
    let khz = |name: &str| {
        read(&cpufreq.join(name))
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|v| *v > 0.0)
    };
    if let Some(k) = khz("base_frequency") {
        return Some((k / 1000.0, "cpufreq base_frequency".into()));
    }
    let cpuinfo = read(Path::new("/proc/cpuinfo")).unwrap_or_default();
    let first = |key: &str| cpuinfo_field(&cpuinfo, key);
    if let Some(model) = first("model name") {
        if let Some(mhz) = rated_clock_mhz(&model) {
            return Some((mhz, "cpu model name".into()));
        }
    }
    let has_cpufreq = read(&cpufreq.join("scaling_driver")).is_some();
    if let Some(k) = khz("cpuinfo_max_freq") {
        return Some((k / 1000.0, "cpufreq cpuinfo_max_freq".into()));
    }
    let flags = first("flags").unwrap_or_default();
    let flag = |f: &str| flags.split_ascii_whitespace().any(|x| x == f);
    if has_cpufreq || !flag("constant_tsc") || flag("aperfmperf") {
        return None;
    }
    let mhz = first("cpu MHz")?.parse::<f64>().ok().filter(|v| *v > 0.0)?;
    Some((
        mhz,
        "/proc/cpuinfo cpu MHz (constant TSC, no frequency scaling)".into(),
    ))
}

/// The value of the first `key : value` line of /proc/cpuinfo text.
pub(crate) fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// `Intel(R) Xeon(R) Gold 6126 CPU @ 2.60GHz` -> 2600.
fn rated_clock_mhz(model: &str) -> Option<f64> {
    let t = model.rsplit_once('@')?.1.trim();
    let (num, mult) = match t.strip_suffix("GHz") {
        Some(n) => (n, 1000.0),
        None => (t.strip_suffix("MHz")?, 1.0),
    };
    num.trim().parse::<f64>().ok().map(|v| v * mult)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::PathBuf;

    fn fake(files: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let m: HashMap<PathBuf, String> = files
            .iter()
            .map(|(k, v)| (PathBuf::from(k), v.to_string()))
            .collect();
        move |p: &Path| m.get(p).cloned()
    }

    const CF: &str = "/cf";

    /// Each source in its turn: base_frequency before all; the model
    /// name's rated clock; cpu MHz only when it is not a live reading (a
    /// VM's constant TSC without APERF/MPERF or a cpufreq driver).
    #[test]
    fn nominal_clock_by_source() {
        let vm = "model name : Intel(R) Xeon(R) Processor\ncpu MHz : 2600.000\nflags : fpu constant_tsc nonstop_tsc\n";
        let bare = "model name : Some CPU\ncpu MHz : 1796.2\nflags : fpu constant_tsc aperfmperf\n";
        let cases: [(&[_], _); 5] = [
            (
                &[
                    ("/cf/base_frequency", "2100000\n"),
                    ("/cf/cpuinfo_max_freq", "3900000\n"),
                    ("/proc/cpuinfo", "model name : X @ 2.00GHz\n"),
                ],
                Some(2100.0),
            ),
            (
                &[("/proc/cpuinfo", "model name\t: Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz\ncpu MHz : 1200.0\nflags : fpu constant_tsc aperfmperf\n")],
                Some(2400.0),
            ),
            (&[("/proc/cpuinfo", vm)], Some(2600.0)),
            (&[("/proc/cpuinfo", bare)], None),
            (
                &[
                    ("/proc/cpuinfo", vm),
                    ("/cf/scaling_driver", "acpi-cpufreq\n"),
                ],
                None,
            ),
        ];
        for (files, want) in cases {
            let got = nominal_mhz_from(Path::new(CF), fake(files));
            assert_eq!(got.map(|x| x.0), want, "{files:?}");
        }
    }
}
