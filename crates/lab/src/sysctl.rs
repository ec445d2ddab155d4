//! Per-host sysctls, `[host.sysctl]`: their form and `--set`
//! (`def.rs` calls these), the kernel's say on each key and value before
//! anything is created, and the values in force for disclosure.

use crate::def::{check_mem, LabDef, TcpSettings};
use crate::{netns_path, sys, HostState, LabError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest sysctl value accepted (the kernel's vectors are a few numbers).
pub const MAX_SYSCTL_VALUE: usize = 256;

/// A sysctl's value as written: `"0"`, `0` or `"4096 87380 16777216"`
/// (the kernel takes text; a number is its decimal form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum SysctlValue {
    Int(i64),
    Text(String),
}

impl SysctlValue {
    pub(crate) fn text(&self) -> String {
        match self {
            SysctlValue::Int(i) => i.to_string(),
            SysctlValue::Text(s) => s.clone(),
        }
    }
}

/// The form of a `[host.sysctl]` entry: a `net.*` name of the kernel's
/// characters and a one-line value. The name's being per namespace and
/// the value's being taken are the kernel's to say (at `up`, in a
/// throwaway namespace, before anything is created).
pub(crate) fn check_form(host: &str, key: &str, v: &str, tcp: &TcpSettings) -> Result<(), String> {
    let at = format!("host '{host}' sysctl {key}");
    let Some(rest) = key.strip_prefix("net.") else {
        return Err(format!(
            "{at}: only net.* sysctls can be set per host (a lab host is a network namespace; other sysctls are the whole machine's)"
        ));
    };
    let part_ok = |p: &str| {
        !p.is_empty() && (p.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    if key.len() > 128 || !rest.split('.').all(part_ok) {
        return Err(format!(
            "{at}: not a sysctl name (dot-separated parts of a-z, 0-9, '_' and '-', e.g. net.ipv4.tcp_sack)"
        ));
    }
    if v.trim().is_empty() || v.len() > MAX_SYSCTL_VALUE || v.contains(['\n', '\r', '\0']) {
        return Err(format!(
            "{at}: value '{}' must be one line of 1 to {MAX_SYSCTL_VALUE} characters",
            v.escape_debug()
        ));
    }
    // One setting, one place: the host's TCP keys already write these.
    for (k, _) in tcp.given() {
        let full = format!("net.ipv4.tcp_{}", k.strip_prefix("tcp_").unwrap_or(k));
        if full == key {
            return Err(format!(
                "{at}: also set as {k} (lab-wide or the host's); set it in one place"
            ));
        }
    }
    // The kernel takes a partial vector ("1 2" sets two of three): refuse it here.
    if let Some(k @ ("tcp_rmem" | "tcp_wmem")) = rest.strip_prefix("ipv4.") {
        check_mem(k, v).map_err(|e| format!("host '{host}' sysctl: {e}"))?;
    }
    Ok(())
}

/// `--set sysctl.HOST.KEY=VALUE`: host names have no dot, so the first
/// part is the host and the rest the sysctl's name.
pub(crate) fn set(t: &mut toml::Table, hk: &str, v: toml::Value) -> Result<(), String> {
    let usage = || {
        format!("--set sysctl.{hk}: use sysctl.HOST.KEY=VALUE (e.g. sysctl.a.net.ipv4.tcp_sack=0)")
    };
    let (host, key) = hk.split_once('.').ok_or_else(usage)?;
    let Some(toml::Value::Array(hosts)) = t.get("host") else {
        return Err(usage());
    };
    let names: Vec<&str> = hosts
        .iter()
        .filter_map(|h| h.get("name")?.as_str())
        .collect();
    let names = names.join(", ");
    let h = crate::def::host_table(t, host).ok_or_else(|| {
        format!("--set sysctl.{hk}: the lab has no host '{host}' (hosts: {names})")
    })?;
    crate::def::set_in(h, "sysctl", key, v)
        .ok_or_else(|| format!("host '{host}': sysctl is not a table"))
}

/// Each host's `[host.sysctl]` tried in a throwaway namespace: keys the
/// kernel keeps global are refused by name (a lab must not change the
/// machine), as are unknown keys and values the kernel does not take.
pub(crate) fn check_kernel(def: &LabDef) -> Result<(), LabError> {
    let pairs: Vec<(&str, &str, &str)> = (def.hosts.iter())
        .flat_map(|h| (h.sysctl.iter()).map(|(k, v)| (h.name.as_str(), k.as_str(), v.as_str())))
        .collect();
    if pairs.is_empty() {
        return Ok(());
    }
    let kv: Vec<(&str, &str)> = pairs.iter().map(|&(_, k, v)| (k, v)).collect();
    // Each global key with the hosts that ask for it.
    let mut global: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut errors = Vec::new();
    for ((host, k, v), r) in pairs.iter().zip(sys::probe_sysctls(&kv)?) {
        match r {
            sys::SysctlProbe::Taken => {}
            sys::SysctlProbe::Global => global.entry(k).or_default().push(host),
            sys::SysctlProbe::Unknown => errors.push(format!(
                "host '{host}': sysctl {k}: no such sysctl in this kernel"
            )),
            sys::SysctlProbe::Refused(e) => errors.push(format!(
                "host '{host}': sysctl {k} = \"{v}\": the kernel refuses it ({e})"
            )),
            sys::SysctlProbe::Kept(got) => errors.push(format!(
                "host '{host}': sysctl {k} = \"{v}\": the kernel keeps \"{got}\" instead"
            )),
        }
    }
    if !global.is_empty() {
        let verb = if global.len() > 1 { "are" } else { "is" };
        errors.insert(0, format!(
            "{} {} the whole machine's on this kernel, not per network namespace: a lab host cannot have its own (set it on the machine with sysctl -w, where it is disclosed as the host's tcp)",
            (global.iter())
                .map(|(k, hs)| format!("{k} (host {})", hs.join(", ")))
                .collect::<Vec<_>>()
                .join(", "),
            verb
        ));
    }
    match errors.is_empty() {
        true => Ok(()),
        false => Err(LabError::Usage(format!(
            "{}: {}",
            def.source,
            errors.join("; ")
        ))),
    }
}

/// The sysctls in force in a host's namespace now, for disclosure: the
/// ones every run discloses for the machine (`tcp`, by short name, as
/// the host's `tcp`) and, by full name, each its lab set.
/// A global sysctl (absent in a namespace, e.g. tcp_mem) is the machine's
/// value, read outside.
pub fn host_in_force(host: &HostState) -> Result<serde_json::Value, LabError> {
    let machine = iotoll_probe::sysinfo::tcp_sysctls();
    sys::in_netns(&netns_path(host)?, || {
        let mut tcp = iotoll_probe::sysinfo::tcp_sysctls();
        for (k, v) in tcp.iter_mut().filter(|(_, v)| v.is_none()) {
            *v = machine.get(k).cloned().flatten();
        }
        let set: BTreeMap<&String, Option<String>> = (host.sysctl.keys())
            .map(|k| (k, sys::sysctl_get(k)))
            .collect();
        Ok(serde_json::json!({ "tcp": tcp, "sysctl": set }))
    })
}

#[cfg(test)]
mod tests {
    use crate::def::{parse, tests::p};

    #[test]
    fn sysctl_table_is_checked_for_form_and_set_per_host() {
        let text = "name = \"x\"\n[[host]]\nname = \"a\"\n[host.sysctl]\n\"net.ipv4.tcp_sack\" = 0\n\"net.core.optmem_max\" = \"65536\"\n[[host]]\nname = \"b\"\n";
        let d = p(text, &[]).unwrap();
        assert_eq!(d.hosts[0].sysctl["net.ipv4.tcp_sack"], "0");
        assert_eq!(d.hosts[0].sysctl["net.core.optmem_max"], "65536");
        assert!(d.hosts[1].sysctl.is_empty());
        let d = p(
            text,
            &[
                "sysctl.b.net.ipv4.tcp_timestamps=0",
                "sysctl.a.net.ipv4.tcp_sack=1",
            ],
        )
        .unwrap();
        assert_eq!(d.hosts[1].sysctl["net.ipv4.tcp_timestamps"], "0");
        assert_eq!(d.hosts[0].sysctl["net.ipv4.tcp_sack"], "1");
        assert_eq!(d.hosts[0].sysctl.len(), 2);
        let again = parse(&d.to_toml(None, None), "t.toml", &[]).unwrap();
        assert_eq!(again.hosts, d.hosts);
        let bad_sets = [
            ("sysctl.c.net.ipv4.tcp_sack=0", "no host 'c' (hosts: a, b)"),
            ("sysctl.a=0", "sysctl.HOST.KEY"),
            ("sysctl.a.kernel.pid_max=9", "only net.* sysctls"),
            ("sysctl.a.net.ipv4/../x=1", "not a sysctl name"),
            ("sysctl.a.net..x=1", "not a sysctl name"),
            ("sysctl.a.net.ipv4.tcp_rmem=1 2", "tcp_rmem '1 2'"),
        ];
        for (set, needle) in bad_sets {
            let e = p(text, &[set]).unwrap_err();
            assert!(e.is_usage() && e.to_string().contains(needle), "{set}: {e}");
        }
        let clash = "name = \"x\"\ntcp_wmem = \"4096 4096 4096\"\n[[host]]\nname = \"a\"\n[host.sysctl]\n\"net.ipv4.tcp_wmem\" = \"4096 8192 8192\"\n";
        let e = p(clash, &[]).unwrap_err().to_string();
        assert!(e.contains("also set as tcp_wmem"), "{e}");
        let e = p(
            "name = \"x\"\n[[host]]\nname = \"a\"\n[host.sysctl]\n\"net.ipv4.tcp_sack\" = \"\"\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("one line"), "{e}");
    }
}
